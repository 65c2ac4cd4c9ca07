"""Counters and latency histograms a user can read as a plain dict."""

from __future__ import annotations

import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["Metrics"]


class Metrics:
    """Thread-safe, bounded metrics (histograms keep the last ``window`` samples).

    Example:
        >>> m = Metrics()
        >>> m.incr("searches_run")
        >>> m.snapshot()["counters"]["searches_run"]
        1
    """

    def __init__(self, *, window: int = 10_000, max_conversations: int = 1_000, max_days: int = 400,
                 clock: Callable[[], float] = time.time) -> None:
        self._lock = threading.Lock()
        self._clock = clock  # the engine's clock: a replay over weeks (ManualClock) has its days
        self._window = window
        self._counters: Counter[str] = Counter()
        self._hist: dict[str, deque[float]] = {}
        self._conv: OrderedDict[str, Counter[str]] = OrderedDict()
        self._days: OrderedDict[str, Counter[str]] = OrderedDict()
        self._max_conv = max_conversations
        self._max_days = max_days

    def incr(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counters[name] += n

    def observe(self, name: str, value: float) -> None:
        with self._lock:
            h = self._hist.get(name)
            if h is None:
                h = self._hist[name] = deque(maxlen=self._window)
            h.append(float(value))

    def turn(self, conversation: str, **fields: int) -> None:
        """Record per-conversation and per-day figures for one turn."""
        day = time.strftime("%Y-%m-%d", time.gmtime(self._clock()))
        with self._lock:
            for table, key, cap in ((self._conv, conversation, self._max_conv), (self._days, day, self._max_days)):
                c = table.get(key)
                if c is None:
                    c = table[key] = Counter()
                table.move_to_end(key)
                c["turns"] += 1
                c.update(fields)
                while len(table) > cap:
                    table.popitem(last=False)

    def snapshot(self) -> dict[str, Any]:
        """Counters, histogram summaries (count, mean, p50, p95, max), per conversation and per day (UTC, by
        the clock given: the engine's)."""
        with self._lock:
            hist = {}
            for name, values in self._hist.items():
                arr = np.fromiter(values, dtype=np.float64, count=len(values))
                hist[name] = {
                    "count": int(arr.size),
                    "mean": float(arr.mean()) if arr.size else 0.0,
                    "p50": float(np.percentile(arr, 50)) if arr.size else 0.0,
                    "p95": float(np.percentile(arr, 95)) if arr.size else 0.0,
                    "max": float(arr.max()) if arr.size else 0.0,
                }
            return {
                "counters": dict(self._counters),
                "histograms": hist,
                "per_conversation": {k: dict(v) for k, v in self._conv.items()},
                "per_day": {k: dict(v) for k, v in self._days.items()},
            }

    def reset(self) -> None:
        with self._lock:
            self._counters.clear()
            self._hist.clear()
            self._conv.clear()
            self._days.clear()
