"""Ways events reach pps: an HTTP client that spools to disk when the service is down,
Claude Code hooks, a Discord daemon adapter and importers for existing archives.
Everything here talks to the service through its REST API.
"""
