"""Worked examples of building on llmscaler_runtime (each one is exercised by a test)."""
