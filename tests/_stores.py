"""Store doubles shared by the snapshot and vector-index tests (imported by them, not collected)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chatrecall.core._types import Where
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
