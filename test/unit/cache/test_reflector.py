from __future__ import annotations

import threading
from typing import Any

import pytest

from llmscaler_runtime.cache import Backoff, Reflector, Store
from llmscaler_runtime.kube import Gone, InternalError, TooManyRequests, TransportError

from .fakes import FakeApi, FakeTime, FixedRandom, bookmark, ev, obj, page


def make(api: FakeApi, t: FakeTime, rng: float = 0.0, **kw: object) -> tuple[Reflector, Store]:
    store = Store()
    r = Reflector(
        api, "v1", "ConfigMap", store, clock=t.clock, sleep=t.sleep, rng=FixedRandom(rng), **kw
    )  # type: ignore[arg-type]
    api.on_exhausted = r.stop
    return r, store


def names(store: Store) -> list[str]:
    return sorted(store.keys())


def test_pages_list_then_watches_from_list_rv() -> None:
    api, t = FakeApi(), FakeTime()
    api.lists = [page([obj("a", "5")], "9", cont="tok"), page([obj("b", "6")], "9")]
    api.watches = [[ev("ADDED", obj("c", "10"))]]
    r, store = make(api, t, label_selector="app=x", namespace="default", page_size=1)
    r.run()
    assert names(store) == ["default/a", "default/b", "default/c"]
    lists = [kw for c, kw in api.calls if c == "list"]
    assert [kw["continue_"] for kw in lists] == [None, "tok"]
    # first LIST from the watch cache; a continuation page carries no resourceVersion
    assert [kw["resource_version"] for kw in lists] == ["0", None]
    assert all(kw["limit"] == 1 and kw["label_selector"] == "app=x" for kw in lists)
    watch = next(kw for c, kw in api.calls if c == "watch")
    assert watch["resource_version"] == "9" and watch["allow_bookmarks"] is True
    assert watch["namespace"] == "default" and watch["label_selector"] == "app=x"
    assert watch["timeout_seconds"] == 300  # random in [300, 600]; FixedRandom(0) gives 300
    assert r.last_sync_resource_version == "10"


def test_watch_timeout_is_random_between_5_and_10_minutes() -> None:
    api, t = FakeApi(), FakeTime()
    api.lists = [page([], "1")]
    r, _ = make(api, t, rng=0.999)
    r.run()
    assert api.calls[1][1]["timeout_seconds"] == 599


def test_resume_from_last_rv_after_disconnect_without_relist() -> None:
    api, t = FakeApi(), FakeTime()
    api.lists = [page([obj("a", "5")], "5")]
    api.watches = [
        [ev("MODIFIED", obj("a", "11")), TransportError(0, "TransportError", "reset")],
        [ev("ADDED", obj("b", "12"))],
    ]
    r, store = make(api, t)
    r.run()
    assert api.call_kinds() == ["list", "watch", "watch", "watch"]
    assert api.watch_rvs() == ["5", "11", "12"]
    assert t.sleeps == [0.8]
    assert store.get("default/a")["metadata"]["resourceVersion"] == "11"  # type: ignore[index]


def test_relist_on_410_gone_immediately() -> None:
    api, t = FakeApi(), FakeTime()
    api.lists = [page([obj("a", "5"), obj("b", "5")], "5"), page([obj("a", "30")], "30")]
    api.watches = [Gone(410, "Expired", "too old resource version"), [ev("ADDED", obj("c", "31"))]]
    r, store = make(api, t)
    r.run()
    assert api.call_kinds()[:4] == ["list", "watch", "list", "watch"]
    assert api.watch_rvs()[:2] == ["5", "30"]
    assert t.sleeps == []  # the first 410 relists at once
    # the relist after 410 is a consistent read (""), not another watch-cache read ("0")
    assert [kw["resource_version"] for c, kw in api.calls if c == "list"] == ["0", ""]
    assert names(store) == ["default/a", "default/c"]


