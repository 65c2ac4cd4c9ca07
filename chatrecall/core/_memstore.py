"""In-memory numpy implementation of :class:`MemoryStore`, for tests and demos."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from ._batch import Batch
from ._errors import InvalidInputError
from ._types import Record, StoreHit, Where

__all__ = ["InMemoryStore", "matches"]


def matches(record: Record, where: Where | None) -> bool:
    """True when ``record`` satisfies the conjunction ``where``."""
    if not where:
        return True
    for key, want in where.items():
        have = getattr(record, key) if key in Record.__slots__ else record.metadata.get(key)
        if isinstance(want, tuple):
            if have not in want:
                return False
        elif have != want:
            return False
    return True


class _Collection:
    __slots__ = ("records", "vectors", "pos")

    def __init__(self, dim: int) -> None:
        self.records: list[Record] = []
        self.vectors = np.zeros((0, dim), dtype=np.float32)
        self.pos: dict[str, int] = {}


class InMemoryStore:
    """A thread-safe, process-local store with brute-force cosine search.

    Example:
        >>> store = InMemoryStore()
        >>> store.count("memories")
        0
    """

    def __init__(self) -> None:
        self._cols: dict[str, _Collection] = {}
        self._lock = threading.RLock()
        self.fail_next: Exception | None = None  # tests inject a backend failure here

    def _col(self, name: str, dim: int | None = None) -> _Collection | None:
        col = self._cols.get(name)
        if col is None and dim is not None:
            col = self._cols[name] = _Collection(dim)
        return col

    def _maybe_fail(self) -> None:
        if self.fail_next is not None:
            exc, self.fail_next = self.fail_next, None
            raise exc

    def upsert(self, collection: str, records: Sequence[Record], embeddings: np.ndarray) -> None:
        emb = np.asarray(embeddings, dtype=np.float32)
        if emb.ndim != 2 or emb.shape[0] != len(records):
            raise InvalidInputError(f"embeddings shape {emb.shape} does not match {len(records)} records")
        with self._lock:
            self._maybe_fail()
            if not records:
                return
            col = self._col(collection, emb.shape[1])
            assert col is not None
            new_rows: list[tuple[Record, np.ndarray]] = []
            for rec, vec in zip(records, emb):
                i = col.pos.get(rec.id)
                if i is None:
                    col.pos[rec.id] = len(col.records) + len(new_rows)
                    new_rows.append((rec, vec))
                else:
                    col.records[i] = rec
                    col.vectors[i] = vec
            if new_rows:
                col.records.extend(r for r, _ in new_rows)
                col.vectors = np.vstack([col.vectors, np.stack([v for _, v in new_rows])])

    def query(self, collection: str, embedding: np.ndarray, k: int, where: Where) -> list[StoreHit]:
        with self._lock:
            self._maybe_fail()
            col = self._col(collection)
            if col is None or not col.records or k <= 0:
                return []
            mask = np.fromiter((matches(r, where) for r in col.records), dtype=bool, count=len(col.records))
            idx = np.flatnonzero(mask)
            if idx.size == 0:
                return []
            sims = col.vectors[idx] @ np.asarray(embedding, dtype=np.float32)
            k = min(k, idx.size)
            top = np.argpartition(-sims, k - 1)[:k]
            top = top[np.argsort(-sims[top], kind="stable")]
            return [StoreHit(col.records[idx[t]], float(sims[t])) for t in top]

    def get(
        self,
        collection: str,
        *,
        ids: Sequence[str] | None = None,
        where: Where | None = None,
        include_embeddings: bool = False,
    ) -> Batch:
        with self._lock:
            self._maybe_fail()
            col = self._col(collection)
            if col is None:
                return Batch([], np.zeros((0, 0), dtype=np.float32) if include_embeddings else None)
            if ids is not None:
                rows = [col.pos[i] for i in dict.fromkeys(ids) if i in col.pos]
            else:
                rows = list(range(len(col.records)))
            rows = [i for i in rows if matches(col.records[i], where)]
            recs = [col.records[i] for i in rows]
            emb = col.vectors[rows].copy() if include_embeddings else None
            return Batch(recs, emb)

    def delete(self, collection: str, *, ids: Sequence[str] | None = None, where: Where | None = None) -> int:
        with self._lock:
            self._maybe_fail()
            col = self._col(collection)
            if col is None:
                return 0
            if ids is None and where is None:
                raise InvalidInputError("delete needs ids or where; refusing to delete a whole collection")
            idset = set(ids) if ids is not None else None
            keep = [
                i for i, r in enumerate(col.records)
                if not ((idset is None or r.id in idset) and matches(r, where))
            ]
            removed = len(col.records) - len(keep)
            if removed:
                col.records = [col.records[i] for i in keep]
                col.vectors = col.vectors[keep]
                col.pos = {r.id: i for i, r in enumerate(col.records)}
            return removed

    def count(self, collection: str, where: Where | None = None) -> int:
        with self._lock:
            col = self._col(collection)
            if col is None:
                return 0
            if not where:
                return len(col.records)
            return sum(1 for r in col.records if matches(r, where))
