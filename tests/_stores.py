"""Store doubles shared by the snapshot, vector-index and outage tests (imported by them, not collected)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chatrecall.core._types import Record, Where
from chatrecall.testing import InMemoryStore


class SnapStore(InMemoryStore):
    """The in-memory store with a snapshot directory and an ids-only read, counting reads."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.snapshot_dir = folder
        self.full_reads = 0

    def ids(self, collection: str, where: Where | None = None) -> list[str]:
        return [r.id for r in super().get(collection, where=where).records]

    def get(self, collection: str, *, ids: Sequence[str] | None = None, where: Where | None = None,
            include_embeddings: bool = False) -> Any:
        if ids is None and include_embeddings:
            self.full_reads += 1
        return super().get(collection, ids=ids, where=where, include_embeddings=include_embeddings)


class DownStore(InMemoryStore):
    """The in-memory store as a server that can go down: every call raises ``StoreUnavailableError`` while
    ``down`` is set. ``lands``: a write that fails was applied anyway (a request that timed out after the
    server wrote it), so a retry must not duplicate it. ``shared``: asked like a Chroma server (a count probe
    and an ids-only read on every search)."""

    def __init__(self, *, shared: bool = False) -> None:
        super().__init__()
        self.down = False
        self.lands = False
        self.shared = shared
        self.upserts: list[list[str]] = []  # the ids of each write that reached the store, in order

    def _check(self, what: str) -> None:
        if self.down:
            from chatrecall import StoreUnavailableError

            raise StoreUnavailableError(f"test server is unavailable ({what})")

    def upsert(self, collection: str, records: Sequence[Record], embeddings: Any) -> None:
        if self.down and self.lands:
            super().upsert(collection, records, embeddings)
        self._check(f"upsert into {collection!r}")
        super().upsert(collection, records, embeddings)
        if collection == "memories":
            self.upserts.append([r.id for r in records])

    def query(self, collection: str, embedding: Any, k: int, where: Where) -> Any:
        self._check(f"query {collection!r}")
        return super().query(collection, embedding, k, where)

    def get(self, collection: str, *, ids: Sequence[str] | None = None, where: Where | None = None,
            include_embeddings: bool = False) -> Any:
        self._check(f"get from {collection!r}")
        return super().get(collection, ids=ids, where=where, include_embeddings=include_embeddings)

    def delete(self, collection: str, *, ids: Sequence[str] | None = None, where: Where | None = None) -> int:
        self._check(f"delete from {collection!r}")
        return super().delete(collection, ids=ids, where=where)

    def count(self, collection: str, where: Where | None = None) -> int:
        self._check(f"count {collection!r}")
        return super().count(collection, where)

    def ids(self, collection: str, where: Where | None = None) -> list[str]:
        self._check(f"ids of {collection!r}")
        return [r.id for r in super().get(collection, where=where).records]
