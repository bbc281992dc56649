"""A DEMO FALLBACK that answers the Prometheus HTTP query API for a handful of PromQL forms.

This is not Prometheus. It exists so ``make demo`` still works on a machine without the
``prometheus`` binary: it serves ``/api/v1/query`` (GET and POST form, like Prometheus) and
evaluates only what the demo and the spec's examples use, over an in-memory data source
(normally :meth:`VllmMetricsExporter.samples`):

* instant selectors: ``metric{label="v", other=~"re.*"}`` (``=``, ``!=``, ``=~``, ``!~``)
* aggregations ``avg``, ``sum``, ``max``, ``min``, ``count`` with optional ``by (labels)``
* ``avg_over_time``, ``max_over_time``, ``min_over_time``, ``sum_over_time``,
  ``count_over_time`` over ``selector[duration]`` using a history sampled every
  ``sample_interval`` seconds
* arithmetic with a number on one side: ``metric{...} * 100``, ``avg(...) / 2``

Anything else is answered with the API's ``bad_data`` error, so an unsupported query fails
loudly instead of being approximated. Results follow Prometheus's shapes: functions and
arithmetic drop ``__name__``, aggregations keep only their ``by`` labels, and an empty input
gives an empty vector. Real Prometheus is used whenever it is installed; the integration tests
check that both agree on the supported forms. The what-if simulator (``llmscaler_sim``) uses
:class:`Evaluator` on a virtual clock to answer the scaler's queries over simulated scrapes.
"""

from __future__ import annotations

import collections
import functools
import json
import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs

from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock
from llmscaler_runtime.testkit._http import LocalHTTPServer, LoopbackService, read_body, send
from llmscaler_runtime.testkit.vllm_exporter import Sample

