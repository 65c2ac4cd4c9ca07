"""Concrete result of :meth:`MemoryStore.get`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._types import Record

__all__ = ["Batch"]


@dataclass(frozen=True, slots=True)
class Batch:
    """Records and (when asked for) their embeddings, row i for record i."""

    records: list[Record]
    embeddings: np.ndarray | None = None
