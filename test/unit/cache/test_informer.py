from __future__ import annotations

import threading
from typing import Any

import pytest

from llmscaler_runtime.cache import (
    CacheNotStarted,
    DeletedFinalStateUnknown,
    InformerCache,
    SharedInformer,
)
from llmscaler_runtime.kube import Gone

from .fakes import FakeApi, FixedRandom, bookmark, ev, obj, page, wait_until


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.lock = threading.Lock()

    def on_add(self, o: dict[str, Any]) -> None:
        with self.lock:
            self.events.append(("add", o["metadata"]["name"]))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        with self.lock:
            same = old is new
            self.events.append(("update" if not same else "resync", new["metadata"]["name"]))

    def on_delete(self, o: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        with self.lock:
            if isinstance(o, DeletedFinalStateUnknown):
                self.events.append(("tombstone", o.key))
            else:
                self.events.append(("delete", o["metadata"]["name"]))

    def snapshot(self) -> list[tuple[str, Any]]:
        with self.lock:
            return list(self.events)


def live_api(*lists: Any) -> FakeApi:
    api = FakeApi()
    api.lists = list(lists)
    api.live_at_end = True
    return api


def informer(api: FakeApi, **kw: Any) -> SharedInformer:
    return SharedInformer(api, "v1", "ConfigMap", rng=FixedRandom(), sleep=lambda s: None, **kw)


def test_handlers_see_events_in_order_and_store_follows() -> None:
    api = live_api(page([obj("a", "1")], "1"))
    inf = informer(api)
    rec = Recorder()
    inf.add_event_handler(rec)
    inf.start()
    try:
        assert inf.wait_for_sync(5) and inf.has_synced()
        wait_until(lambda: bool(api.live_streams))
        stream = api.live_streams[0]
        stream.push(ev("ADDED", obj("b", "2")))
        stream.push(ev("MODIFIED", obj("a", "3")))
        stream.push(bookmark("4"))
        stream.push(ev("DELETED", obj("b", "5")))
        want = [("add", "a"), ("add", "b"), ("update", "a"), ("delete", "b")]
        wait_until(lambda: rec.snapshot() == want)
        assert inf.store.keys() == ["default/a"]
        assert inf.reflector.last_sync_resource_version == "5"
    finally:
        inf.stop()


def test_slow_handler_does_not_block_watch_or_other_handlers() -> None:
    api = live_api(page([], "1"))
    inf = informer(api)
    gate = threading.Event()
    slow_seen: list[str] = []

    def slow_add(o: dict[str, Any]) -> None:
        gate.wait(10)
        slow_seen.append(o["metadata"]["name"])

    fast = Recorder()
    inf.add_event_handler(on_add=slow_add)
    inf.add_event_handler(fast)
    inf.start()
    try:
        wait_until(lambda: bool(api.live_streams))
        for i in range(5):
            api.live_streams[0].push(ev("ADDED", obj(f"o{i}", str(i + 2))))
        wait_until(lambda: len(fast.snapshot()) == 5)
        assert len(inf.store) == 5 and slow_seen == []
        gate.set()
        wait_until(lambda: slow_seen == [f"o{i}" for i in range(5)])
    finally:
        gate.set()
        inf.stop()


def test_relist_after_410_emits_diff_with_tombstones() -> None:
    api = live_api(
        page([obj("a", "1"), obj("b", "1"), obj("c", "1")], "1"),
        page([obj("a", "1"), obj("b", "9"), obj("d", "9")], "9"),
    )
    api.watches = [Gone(410, "Expired", "too old")]
    inf = informer(api)
    rec = Recorder()
    inf.add_event_handler(rec)
    tombstones: list[DeletedFinalStateUnknown] = []
    inf.add_event_handler(
        on_delete=lambda o: (
            tombstones.append(o) if isinstance(o, DeletedFinalStateUnknown) else None
        )
    )
    inf.start()
    try:
        want = [
            ("add", "a"),
            ("add", "b"),
            ("add", "c"),
            ("update", "b"),
            ("add", "d"),
            ("tombstone", "default/c"),
        ]
        wait_until(lambda: rec.snapshot() == want)
        wait_until(lambda: len(tombstones) == 1)
        # the tombstone carries the last state we knew
        assert tombstones[0].obj["metadata"]["resourceVersion"] == "1"
        assert sorted(inf.store.keys()) == ["default/a", "default/b", "default/d"]
    finally:
        inf.stop()


def test_added_for_known_key_after_resume_is_an_update() -> None:
    api = live_api(page([obj("a", "1")], "1"))
    inf = informer(api)
    rec = Recorder()
    inf.add_event_handler(rec)
    inf.start()
    try:
        wait_until(lambda: bool(api.live_streams))
        api.live_streams[0].push(ev("ADDED", obj("a", "2")))
        wait_until(lambda: rec.snapshot() == [("add", "a"), ("update", "a")])
    finally:
        inf.stop()


def test_handler_added_late_gets_current_content_and_survives_exceptions() -> None:
    api = live_api(page([obj("a", "1"), obj("b", "1")], "1"))
    inf = informer(api)
    inf.start()
    try:
        assert inf.wait_for_sync(5)
        calls: list[str] = []

        def flaky(o: dict[str, Any]) -> None:
            calls.append(o["metadata"]["name"])
            if len(calls) == 1:
                raise RuntimeError("handler bug")

        inf.add_event_handler(on_add=flaky)
        wait_until(lambda: sorted(calls) == ["a", "b"])
        wait_until(lambda: bool(api.live_streams))
        api.live_streams[0].push(ev("ADDED", obj("c", "2")))
        wait_until(lambda: len(calls) == 3)
    finally:
        inf.stop()


def test_resync_replays_store_as_updates() -> None:
    api = live_api(page([obj("a", "1"), obj("b", "1")], "1"))
    inf = informer(api, resync_period=1.0)
    rec = Recorder()
    inf.add_event_handler(rec)
    inf.start()
    try:
        assert inf.wait_for_sync(5)
        wait_until(lambda: sorted(rec.snapshot()) == [("add", "a"), ("add", "b")])
        wait_until(lambda: sorted(rec.snapshot()[2:4]) == [("resync", "a"), ("resync", "b")], 5)
        before = len(rec.snapshot())
        inf.resync()
        wait_until(lambda: len(rec.snapshot()) >= before + 2)
    finally:
        inf.stop()


def test_bad_arguments() -> None:
    api = FakeApi()
    with pytest.raises(ValueError):
        SharedInformer(api, "v1", "ConfigMap", resync_period=0.01)
    inf = SharedInformer(api, "v1", "ConfigMap")
    with pytest.raises(ValueError):
        inf.add_event_handler()
    with pytest.raises(ValueError):
        inf.add_event_handler(Recorder(), on_add=lambda o: None)


def test_default_transform_strips_managed_fields() -> None:
    o = obj("a", "1")
    o["metadata"]["managedFields"] = [{"manager": "m"}]
    api = live_api(page([o], "1"))
    inf = informer(api)
    inf.start()
    try:
        assert inf.wait_for_sync(5)
        assert "managedFields" not in inf.store.get("default/a")["metadata"]  # type: ignore[index]
    finally:
        inf.stop()


def test_informer_cache_reads_from_memory_with_selectors() -> None:
    api = live_api(
        page(
            [
                obj("a", "1", "n1", app="web"),
                obj("b", "1", "n1", app="db"),
                obj("c", "1", "n2", app="web"),
            ],
            "1",
        )
    )
    cache = InformerCache(api)
    with pytest.raises(CacheNotStarted):
        cache.get("v1", "ConfigMap", "a", "n1")
    inf = cache.get_informer("v1", "ConfigMap")
    assert cache.get_informer("v1", "ConfigMap") is inf and not inf.started
    cache.start()
    try:
        assert cache.wait_for_cache_sync(5) and cache.has_synced()
        assert cache.get("v1", "ConfigMap", "a", "n1")["metadata"]["name"] == "a"  # type: ignore[index]
        assert cache.get("v1", "ConfigMap", "zz", "n1") is None
        names = lambda items: sorted(o["metadata"]["name"] for o in items)  # noqa: E731
        assert names(cache.list("v1", "ConfigMap")) == ["a", "b", "c"]
        assert names(cache.list("v1", "ConfigMap", "n1")) == ["a", "b"]
        assert names(cache.list("v1", "ConfigMap", label_selector="app=web")) == ["a", "c"]
        assert names(cache.list("v1", "ConfigMap", "n1", label_selector={"app": "web"})) == ["a"]
        lists_before = api.call_kinds().count("list")
        cache.list("v1", "ConfigMap")
        assert api.call_kinds().count("list") == lists_before  # served from memory
        with pytest.raises(ValueError):
            cache.list("v1", "ConfigMap", label_selector="app in (")
    finally:
        cache.stop()


def test_informer_cache_creates_informers_on_demand_after_start() -> None:
    api = live_api(page([obj("x", "1", None)], "1"))
    cache = InformerCache(api)
    cache.start()
    try:
        assert cache.wait_for_cache_sync(1)  # no informers yet: trivially synced
        assert cache.get("v1", "Namespace", "x") is not None
        assert cache.get_informer("v1", "Namespace").started
    finally:
        cache.stop()


def test_informer_cache_custom_index() -> None:
    api = live_api(page([obj("a", "1", "n1", owner="x"), obj("b", "1", "n1", owner="y")], "1"))
    cache = InformerCache(api)

    def by_owner(o: dict[str, Any]) -> list[str]:
        return [o["metadata"].get("labels", {}).get("owner", "")]

    cache.add_indexers("v1", "ConfigMap", {"owner": by_owner})
    cache.start()
    try:
        assert [o["metadata"]["name"] for o in cache.by_index("v1", "ConfigMap", "owner", "y")] == [
            "b"
        ]
    finally:
        cache.stop()
