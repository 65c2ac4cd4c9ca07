"""Test doubles shipped with chatrecall: a deterministic embedder, an in-memory store and a clock.

Example:
    >>> from chatrecall import ChatRecall
    >>> from chatrecall.testing import HashEmbedder, InMemoryStore, ManualClock
    >>> clock = ManualClock()
    >>> cr = ChatRecall(store=InMemoryStore(), embedder=HashEmbedder(), clock=clock)
    >>> clock.advance(86400.0)  # a day later, as far as the engine can tell
    1700086400.0
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .core._engine import ChatRecall
from .core._errors import InvalidInputError
from .core._fakes import ExactVectorIndex, ExactVectorIndexFactory, HashEmbedder
from .core._memstore import InMemoryStore


class ManualClock:
    """A clock that moves only when told to: pass it as ``ChatRecall(clock=...)``.

    The engine reads the time through its ``clock`` (recency, default
    timestamps, cache expiry); with this one a test or a benchmark replays
    dated conversations and ages memories without sleeping.

    Example:
        >>> clock = ManualClock(1_000.0)
        >>> clock()
        1000.0
        >>> clock.t = 5_000.0  # jump to a question's date
        >>> clock.advance(60.0)
        5060.0

    Args:
        t: The time it reads until moved: POSIX seconds, or a timezone-aware
            ``datetime`` (``datetime(2026, 3, 2, 9, tzinfo=timezone.utc)``).
            The default, 1,700,000,000 (2023-11-14), keeps tests independent
            of the date.

    Raises:
        InvalidInputError: ``t`` is neither (a naive ``datetime`` says which
            time zone it would need), here or when assigned to ``t`` later.

    Attributes:
        t: The current time; assign it to jump.
    """

    #: The default start: 2023-11-14T22:13:20Z.
    START = 1_700_000_000.0

    __slots__ = ("_t",)

    def __init__(self, t: float | datetime = START) -> None:
        self._t = self._seconds(t, "ManualClock(t={!r})")

    @property
    def t(self) -> float:
        """The current time (POSIX seconds); assign seconds or a timezone-aware ``datetime`` to jump."""
        return self._t

    @t.setter
    def t(self, value: float | datetime) -> None:
        self._t = self._seconds(value, "ManualClock.t = {!r}")

    @staticmethod
    def _seconds(t: object, what: str) -> float:
        """``t`` as POSIX seconds; our error naming the value and the fix when it is neither form."""
        if isinstance(t, datetime):
            if t.tzinfo is None:
                raise InvalidInputError(f"{what.format(t)}: a naive datetime names no time zone; pass "
                                        "datetime(..., tzinfo=timezone.utc) or POSIX seconds")
            return t.timestamp()
        if isinstance(t, (int, float)) and not isinstance(t, bool):
            return float(t)
        raise InvalidInputError(f"{what.format(t)}: the time must be POSIX seconds (a number) or a "
                                "timezone-aware datetime")

    def __call__(self) -> float:
        return self._t

    def advance(self, seconds: float) -> float:
        """Move forward by ``seconds`` (backward when negative); returns the new time."""
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            raise InvalidInputError(f"ManualClock.advance({seconds!r}): seconds must be a number")
        self._t += seconds
        return self._t

    def __repr__(self) -> str:
        return f"ManualClock({self.t!r})"


def fake_engine(**kwargs: Any) -> ChatRecall:
    """A ChatRecall on an in-memory store and the hash embedder (fast, no I/O).

    Keyword arguments go to :class:`ChatRecall` (``clock=ManualClock()``,
    ``gate=...``); ``store`` and ``embedder`` default to the fakes.
    """
    kwargs.setdefault("store", InMemoryStore())
    kwargs.setdefault("embedder", HashEmbedder())
    return ChatRecall(**kwargs)


__all__ = ["ExactVectorIndex", "ExactVectorIndexFactory", "HashEmbedder", "InMemoryStore", "ManualClock",
           "fake_engine"]
