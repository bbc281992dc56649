"""A recording metrics provider for asserting what the queue reports."""

from __future__ import annotations

from collections import defaultdict


class RecordingMetric:
    def __init__(self) -> None:
        self.value = 0.0
        self.observations: list[float] = []

    def inc(self) -> None:
        self.value += 1

    def dec(self) -> None:
        self.value -= 1

    def set(self, value: float) -> None:
        self.value = value

    def observe(self, value: float) -> None:
        self.observations.append(value)


class RecordingProvider:
    def __init__(self) -> None:
        self.metrics: dict[tuple[str, str], RecordingMetric] = defaultdict(RecordingMetric)

    def _m(self, kind: str, name: str) -> RecordingMetric:
        return self.metrics[(kind, name)]

    def new_depth_metric(self, name: str) -> RecordingMetric:
        return self._m("depth", name)

    def new_adds_metric(self, name: str) -> RecordingMetric:
        return self._m("adds", name)

    def new_latency_metric(self, name: str) -> RecordingMetric:
        return self._m("latency", name)

    def new_work_duration_metric(self, name: str) -> RecordingMetric:
        return self._m("work", name)

    def new_unfinished_work_seconds_metric(self, name: str) -> RecordingMetric:
        return self._m("unfinished", name)

    def new_longest_running_processor_metric(self, name: str) -> RecordingMetric:
        return self._m("longest", name)

    def new_retries_metric(self, name: str) -> RecordingMetric:
        return self._m("retries", name)
