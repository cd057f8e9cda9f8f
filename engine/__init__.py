"""The canonical pps engine: settings, the SQLite store, and the services every face calls.

pps sends nothing anywhere. Two of its dependencies report usage unless told not to, and
both read the switch from the environment, so it is set here, before any part of the
engine (and so any of its dependencies) is imported, on every path in: the server, every
CLI command, the hooks, the benches and the tests.
- Graphiti (graphiti_core) sends PostHog events and keeps an id in ~/.cache/graphiti;
- ONNX Runtime (under fastembed: the embedder and the reranker) starts Microsoft's 1DS
  telemetry when it is imported and keeps a device id and queued events in
  ~/.cache/Microsoft/DeveloperTools.
They are forced off, whatever the environment says: no setting turns them on.
"""

import os

os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
