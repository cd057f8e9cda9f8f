"""ambient_recall: every layer asked at once, each under its own budget, fused into one answer."""
