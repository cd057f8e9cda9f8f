"""REST routes, one module per resource. Each route parses, calls one engine service,
and shapes the answer."""
