"""The llmscaler manager binary: flags, wiring and ``main``."""
