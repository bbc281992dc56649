"""Structured logging for the framework and the operator.

Every line goes through one pipeline: structlog loggers *and* plain ``logging`` loggers (the
``kubernetes`` package, urllib3, libraries) are rendered by the same ``ProcessorFormatter`` on one
root handler, so an operator's log is uniformly JSON (for log shippers) or uniformly human-readable
(``fmt="console"``), never a mix.

Context travels in :mod:`contextvars`, not in logger objects: ``reconcile_context`` binds
``controller``, ``namespace``, ``name`` and a fresh ``reconcile_id`` for the duration of one
reconcile, so every line logged by any code the reconciler calls — however deep, whatever logger it
uses — can be correlated with that reconcile without threading a logger through every function.
Worker threads each have their own context, so concurrent reconciles never see each other's fields.
"""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Literal

import structlog

__all__ = [
    "LOG_LEVELS",
    "configure_logging",
    "get_logger",
    "new_reconcile_id",
    "reconcile_context",
]

LogFormat = Literal["json", "console"]

#: Accepted level names, lower-case, mapped to :mod:`logging` levels.
LOG_LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}

# Marks the root handler installed by configure_logging so a second call replaces it instead of
# stacking a duplicate (tests and embedders call configure_logging more than once).
_HANDLER_MARK = "_llmscaler_log_handler"


def _shared_processors() -> list[Any]:
    """Processors applied both to structlog calls and to foreign (stdlib) log records."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.stdlib.ExtraAdder(),
    ]


_CHATTY_LIBRARIES = ("httpx", "httpcore", "urllib3")


def configure_logging(
    level: str = "info", fmt: LogFormat = "json", *, stream: IO[str] | None = None
) -> None:
    """Configure structlog and the stdlib root logger to emit one format to ``stream``.

    ``level`` is a name from :data:`LOG_LEVELS` (case-insensitive); ``fmt`` is ``"json"`` (one
    object per line, the default because production logs are read by machines) or ``"console"``
    (coloured key=value lines for a human at a terminal). ``stream`` defaults to stderr.
    Calling it again reconfigures; it never stacks handlers.
    """
    lvl = LOG_LEVELS.get(level.lower()) if isinstance(level, str) else None
    if lvl is None:
        raise ValueError(f"unknown log level {level!r}; expected one of {sorted(LOG_LEVELS)}")
    if fmt not in ("json", "console"):
        raise ValueError(f"unknown log format {fmt!r}; expected 'json' or 'console'")
    out = stream if stream is not None else sys.stderr

    renderer: Any
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer(sort_keys=False)
        final: list[Any] = [structlog.processors.format_exc_info, renderer]
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=out.isatty())
        final = [renderer]

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_shared_processors(),
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )

    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared_processors(),
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *final],
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    setattr(handler, _HANDLER_MARK, True)

    root = logging.getLogger()
    for existing in list(root.handlers):
        if getattr(existing, _HANDLER_MARK, False):
            root.removeHandler(existing)
            existing.close()  # StreamHandler.close flushes; it never closes the stream itself
    root.addHandler(handler)
    root.setLevel(lvl)
    # HTTP libraries log per request (httpx at info: "HTTP Request: GET ..."), one line per fetch,
    # which at thousands of scalers costs real CPU and buries the decisions. Our own lines
    # already name the source on failure; show the transport's chatter only at debug.
    quiet = logging.DEBUG if lvl <= logging.DEBUG else logging.WARNING
    for name in _CHATTY_LIBRARIES:
        logging.getLogger(name).setLevel(quiet)


def get_logger(name: str | None = None, **initial: Any) -> structlog.stdlib.BoundLogger:
    """A structlog logger named ``name`` (the stdlib logger name, used for level filtering)."""
    logger: structlog.stdlib.BoundLogger = structlog.stdlib.get_logger(name, **initial)
    return logger


def new_reconcile_id() -> str:
    """A short random id; unique enough to correlate the lines of one reconcile."""
    return uuid.uuid4().hex[:16]


@contextmanager
def reconcile_context(
    controller: str, namespace: str, name: str, *, reconcile_id: str | None = None
) -> Iterator[str]:
    """Bind controller/namespace/name/reconcile_id to every log line inside the ``with`` block.

    Yields the reconcile id. Previous bindings of the same keys are restored on exit, so nested
    use (a reconciler calling another) behaves like a stack.
    """
    rid = reconcile_id or new_reconcile_id()
    with structlog.contextvars.bound_contextvars(
        controller=controller, namespace=namespace, name=name, reconcile_id=rid
    ):
        yield rid
