"""API types of the llmscaler operator, one subpackage per API version.

Other scalers built on ``llmscaler_runtime`` import these types to read and write LLMScaler
objects without handling raw JSON themselves.
"""
