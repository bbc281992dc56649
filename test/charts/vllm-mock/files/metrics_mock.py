#!/usr/bin/env python3
"""Fixed vLLM metrics for driving the scaler deterministically (metricsMock.enabled).

Tiny models never fill their KV cache, so a real threshold is never crossed. This sidecar serves
the three gauges the scaler and the drain read, with the values from a JSON file that it re-reads
on every scrape. The file comes from the chart's ConfigMap, so ``helm upgrade --set
metricsMock.kvCacheUsage=0.9`` changes what Prometheus sees (after the kubelet refreshes the
mounted ConfigMap) without touching the pod template, i.e. without a rollout.

Standard library only; runs on the vLLM image's python3.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GAUGES = (
    ("vllm:kv_cache_usage_perc", "kvCacheUsage", "KV-cache usage. 1 means 100 percent usage."),
    ("vllm:num_requests_waiting", "numRequestsWaiting", "Requests waiting to be processed."),
    ("vllm:num_requests_running", "numRequestsRunning", "Requests in model execution batches."),
)


def render(values: dict[str, object], model: str) -> str:
    lines = []
    label = model.replace("\\", "\\\\").replace('"', '\\"')
    for metric, key, help_text in GAUGES:
        raw = values.get(key, 0)
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
            raise ValueError(f"{key} must be a finite number, got {raw!r}")
        lines += [
            f"# HELP {metric} {help_text}",
            f"# TYPE {metric} gauge",
            f'{metric}{{model_name="{label}"}} {float(raw)!r}',
        ]
    return "\n".join(lines) + "\n"


def make_handler(values_file: str, model: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != "/metrics":
                self._reply(404, "not found\n")
                return
            try:
                with open(values_file, encoding="utf-8") as fh:
                    loaded = json.load(fh)
                if not isinstance(loaded, dict):
                    raise ValueError("values file must hold a JSON object")
                body = render(loaded, model)
            except (OSError, ValueError) as exc:
                self._reply(500, f"metrics mock: {exc}\n")  # a failed scrape, never a fake 0
                return
            self._reply(200, body)

        def _reply(self, status: int, body: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="fixed vLLM metrics")
    parser.add_argument("--values-file", required=True)
    parser.add_argument("--model", default="facebook/opt-125m")
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=9400)
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(args.values_file, args.model))
    print(f"metrics mock on {args.host}:{server.server_address[1]}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
