"""The canonical pps engine: settings, the SQLite store, and the services every face calls."""