def test_410_mid_stream_relists_and_repeated_410_backs_off() -> None:
    api, t = FakeApi(), FakeTime()
    api.lists = [page([], "5"), page([], "6"), page([], "7")]
    api.watches = [
        [ev("ADDED", obj("x", "6")), Gone(410, "Expired", "old")],
        Gone(410, "Expired", "old"),
    ]
    r, _ = make(api, t)
    r.run()
    assert api.call_kinds()[:5] == ["list", "watch", "list", "watch", "list"]
    assert t.sleeps == [0.8]


def test_expired_continue_token_falls_back_to_full_list() -> None:
    api, t = FakeApi(), FakeTime()
    api.lists = [
        page([obj("a", "1")], "3", cont="t"),
        Gone(410, "Expired", "continue expired"),
        page([obj("a", "1"), obj("b", "2")], "4"),
    ]
    r, store = make(api, t, page_size=1)
    r.run()
    assert names(store) == ["default/a", "default/b"]
    assert [kw["limit"] for c, kw in api.calls if c == "list"] == [1, 1, None]


def test_bookmark_advances_rv_without_touching_the_store() -> None:
    api, t = FakeApi(), FakeTime()
    api.lists = [page([obj("a", "5")], "5")]
    api.watches = [[bookmark("40")], [bookmark("41")]]
    events: list[str] = []

    class Sink(Store):
        def add(self, o: dict) -> None:  # type: ignore[override]
            events.append("add")
            super().add(o)

    store = Sink()
    r = Reflector(api, "v1", "ConfigMap", store, clock=t.clock, sleep=t.sleep, rng=FixedRandom())
    api.on_exhausted = r.stop
    r.run()
    assert api.watch_rvs() == ["5", "40", "41"]
    assert events == [] and names(store) == ["default/a"]
    assert t.sleeps == []


def test_backoff_sequence_on_repeated_500_then_recovery() -> None:
    api, t = FakeApi(), FakeTime()
    api.lists = [InternalError(500, "InternalError", "etcd down")] * 8 + [
        page([obj("a", "1")], "1")
    ]
    r, store = make(api, t)
    r.run()
    assert t.sleeps == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    assert names(store) == ["default/a"]


def test_backoff_jitter_and_reset_after_two_healthy_minutes() -> None:
    t = FakeTime()
    b = Backoff(clock=t.clock, rng=FixedRandom(0.5))
    assert [b.next_delay() for _ in range(3)] == pytest.approx([1.2, 2.4, 4.8])
    t.clock.step(119)
    assert b.next_delay() == pytest.approx(9.6)  # not yet healthy for 2 minutes
    t.clock.step(121)
    assert b.next_delay() == pytest.approx(1.2)
    with pytest.raises(ValueError):
        Backoff(initial=0)


def test_429_waits_retry_after() -> None:
    api, t = FakeApi(), FakeTime()
    api.lists = [
        TooManyRequests(429, "TooManyRequests", "slow down", retry_after=7.0),
        TooManyRequests(429, "TooManyRequests", "no hint"),
        TooManyRequests(429, "TooManyRequests", "retry at once", retry_after=0.0),
        page([], "1"),
    ]
    r, _ = make(api, t)
    r.run()
    # a zero hint must not become a hot loop: it backs off like a missing one
    assert t.sleeps == [7.0, 0.8, 1.6]


def test_malformed_and_unknown_events_are_skipped() -> None:
    api, t = FakeApi(), FakeTime()
    api.lists = [page([], "1")]
    api.watches = [
        [
            "not a dict",
            {"type": "ADDED"},
            {"type": "ADDED", "object": "str"},
            {"type": "ADDED", "object": {"metadata": {"resourceVersion": "2"}}},  # no name
            ev("WEIRD", obj("w", "3")),
            ev("ADDED", obj("ok", "4")),
        ]
    ]
    r, store = make(api, t)
    r.run()
    assert names(store) == ["default/ok"]
    assert r.last_sync_resource_version == "4"
    assert t.sleeps == []


