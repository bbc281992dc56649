"""How many inputs the property and fuzz tests ran, for the summary line at the end of a run.

Every example hypothesis runs (shrinking included) calls :func:`count` once, under a name
such as ``fuzz:prometheus`` or ``property:pacing``. A fuzz input that raises anything but the
parser's typed error is counted under ``crash:<target>`` before the test fails.
"""

from __future__ import annotations

from collections import Counter

tally: Counter[str] = Counter()


def count(name: str) -> None:
    tally[name] += 1


def summary() -> list[str]:
    """Lines for the terminal summary; empty when no property or fuzz test ran."""
    if not tally:
        return []

    def part(prefix: str) -> tuple[int, str]:
        items = sorted((k.split(":", 1)[1], v) for k, v in tally.items() if k.startswith(prefix))
        total = sum(v for _, v in items)
        return total, ", ".join(f"{k} {v}" for k, v in items)

    fuzz_n, fuzz_detail = part("fuzz:")
    crash_n, crash_detail = part("crash:")
    prop_n, prop_detail = part("property:")
    lines = [
        f"fuzz: {fuzz_n} inputs, {crash_n} crashes ({fuzz_detail or 'none run'})"
        + (f"; crashed: {crash_detail}" if crash_n else ""),
        f"properties: {prop_n} examples ({prop_detail or 'none run'})",
    ]
    return lines


def examples(n: int) -> int:
    """``n`` examples under the ``ci`` profile, scaled up in proportion under ``long``."""
    from hypothesis import settings

    current = settings.default
    return max(1, round(n * (current.max_examples if current else 60) / 60))
