#!/usr/bin/env python3
"""preStop drain for a vLLM container: let the load balancer catch up, then wait until idle.

Runs inside the vLLM image (which always has python3) with the standard library only. Steps:

1. Sleep ``--endpoint-sync-seconds`` unconditionally. The pod cannot observe when the endpoint
   controllers, node proxies and gateways have stopped sending it traffic, so it gives them this
   long to notice the deletion before anything else happens.
2. Poll the pod's own metrics endpoint until ``vllm:num_requests_running`` and
   ``vllm:num_requests_waiting`` are both 0, for at most ``--drain-seconds``. A poll that fails
   for any reason (connection refused, timeout, non-200, a metric missing or unparsable) counts
   as busy: stopping early on an error could cut requests off, which is what this is for.
3. Exit 0 either way, so the kubelet proceeds to SIGTERM; vLLM's --shutdown-timeout covers what
   is still running then.

The three budgets together must fit terminationGracePeriodSeconds; the chart refuses to render
otherwise.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
import urllib.error
import urllib.request

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
# name, optional {labels} (quoted values may contain '}' or escaped quotes), value.
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)')


def log(message: str) -> None:
    print(f"drain: {message}", flush=True)


def parse_totals(text: str) -> dict[str, float]:
    """Sums each metric over its series (a pod may report one series per model)."""
    totals: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            continue
        name, value = match.group(1), float(match.group(3))
        totals[name] = totals.get(name, 0.0) + value
    return totals


def busy_reason(url: str, timeout: float) -> str | None:
    """None when idle, else why the pod counts as busy (including a failed check)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            text = response.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return f"metrics check failed ({exc}); treating the pod as busy"
    try:
        totals = parse_totals(text)
    except ValueError as exc:
        return f"metrics unparsable ({exc}); treating the pod as busy"
    missing = [name for name in (RUNNING, WAITING) if name not in totals]
    if missing:
        return f"{', '.join(missing)} not exposed; treating the pod as busy"
    running, waiting = totals[RUNNING], totals[WAITING]
    if any(math.isnan(v) for v in (running, waiting)):
        return "request gauges are NaN; treating the pod as busy"
    if running > 0 or waiting > 0:
        return f"{running:g} running, {waiting:g} waiting"
    return None


def drain(
    url: str, endpoint_sync_seconds: float, drain_seconds: float, poll_interval: float
) -> bool:
    """Returns True when the pod went idle, False when drain_seconds ran out first."""
    if endpoint_sync_seconds > 0:
        log(f"waiting {endpoint_sync_seconds:g}s for endpoints to drop this pod")
        time.sleep(endpoint_sync_seconds)
    deadline = time.monotonic() + drain_seconds
    while True:
        remaining = deadline - time.monotonic()
        reason = busy_reason(url, timeout=max(0.2, min(2.0, remaining)))
        if reason is None:
            log("idle; continuing shutdown")
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            log(f"still busy after {drain_seconds:g}s ({reason}); continuing shutdown")
            return False
        log(f"busy: {reason}")
        time.sleep(min(poll_interval, remaining))


def _non_negative(value: str) -> float:
    number = float(value)
    if not number >= 0 or math.isinf(number):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {value}")
    return number


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="vLLM preStop drain")
    parser.add_argument("--url", default="http://127.0.0.1:8000/metrics")
    parser.add_argument("--endpoint-sync-seconds", type=_non_negative, required=True)
    parser.add_argument("--drain-seconds", type=_non_negative, required=True)
    parser.add_argument("--poll-interval", type=_non_negative, default=1.0)
    args = parser.parse_args(argv)
    drain(args.url, args.endpoint_sync_seconds, args.drain_seconds, max(args.poll_interval, 0.05))
    return 0


if __name__ == "__main__":
    sys.exit(main())
