"""``make demo``: the operator scaling a simulated vLLM fleet on an embedded cluster."""
