"""Logging: JSON lines carry the reconcile context; stdlib loggers share the format; the
context is per thread/reconcile and restored afterwards."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator

import pytest
import structlog

from llmscaler_runtime.log import configure_logging, get_logger, reconcile_context


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Leave global logging as we found it, for the other tests in this process."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for h in list(root.handlers):
        if h not in handlers:
            root.removeHandler(h)
    root.setLevel(level)
    structlog.contextvars.clear_contextvars()
    structlog.reset_defaults()


@pytest.fixture
def out() -> Iterator[io.StringIO]:
    buf = io.StringIO()
    configure_logging("debug", "json", stream=buf)
    yield buf


def lines(buf: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buf.getvalue().splitlines() if line.strip()]


def test_reconcile_context_fields_on_every_line(out: io.StringIO) -> None:
    log = get_logger("test.reconcile")
    with reconcile_context("llmscaler", "team", "s1") as rid:
        log.info("fetching metrics", source="prometheus")
        logging.getLogger("urllib3.test").warning("retrying %s", "GET")  # a foreign library
    log.info("outside")
    first, foreign, outside = lines(out)
    for rec in (first, foreign):
        assert rec["controller"] == "llmscaler"
        assert rec["namespace"] == "team"
        assert rec["name"] == "s1"
        assert rec["reconcile_id"] == rid
        assert "timestamp" in rec and "level" in rec
    assert first["event"] == "fetching metrics" and first["source"] == "prometheus"
    assert foreign["event"] == "retrying GET" and foreign["logger"] == "urllib3.test"
    assert foreign["level"] == "warning"
    assert "reconcile_id" not in outside


def test_each_reconcile_gets_a_fresh_id_and_threads_do_not_leak(out: io.StringIO) -> None:
    log = get_logger("t")
    barrier = threading.Barrier(2)

    def work(name: str) -> None:
        with reconcile_context("c", "ns", name):
            barrier.wait(5)
            log.info("step", who=name)
            barrier.wait(5)

    threads = [threading.Thread(target=work, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    recs = lines(out)
    assert sorted(str(r["name"]) for r in recs) == ["a", "b"]
    assert all(r["who"] == r["name"] for r in recs)
    assert recs[0]["reconcile_id"] != recs[1]["reconcile_id"]


def test_nested_context_restores_outer(out: io.StringIO) -> None:
    log = get_logger("t")
    with reconcile_context("c", "ns", "outer", reconcile_id="r1"):
        with reconcile_context("c", "ns", "inner"):
            pass
        log.info("back")
    assert lines(out)[0]["name"] == "outer" and lines(out)[0]["reconcile_id"] == "r1"


def test_level_filtering_and_exceptions(out: io.StringIO) -> None:
    configure_logging("warning", "json", stream=out)
    log = get_logger("t")
    log.info("hidden")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("failed")
    [rec] = lines(out)
    assert rec["event"] == "failed" and "RuntimeError: boom" in str(rec["exception"])


def test_reconfiguring_does_not_stack_handlers(out: io.StringIO) -> None:
    configure_logging("info", "json", stream=out)
    configure_logging("info", "json", stream=out)
    get_logger("t").info("once")
    assert len(lines(out)) == 1


def test_console_format_is_human_readable() -> None:
    buf = io.StringIO()
    configure_logging("info", "console", stream=buf)
    with reconcile_context("c", "ns", "n1"):
        get_logger("t").info("hello", k=1)
    text = buf.getvalue()
    assert "hello" in text and "name=n1" in text and "k=1" in text
    assert not text.lstrip().startswith("{")


@pytest.mark.parametrize(("level", "fmt"), [("loud", "json"), ("info", "xml")])
def test_bad_configuration_is_rejected(level: str, fmt: str) -> None:
    with pytest.raises(ValueError):
        configure_logging(level, fmt)  # type: ignore[arg-type]


def test_http_libraries_log_requests_only_at_debug() -> None:
    """httpx's per-request info line would be one log line per metric fetch per scaler."""
    import logging

    from llmscaler_runtime.log import configure_logging

    configure_logging("info", "json", stream=io.StringIO())
    assert logging.getLogger("httpx").getEffectiveLevel() == logging.WARNING
    configure_logging("debug", "json", stream=io.StringIO())
    assert logging.getLogger("httpx").getEffectiveLevel() == logging.DEBUG
    configure_logging("info", "json", stream=io.StringIO())
