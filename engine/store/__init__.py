"""The shared store every layer stands on: the SQLite database and its migrations, the
durable job queue, the data dir's lock, the background loops' ticker.
"""
