"""Peer implementations of the LLMScaler decision, for side-by-side benchmarks."""
