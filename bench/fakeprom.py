"""A fast fake Prometheus in its own process, for load benchmarks.

Answers ``GET /api/v1/query?query=...`` with a one-series vector whose value is fixed per query
(default ``--value``), and logs ``(wall time, query)`` of every query so a harness in another
process can derive when each scaler was evaluated (a scaler's unique query marks its sync).
Built on a bare asyncio protocol rather than ``http.server`` because a thread per connection
costs more CPU than the manager under test at thousands of queries per second, and this
process shares the machine with it.

Control endpoints (all JSON):
``POST /bench/set`` ``{"values": {query: value, ...}}`` -> ``{"t": wall time of the switch}``;
``GET /bench/log?since=I`` -> ``{"next": J, "entries": [[t, query], ...]}``;
``GET /bench/counts`` -> ``{"total": n, "distinct": d}``.

Run: ``python -m bench.fakeprom --port-file PATH [--value 0.5]``; it writes its port to PATH
once it listens and runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["FakePrometheus", "main"]


class FakePrometheus:
    """Query values, the request log and the HTTP routing, independent of the transport."""

    def __init__(self, default_value: float) -> None:
        self.default_value = default_value
        self.values: dict[str, float] = {}
        self.log: list[tuple[float, str]] = []

    def handle(self, method: str, target: str, body: bytes) -> tuple[int, bytes]:
        url = urlsplit(target)
        params = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        if url.path == "/api/v1/query":
            if method == "POST":  # Prometheus also accepts form-encoded POST queries
                params.update(
                    {k: v[-1] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
                )
            query = params.get("query")
            if not query:
                return 400, _json(
                    {"status": "error", "errorType": "bad_data", "error": "no query given"}
                )
            now = time.time()
            self.log.append((now, query))
            value = self.values.get(query, self.default_value)
            return 200, _json(
                {
                    "status": "success",
                    "data": {
                        "resultType": "vector",
                        "result": [{"metric": {}, "value": [now, repr(value)]}],
                    },
                }
            )
        if url.path == "/bench/set" and method == "POST":
            try:
                doc = json.loads(body)
                new = {str(q): float(v) for q, v in doc["values"].items()}
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                return 400, _json({"error": f"want {{'values': {{query: number}}}}: {exc}"})
            t = time.time()
            self.values.update(new)
            return 200, _json({"t": t})
        if url.path == "/bench/log":
            since = min(int(params.get("since", "0") or 0), len(self.log))
            entries = self.log[since:]
            return 200, _json({"next": since + len(entries), "entries": entries})
        if url.path == "/bench/counts":
            return 200, _json({"total": len(self.log), "distinct": len({q for _, q in self.log})})
        return 404, _json({"error": f"no route for {method} {url.path}"})


def _json(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


class _Protocol(asyncio.Protocol):
    """Minimal HTTP/1.1 with keep-alive: request line, headers, Content-Length bodies."""

    def __init__(self, app: FakePrometheus) -> None:
        self.app = app
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buf[:head_end].decode("latin-1").split("\r\n")
            length = 0
            close = False
            for line in head[1:]:
                name, _, value = line.partition(":")
                lname = name.strip().lower()
                if lname == "content-length":
                    length = int(value.strip() or 0)
                elif lname == "connection" and value.strip().lower() == "close":
                    close = True
            if len(self.buf) < head_end + 4 + length:
                return
            body = self.buf[head_end + 4 : head_end + 4 + length]
            self.buf = self.buf[head_end + 4 + length :]
            parts = head[0].split(" ")
            if len(parts) != 3:
                status, payload = 400, _json({"error": "bad request line"})
            else:
                status, payload = self.app.handle(parts[0], parts[1], body)
            reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "Error")
            assert self.transport is not None
            self.transport.write(
                f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            if close:
                self.transport.close()
                return


async def _serve(app: FakePrometheus, port: int, port_file: str | None) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Protocol(app), "127.0.0.1", port)
    bound = server.sockets[0].getsockname()[1]
    if port_file:
        tmp = port_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(str(bound))
        os.replace(tmp, port_file)  # atomic: a poller never reads a half-written port
    print(f"fake Prometheus listening on http://127.0.0.1:{bound}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fakeprom", description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", default=None, help="write the bound port here")
    parser.add_argument("--value", type=float, default=0.5, help="default sample value")
    args = parser.parse_args(argv)
    asyncio.run(_serve(FakePrometheus(args.value), args.port, args.port_file))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
