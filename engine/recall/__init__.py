"""Recall: ambient_recall (every layer asked at once, each under its own budget, fused
into one answer) and the retrieval audit over its log."""
