"""The embedded API server in its own process, plus a request-count endpoint for the harness.

``python -m llmscaler_runtime.envtest serve`` runs the same server but keeps its request
recorder (``envtest.faults``) in-process; a benchmark needs the counts from outside, so this
wrapper starts the same :class:`Environment` and serves ``GET /counts?since=I`` on a second
port: the recorded requests from index I on, counted by (user agent, verb, resource,
subresource). The harness diffs two snapshots around its measurement window.

Run: ``python -m bench.apiserver --kubeconfig-out PATH --stats-port-file PATH --crd CRD``.
Both files appear (atomically) once the server answers; SIGTERM/SIGINT stop it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from llmscaler_runtime.envtest.environment import Environment
from llmscaler_runtime.envtest.faults import Faults

__all__ = ["count_requests", "main"]


def count_requests(faults: Faults, since: int) -> dict[str, Any]:
    """Counts of the requests recorded from index ``since`` on, and the next index."""
    recorded = faults.requests()
    counts: Counter[tuple[str, str, str, str]] = Counter(
        (r.user_agent, r.verb, r.resource, r.subresource) for r in recorded[since:]
    )
    return {
        "next": len(recorded),
        "counts": [
            {"user_agent": ua, "verb": verb, "resource": res, "subresource": sub, "count": n}
            for (ua, verb, res, sub), n in sorted(counts.items())
        ],
    }


def _write_atomically(path: str, text: str) -> None:
    tmp = path + ".tmp"
    Path(tmp).write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.apiserver", description=__doc__)
    parser.add_argument("--kubeconfig-out", required=True)
    parser.add_argument("--stats-port-file", required=True)
    parser.add_argument("--crd", action="append", default=[])
    parser.add_argument("--simulate-workloads", action="store_true")
    args = parser.parse_args(argv)

    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)

    env = Environment(args.crd, simulate_workloads=args.simulate_workloads)
    env.start()
    faults = env.server.faults

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *a: Any) -> None:  # quiet: the harness reads JSON
            del format, a

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path != "/counts":
                self.send_error(404)
                return
            since = int(parse_qs(url.query).get("since", ["0"])[-1])
            payload = json.dumps(count_requests(faults, since)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    stats = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=stats.serve_forever, name="bench-stats", daemon=True).start()
    try:
        env.wait_ready()
        _write_atomically(
            args.kubeconfig_out, Path(env.kubeconfig_path).read_text(encoding="utf-8")
        )
        _write_atomically(args.stats_port_file, str(stats.server_address[1]))
        print(f"bench API server ready at {env.url}", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        stats.shutdown()
        env.stop()
        Path(args.kubeconfig_out).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
