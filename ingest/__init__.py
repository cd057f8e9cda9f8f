"""Ways events reach pps: an HTTP client that spools to disk when the service is down,
Claude Code hooks, a Discord daemon adapter and importers for existing archives.
Everything here talks to the service through its REST API.
"""

import sys

# httpx imports its own command line (httpx._main, with click, rich and pygments: about
# 0.1 s of a hook's start) whenever click is installed, as typer installs it. No client
# uses that command line; marked absent before httpx is first imported, httpx skips it.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