def test_malformed_list_items_are_skipped_and_the_list_still_syncs() -> None:
    # A nameless item cannot be keyed; rejecting the whole list would fail every relist and
    # leave the informer unsynced for good.
    api, t = FakeApi(), FakeTime()
    nameless: dict[str, Any] = {"kind": "ConfigMap", "metadata": {"resourceVersion": "3"}}
    api.lists = [page([obj("a", "1"), nameless, {"kind": "ConfigMap"}, obj("b", "2")], "5")]
    api.watches = [[ev("MODIFIED", {"kind": "ConfigMap", "metadata": {"name": 7}})]]
    r, store = make(api, t, transform=lambda o: o)
    r.run()
    assert names(store) == ["default/a", "default/b"]
    assert store.resource_version == "5" and t.sleeps == []


def test_watch_closing_immediately_every_time_backs_off_and_keeps_state() -> None:
    api, t = FakeApi(), FakeTime()
    api.lists = [page([obj("a", "1"), obj("b", "1")], "1")]
    api.watches = [[] for _ in range(6)]
    r, store = make(api, t)
    r.run()
    assert t.sleeps[:6] == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6]
    assert api.call_kinds().count("list") == 1
    assert set(api.watch_rvs()) == {"1"}
    assert names(store) == ["default/a", "default/b"]


def test_500s_keep_last_known_state() -> None:
    api, t = FakeApi(), FakeTime()
    err = InternalError(500, "InternalError", "boom")
    api.lists = [page([obj("a", "1")], "1"), err, err]
    api.watches = [err, [ev("ADDED", obj("b", "2"))], Gone(410, "Expired", "old")]
    r, store = make(api, t)
    r.run()
    # after the 410 every relist failed: the store still holds everything it knew
    assert names(store) == ["default/a", "default/b"]


def test_transform_applied_before_store() -> None:
    api, t = FakeApi(), FakeTime()
    with_mf = obj("a", "1")
    with_mf["metadata"]["managedFields"] = [{"manager": "x"}]
    api.lists = [page([with_mf], "1")]
    from llmscaler_runtime.cache import strip_managed_fields

    r, store = make(api, t, transform=strip_managed_fields)
    r.run()
    assert "managedFields" not in store.get("default/a")["metadata"]  # type: ignore[index]
    assert "managedFields" in with_mf["metadata"]  # input untouched


def test_stop_interrupts_a_backoff_sleep() -> None:
    api = FakeApi()
    api.lists = [InternalError(500, "InternalError", "x")] * 100
    store = Store()
    r = Reflector(api, "v1", "ConfigMap", store, backoff=Backoff(initial=30, cap=30))
    thread = threading.Thread(target=r.run)
    thread.start()
    from .fakes import wait_until

    wait_until(lambda: len(api.calls) >= 1)
    r.stop()
    thread.join(2)
    assert not thread.is_alive()


def test_too_large_resource_version_relists_after_backoff() -> None:
    from llmscaler_runtime.kube import ServerTimeout

    api, t = FakeApi(), FakeTime()
    too_large = ServerTimeout(
        504,
        "Timeout",
        "Too large resource version",
        details={"causes": [{"reason": "ResourceVersionTooLarge", "message": "too large"}]},
    )
    api.lists = [page([obj("a", "50")], "50"), page([obj("a", "3")], "3")]
    api.watches = [too_large, [ev("ADDED", obj("b", "4"))]]
    r, store = make(api, t)
    r.run()
    assert api.call_kinds()[:4] == ["list", "watch", "list", "watch"]
    assert api.watch_rvs()[:2] == ["50", "3"]
    assert [kw["resource_version"] for c, kw in api.calls if c == "list"] == ["0", ""]
    assert t.sleeps == [0.8]
    assert names(store) == ["default/a", "default/b"]
