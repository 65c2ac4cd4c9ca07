"""Test doubles shipped with chatrecall: a deterministic embedder and an in-memory store.

Example:
    >>> from chatrecall import ChatRecall
    >>> from chatrecall.testing import HashEmbedder, InMemoryStore
    >>> cr = ChatRecall(store=InMemoryStore(), embedder=HashEmbedder())
"""

from __future__ import annotations

from typing import Any

from .core._engine import ChatRecall
from .core._fakes import HashEmbedder
from .core._memstore import InMemoryStore


def fake_engine(**kwargs: Any) -> ChatRecall:
    """A ChatRecall on an in-memory store and the hash embedder (fast, no I/O)."""
    kwargs.setdefault("store", InMemoryStore())
    kwargs.setdefault("embedder", HashEmbedder())
    return ChatRecall(**kwargs)


__all__ = ["HashEmbedder", "InMemoryStore", "fake_engine"]
