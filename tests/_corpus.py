"""Helpers shared by the corpus-query tests (imported by them, not collected)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from chatrecall import ChatRecall
from chatrecall.core._types import COLLECTION_CORPUS


def corpus_docs(res: Any) -> list[str]:
    """Document ids of the corpus items the retrieve ranked, best first (injected or not)."""
    items = sorted((i for i in (*res.items, *res.rejected) if i.source == "corpus"), key=lambda i: -i.score)
    return list(dict.fromkeys(i.record.session_id for i in items))


def sent_vectors(engine: ChatRecall, monkeypatch: pytest.MonkeyPatch) -> list[np.ndarray]:
    """Every vector the engine sends to the corpus collection from now on (the list fills as it goes)."""
    sent: list[np.ndarray] = []
    real = engine.store.query

    def query(collection: str, embedding: np.ndarray, k: int, where: Any) -> Any:
        if collection == COLLECTION_CORPUS:
            sent.append(np.asarray(embedding, dtype=np.float64))
        return real(collection, embedding, k, where)

    monkeypatch.setattr(engine.store, "query", query)
    return sent
