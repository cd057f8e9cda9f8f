"""Layer 4, crystallization: summaries over ranges of events, and crystals, the chained
identity snapshots.
"""
