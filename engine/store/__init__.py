"""The shared store every layer stands on: settings, the SQLite database and its
migrations, the durable job queue, the one error vocabulary, timestamps.
"""
