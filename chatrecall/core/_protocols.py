"""Ports: the interfaces the core needs from the outside world.

Adapters (Chroma, sentence-transformers, tiktoken, usearch, ...) implement
these; the package ships fakes for tests (:class:`InMemoryStore`,
:class:`HashEmbedder`, :class:`ExactVectorIndex`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ._types import Entity, Record, StoreHit, Where

__all__ = ["Embedder", "EntityExtractor", "MemoryStore", "StoreBatch", "TokenCounter", "VectorIndex",
           "VectorIndexFactory"]


class StoreBatch(Protocol):
    """What :meth:`MemoryStore.get` returns: records and (optionally) embeddings."""

    @property
    def records(self) -> list[Record]: ...

    @property
    def embeddings(self) -> np.ndarray | None: ...


@runtime_checkable
class MemoryStore(Protocol):
    """Persistent storage of records and their embeddings, per collection.

    Collections are named ``memories``, ``pins`` and ``corpus``. Filters are
    :data:`Where` mappings (conjunction of equality / membership), never strings.
    Every method raises :class:`StoreError` (or :class:`StoreUnavailableError`)
    on a backend failure.
    """

    def upsert(self, collection: str, records: Sequence[Record], embeddings: np.ndarray) -> None:
        """Insert or replace ``records`` (row i of ``embeddings`` belongs to record i)."""
        ...

    def query(self, collection: str, embedding: np.ndarray, k: int, where: Where) -> list[StoreHit]:
        """The ``k`` records most similar to ``embedding`` that match ``where``, best first."""
        ...

    def get(
        self,
        collection: str,
        *,
        ids: Sequence[str] | None = None,
        where: Where | None = None,
        include_embeddings: bool = False,
    ) -> StoreBatch:
        """Records by id and/or filter (no order guaranteed)."""
        ...

    def delete(self, collection: str, *, ids: Sequence[str] | None = None, where: Where | None = None) -> int:
        """Delete by id and/or filter; returns how many records were removed."""
        ...

    def count(self, collection: str, where: Where | None = None) -> int:
        """Number of records matching ``where``."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors."""

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Shape ``(len(texts), dim)``, rows L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Shape ``(dim,)``, L2-normalised."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of a text the way the target LLM would."""

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...


@runtime_checkable
class EntityExtractor(Protocol):
    """Finds entities in a text without an LLM."""

    def extract(self, text: str) -> list[Entity]:
        """Entities in order of appearance, deduplicated by key."""
        ...


@runtime_checkable
class VectorIndex(Protocol):
    """An approximate nearest-neighbour index over one user's vectors, keyed by index position.

    The engine uses it only to pick a shortlist for a large user (over
    ``UserIndex.EXACT_MAX`` memories) and scores the shortlist exactly itself,
    so it may trade a little precision for speed. Positions are added in
    order (0, 1, 2, ...); the index is rebuilt when memories are deleted.
    """

    def __len__(self) -> int:
        """Number of vectors added."""
        ...

    def add(self, positions: np.ndarray, vectors: np.ndarray) -> None:
        """Add ``vectors`` (``(m, dim)`` float32, L2-normalised) under ``positions`` (``(m,)`` int64)."""
        ...

    def search(self, qvec: np.ndarray, k: int) -> np.ndarray:
        """Positions of (about) the ``k`` vectors with the largest inner product with ``qvec``, as int64."""
        ...

    def to_bytes(self) -> bytes:
        """The index serialised, for the user's snapshot (see :meth:`VectorIndexFactory.restore`)."""
        ...


@runtime_checkable
class VectorIndexFactory(Protocol):
    """Makes a :class:`VectorIndex` per user, new or from the bytes of a snapshot."""

    @property
    def name(self) -> str:
        """Names the index kind and its settings: a snapshot written by another kind is rebuilt, not restored."""
        ...

    def create(self, dim: int) -> VectorIndex:
        """An empty index for ``dim``-dimensional vectors."""
        ...

    def restore(self, data: bytes, dim: int) -> VectorIndex:
        """The index serialised by :meth:`VectorIndex.to_bytes`."""
        ...