AGGREGATIONS = ("avg", "sum", "max", "min", "count")
RANGE_FUNCTIONS = (
    "avg_over_time",
    "max_over_time",
    "min_over_time",
    "sum_over_time",
    "count_over_time",
)
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<number>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![a-zA-Z_:]))
  | (?P<duration>\[(?:[0-9]+(?:ms|s|m|h|d))+\])
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<op>=~|!~|!=|=|[-+*/(){},])
    """,
    re.VERBOSE,
)


class PromQLError(ValueError):
    """The query is malformed or outside the supported subset."""


Labels = tuple[tuple[str, str], ...]
Vector = list[tuple[Labels, float]]
Value = Vector | float


@attrs.frozen
class _Token:
    kind: str
    text: str
    pos: int


def _tokenize(query: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(query):
        match = _TOKEN.match(query, pos)
        if match is None:
            raise PromQLError(f"unexpected character {query[pos]!r} at position {pos}")
        kind = match.lastgroup or ""
        if kind != "ws":
            tokens.append(_Token(kind, match.group(), pos))
        pos = match.end()
    return tokens


def parse_duration(text: str) -> float:
    """``1m30s`` -> 90.0; only the units PromQL accepts."""
    parts = re.findall(r"([0-9]+)(ms|s|m|h|d)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise PromQLError(f"invalid duration {text!r}")
    return sum(int(n) * _DURATION_UNITS[u] for n, u in parts)


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


# -- AST --------------------------------------------------------------------------------------
@attrs.frozen
class Matcher:
    name: str
    op: str
    value: str

    def matches(self, labels: Mapping[str, str]) -> bool:
        actual = labels.get(self.name, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        found = re.fullmatch(self.value, actual) is not None
        return found if self.op == "=~" else not found


@attrs.frozen(cache_hash=True)
class Selector:
    matchers: tuple[Matcher, ...]
    range_seconds: float | None = None


@attrs.frozen
class Number:
    value: float


@attrs.frozen
class Aggregate:
    op: str
    by: tuple[str, ...] | None
    expr: Node


@attrs.frozen
class RangeFunction:
    name: str
    selector: Selector


@attrs.frozen
class Binary:
    op: str
    left: Node
    right: Node


Node = Selector | Number | Aggregate | RangeFunction | Binary


class _Parser:
    def __init__(self, query: str) -> None:
        self.query = query
        self.tokens = _tokenize(query)
        self.i = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, text: str | None = None, kind: str | None = None) -> _Token:
        token = self.peek()
        if token is None:
            raise PromQLError(f"unexpected end of query, expected {text or kind}")
        if (text is not None and token.text != text) or (kind is not None and token.kind != kind):
            raise PromQLError(
                f"expected {text or kind} at position {token.pos}, got {token.text!r}"
            )
        self.i += 1
        return token

    def accept(self, text: str) -> bool:
        token = self.peek()
        if token is not None and token.text == text and token.kind in ("op", "ident"):
            self.i += 1
            return True
        return False

    def parse(self) -> Node:
        if not self.tokens:
            raise PromQLError("empty query")
        node = self.additive()
        token = self.peek()
        if token is not None:
            raise PromQLError(f"unexpected {token.text!r} at position {token.pos}")
        return node

    def additive(self) -> Node:
        node = self.multiplicative()
        while (token := self.peek()) is not None and token.text in ("+", "-"):
            self.i += 1
            node = Binary(token.text, node, self.multiplicative())
        return node

    def multiplicative(self) -> Node:
        node = self.primary()
        while (token := self.peek()) is not None and token.text in ("*", "/"):
            self.i += 1
            node = Binary(token.text, node, self.primary())
        return node

    def by_clause(self) -> tuple[str, ...]:
        self.take("(")
        labels: list[str] = []
        while not self.accept(")"):
            labels.append(self.take(kind="ident").text)
            if not self.accept(","):
                self.take(")")
                break
        return tuple(labels)

    def primary(self) -> Node:
        token = self.take()
        if token.kind == "number":
            return Number(float(token.text))
        if token.text == "-" and (nxt := self.peek()) is not None and nxt.kind == "number":
            self.i += 1
            return Number(-float(nxt.text))
        if token.text == "(":
            node = self.additive()
            self.take(")")
            return node
        if token.text == "{":
            return self.selector(None)
        if token.kind != "ident":
            raise PromQLError(f"unexpected {token.text!r} at position {token.pos}")
        if (
            token.text in AGGREGATIONS
            and (nxt := self.peek()) is not None
            and (nxt.text in ("(", "by", "without"))
        ):
            by: tuple[str, ...] | None = None
            if self.accept("without"):
                raise PromQLError("'without' is not supported by promql_lite")
            if self.accept("by"):
                by = self.by_clause()
            self.take("(")
            inner = self.additive()
            self.take(")")
            if self.accept("by"):
                by = self.by_clause()
            return Aggregate(token.text, by, inner)
        if token.text in RANGE_FUNCTIONS:
            self.take("(")
            name_token = self.peek()
            if name_token is not None and name_token.text == "{":
                self.i += 1
                selector = self.selector(None)
            else:
                selector = self.named_selector(self.take(kind="ident").text)
            self.take(")")
            if selector.range_seconds is None:
                raise PromQLError(f"{token.text} needs a range selector like metric[1m]")
            return RangeFunction(token.text, selector)
        nxt = self.peek()
        if nxt is not None and nxt.text == "(":
            raise PromQLError(f"function {token.text!r} is not supported by promql_lite")
        return self.named_selector(token.text)

    def named_selector(self, name: str) -> Selector:
        braces = self.accept("{")
        return self.selector(name, braces=braces)

    def selector(self, name: str | None, *, braces: bool = True) -> Selector:
        matchers: list[Matcher] = []
        if name is not None:
            matchers.append(Matcher("__name__", "=", name))
        if braces:
            while not self.accept("}"):
                label = self.take(kind="ident").text
                op = self.take(kind="op").text
                if op not in ("=", "!=", "=~", "!~"):
                    raise PromQLError(f"invalid label matcher operator {op!r}")
                value = _unquote(self.take(kind="string").text)
                if op in ("=~", "!~"):
                    try:
                        re.compile(value)
                    except re.error as exc:
                        raise PromQLError(f"invalid regex {value!r}: {exc}") from exc
                matchers.append(Matcher(label, op, value))
                if not self.accept(","):
                    self.take("}")
                    break
        if not matchers:
            raise PromQLError("a selector needs a metric name or at least one label matcher")
        range_seconds: float | None = None
        token = self.peek()
        if token is not None and token.kind == "duration":
            self.i += 1
            range_seconds = parse_duration(token.text[1:-1])
        return Selector(tuple(matchers), range_seconds)


@functools.lru_cache(maxsize=256)
def parse(query: str) -> Node:
    """Parses a query of the supported subset, raising :class:`PromQLError` otherwise.

    The tree is immutable, so a query asked again (every sync period) is parsed once.
    """
    return _Parser(query).parse()


# -- evaluation -------------------------------------------------------------------------------
def _drop_name(labels: Labels) -> Labels:
    return tuple(item for item in labels if item[0] != "__name__")


def _select(samples: Iterable[Sample], selector: Selector) -> Vector:
    # The metric name is matched first, on the sample itself: most series of a scrape belong to
    # other metrics, and building their label sets only to reject them dominated the cost.
    names = [m for m in selector.matchers if m.name == "__name__" and m.op == "="]
    others = [m for m in selector.matchers if m not in names]
    out: Vector = []
    for sample in samples:
        if any(sample.name != m.value for m in names):
            continue
        as_dict = {**sample.labels, "__name__": sample.name}
        if all(m.matches(as_dict) for m in others):
            out.append((tuple(sorted(as_dict.items())), sample.value))
    return out


def _aggregate(op: str, values: list[float]) -> float:
    if op == "sum":
        return math.fsum(values)
    if op == "avg":
        return math.fsum(values) / len(values)
    if op == "max":
        return max(values, key=lambda v: -math.inf if math.isnan(v) else v)
    if op == "min":
        return min(values, key=lambda v: math.inf if math.isnan(v) else v)
    return float(len(values))


def _arith(op: str, a: float, b: float) -> float:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a)
    return a / b


class Evaluator:
    """Evaluates parsed queries over a data source and a sampled history of it.

    ``clock``'s wall time (Unix seconds) stamps samples and queries; it is injectable, so
    window rules are testable without sleeping; :meth:`record` adds one history point (the
    server calls it on a timer).
    """

    def __init__(
        self,
        source: Callable[[], Iterable[Sample]],
        *,
        clock: Clock | None = None,
        history_seconds: float = 3600.0,
    ) -> None:
        self._source = source
        self._clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self._history_seconds = history_seconds
        # (time, snapshot, the snapshot's selections by selector): a recorded snapshot never
        # changes, so each selector is matched against it once, however many range queries
        # its window is part of.
        self._history: collections.deque[tuple[float, list[Sample], dict[Selector, Vector]]] = (
            collections.deque()
        )
        self._lock = threading.Lock()

    def record(self) -> None:
        now = self._clock.now()
        snapshot = list(self._source())
        with self._lock:
            self._history.append((now, snapshot, {}))
            while self._history and self._history[0][0] < now - self._history_seconds:
                self._history.popleft()

    def evaluate(self, query: str) -> Value:
        return self._eval(parse(query), self._clock.now())

    def _eval(self, node: Node, now: float) -> Value:
        if isinstance(node, Number):
            return node.value
        if isinstance(node, Selector):
            if node.range_seconds is not None:
                raise PromQLError("a range vector cannot be the result of an expression")
            return _select(self._source(), node)
        if isinstance(node, RangeFunction):
            return self._range(node, now)
        if isinstance(node, Aggregate):
            inner = self._eval(node.expr, now)
            if not isinstance(inner, list):
                raise PromQLError(f"{node.op}() needs an instant vector, not a scalar")
            groups: dict[Labels, list[float]] = {}
            for labels, value in inner:
                key = tuple(item for item in labels if node.by is not None and item[0] in node.by)
                groups.setdefault(key, []).append(value)
            return [(key, _aggregate(node.op, values)) for key, values in groups.items()]
        left = self._eval(node.left, now)
        right = self._eval(node.right, now)
        if isinstance(left, float) and isinstance(right, float):
            return _arith(node.op, left, right)
        if isinstance(left, list) and isinstance(right, float):
            return [(_drop_name(labels), _arith(node.op, v, right)) for labels, v in left]
        if isinstance(left, float) and isinstance(right, list):
            return [(_drop_name(labels), _arith(node.op, left, v)) for labels, v in right]
        raise PromQLError("vector-to-vector arithmetic is not supported by promql_lite")

    def _range(self, node: RangeFunction, now: float) -> Vector:
        window = node.selector.range_seconds or 0.0
        selections: list[Vector] = []
        with self._lock:
            for t, snapshot, cache in reversed(self._history):  # newest first: stop at the window
                if t <= now - window:
                    break
                if t > now:
                    continue
                selected = cache.get(node.selector)
                if selected is None:
                    selected = cache[node.selector] = [
                        (_drop_name(labels), value)
                        for labels, value in _select(snapshot, node.selector)
                    ]
                selections.append(selected)
        selections.reverse()
        if not selections:
            selections = [
                [(_drop_name(labels), v) for labels, v in _select(self._source(), node.selector)]
            ]
        series: dict[Labels, list[float]] = {}
        for selected in selections:
            for labels, value in selected:
                series.setdefault(labels, []).append(value)
        op = node.name.removesuffix("_over_time")
        return [(labels, _aggregate(op, values)) for labels, values in series.items()]


def format_value(value: float) -> str:
    """Formats a sample value the way Prometheus's API does (Go's shortest 'f' form)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def to_api_data(value: Value, timestamp: float) -> dict[str, Any]:
    if isinstance(value, float):
        return {"resultType": "scalar", "result": [timestamp, format_value(value)]}
    result = [
        {"metric": dict(labels), "value": [timestamp, format_value(v)]} for labels, v in value
    ]
    return {"resultType": "vector", "result": result}


