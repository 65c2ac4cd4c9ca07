"""Test doubles shipped with chatrecall: a deterministic embedder and an in-memory store.

Example:
    >>> from chatrecall import ChatRecall
    >>> from chatrecall.testing import HashEmbedder, InMemoryStore
    >>> cr = ChatRecall(store=InMemoryStore(), embedder=HashEmbedder())
"""

from .core._fakes import HashEmbedder
from .core._memstore import InMemoryStore


def fake_engine(**kwargs: object) -> "ChatRecall":
    """A ChatRecall on an in-memory store and the hash embedder (fast, no I/O)."""
    from .core import ChatRecall

    kwargs.setdefault("store", InMemoryStore())
    kwargs.setdefault("embedder", HashEmbedder())
    return ChatRecall(**kwargs)  # type: ignore[arg-type]


__all__ = ["HashEmbedder", "InMemoryStore", "fake_engine"]
