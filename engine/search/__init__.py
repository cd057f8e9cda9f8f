"""Layer 2, core anchors: the entities' homes (word-photos, fragments, memory files) and
the captured turns, indexed by words (FTS5) and by meaning (fastembed), searched together.
"""
