"""Benchmarks of the llmscaler manager: capacity, reaction time, load, a kopf peer, micro.

Run everything with ``make bench`` (``python -m bench.run``); see ``bench/RESULTS.md``.
"""