class PromqlLiteServer(LoopbackService):
    """Serves :class:`Evaluator` over HTTP on ``127.0.0.1`` with a background sampler thread.

    ``PromqlLiteServer(exporter.samples)`` is the demo's stand-in for a Prometheus scraping the
    exporter every ``sample_interval`` seconds.
    """

    def __init__(
        self,
        source: Callable[[], Iterable[Sample]],
        *,
        sample_interval: float = 1.0,
        clock: Clock | None = None,
        port: int = 0,
    ) -> None:
        if sample_interval <= 0:
            raise ValueError("sample_interval must be positive")
        self.evaluator = Evaluator(source, clock=clock)
        self._clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self._interval = sample_interval
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self._server = LocalHTTPServer(self._handle, port=port, name="promql-lite")
        self.queries: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}"

    def start(self) -> None:
        super().start()
        if self._sampler is None:
            self._stop.clear()
            self.evaluator.record()
            self._sampler = threading.Thread(target=self._sample, name="promql-lite-sampler")
            self._sampler.daemon = True
            self._sampler.start()

    def stop(self) -> None:
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join(timeout=5)
            self._sampler = None
        super().stop()

    def _sample(self) -> None:
        while not self._stop.wait(self._interval):
            self.evaluator.record()

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(request.path)
        if parts.path in ("/-/ready", "/-/healthy"):
            send(request, 200, b"promql_lite is ready.\n", "text/plain; charset=utf-8")
            return
        if parts.path != "/api/v1/query":
            send(request, 404, b"404 page not found\n", "text/plain; charset=utf-8")
            return
        params = parse_qs(parts.query)
        if request.command == "POST":
            body = read_body(request).decode("utf-8", "replace")
            params.update(parse_qs(body))
        queries = params.get("query")
        if not queries:
            self._error(request, "bad_data", 'invalid parameter "query": empty query')
            return
        query = queries[0]
        self.queries.append(query)
        try:
            value = self.evaluator.evaluate(query)
        except PromQLError as exc:
            self._error(request, "bad_data", f'invalid parameter "query": {exc}')
            return
        payload = {"status": "success", "data": to_api_data(value, self._clock.now())}
        send(request, 200, json.dumps(payload).encode(), "application/json")

    @staticmethod
    def _error(request: BaseHTTPRequestHandler, kind: str, message: str) -> None:
        payload = {"status": "error", "errorType": kind, "error": message}
        send(request, 400, json.dumps(payload).encode(), "application/json")
