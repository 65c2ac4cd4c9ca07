"""The vector index port: a shortlist for large users, kept up to date, snapshotted, never fatal.

Fast tests use the shipped exact double (ExactVectorIndex); the last ones run the real usearch
adapter over embedded Chroma with the real model, as ``connect()`` wires it.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _stores import SnapStore

from chatrecall.core import ChatRecall, ConfigError, ExactVectorIndexFactory, VectorIndex, VectorIndexFactory
from chatrecall.core import _snapshot as snap
from chatrecall.core._index import UserIndex
from chatrecall.core._types import Record
from chatrecall.testing import HashEmbedder


def _fill(cr: ChatRecall, user: str, n: int) -> None:
    cr.add_many([{"text": f"turn {i} about Paris and Alice's dog {i % 7} last week", "user_id": user,
                  "session_id": f"s{i // 10}"} for i in range(n)])


@pytest.fixture(autouse=True)
def _fresh_fingerprint() -> Any:
    """Tests here shrink UserIndex.EXACT_MAX, which the (cached) snapshot code fingerprint includes."""
    snap.code_fingerprint.cache_clear()
    yield
    snap.code_fingerprint.cache_clear()


def _records(n: int, start: int = 0) -> list[Record]:
    return [Record(id=f"r{i}", text=f"turn {i}", user_id="u", session_id=f"s{i // 10}", role="user",
                   timestamp=float(i)) for i in range(start, start + n)]


def _vectors(n: int, dim: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _small_limits(idx: UserIndex) -> UserIndex:
    """Make a few hundred vectors count as a large user (the shortlist paths run above EXACT_MAX)."""
    idx.EXACT_MAX = 50  # type: ignore[misc]
    idx.SHORTLIST_MIN = 10  # type: ignore[misc]
    idx.SHORTLIST_PER_K = 2  # type: ignore[misc]
    return idx


def _exact_top(vecs: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    return np.argsort(-(vecs @ q), kind="stable")[:k].tolist()


def test_the_shipped_double_satisfies_the_ports() -> None:
    factory = ExactVectorIndexFactory()
    assert isinstance(factory, VectorIndexFactory)
    assert isinstance(factory.create(4), VectorIndex)


def test_large_user_is_shortlisted_by_the_vector_index_and_kept_up_to_date() -> None:
    factory = ExactVectorIndexFactory()
    idx = _small_limits(UserIndex(16, ann=factory))
    vecs = _vectors(300, 16, 0)
    idx.add(_records(300), vecs)
    assert idx.vector_index is None  # built on first need, not on every add
    q = _vectors(1, 16, 1)[0]
    pos, sims = idx.dense_topk(q, 10)
    assert pos.tolist() == _exact_top(vecs, q, 10)
    np.testing.assert_allclose(sims, (vecs @ q)[pos], rtol=1e-6)
    ann = factory.made[0]
    assert len(factory.made) == 1 and ann.searches == 1 and len(ann) == 300
    # new memories join the index at the next search; a delete rebuilds it without the dropped ones
    more = _vectors(5, 16, 2)
    idx.add(_records(5, start=300), more)
    pos, _ = idx.dense_topk(more[3], 1)
    assert pos.tolist() == [303] and len(ann) == 305
    idx.remove(["r303", "r0"])
    pos, _ = idx.dense_topk(more[3], 3)
    assert len(factory.made) == 2 and len(factory.made[1]) == 303
    assert all(idx.records[p].id != "r303" for p in pos.tolist())


def test_small_user_is_scanned_exactly_without_building_an_index() -> None:
    factory = ExactVectorIndexFactory()
    idx = UserIndex(16, ann=factory)
    vecs = _vectors(200, 16, 3)
    idx.add(_records(200), vecs)
    q = _vectors(1, 16, 4)[0]
    assert idx.dense_topk(q, 5)[0].tolist() == _exact_top(vecs, q, 5)
    assert factory.made == [] and idx.sync_vector_index() is None


def test_a_failing_vector_index_warns_once_and_the_builtin_shortlist_serves() -> None:
    factory = ExactVectorIndexFactory()
    idx = _small_limits(UserIndex(16, ann=factory))
    plain = _small_limits(UserIndex(16))
    vecs = _vectors(300, 16, 5)
    idx.add(_records(300), vecs)
    plain.add(_records(300), vecs)
    q = _vectors(1, 16, 6)[0]
    idx.dense_topk(q, 10)
    factory.made[0].fail = True
    with pytest.warns(RuntimeWarning, match="vector index .* failed .* sign-bit shortlist"):
        broken = idx.dense_topk(q, 10)
    assert broken[0].tolist() == plain.dense_topk(q, 10)[0].tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert idx.dense_topk(q, 10)[0].tolist() == broken[0].tolist()  # not tried again
    assert idx.vector_index is None


def test_engine_rejects_a_vector_index_that_is_not_a_factory() -> None:
    with pytest.raises(ConfigError, match=r"vector_index=.*VectorIndexFactory"):
        ChatRecall(store=SnapStore(Path("/nonexistent")), embedder=HashEmbedder(), vector_index=object())  # type: ignore[arg-type]


def _engine(store: SnapStore, factory: Any) -> ChatRecall:
    cr = ChatRecall(store=store, embedder=HashEmbedder(), vector_index=factory)
    cr._snapshots.min_records = 10
    return cr


class _OtherKind(ExactVectorIndexFactory):
    name = "exact-test-other"


def test_snapshot_carries_the_vector_index_to_the_next_process(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(UserIndex, "EXACT_MAX", 20)
    monkeypatch.setattr(UserIndex, "SHORTLIST_MIN", 10)
    monkeypatch.setattr(UserIndex, "SHORTLIST_PER_K", 1)
    store = SnapStore(tmp_path / "snaps")
    first = ExactVectorIndexFactory()
    cr = _engine(store, first)
    _fill(cr, "u1", 200)
    cr.close()
    header = snap.read_header(tmp_path / "snaps", "u1")
    assert header is not None and header["ann"] == "exact-test"
    q = "what about Alice's dog last week?"
    # same kind: restored from the snapshot, not built again
    again = ExactVectorIndexFactory()
    cr2 = _engine(store, again)
    idx = cr2._state("u1").index
    assert cr2._snapshots.loaded == 1
    assert idx.vector_index is again.made[0] and len(again.made[0]) == 200
    got = [i.id for i in cr2.search(q, user_id="u1", k=5)]
    assert len(again.made) == 1 and again.made[0].searches >= 1
    # another kind (or none): the stored bytes are ignored; the other kind builds its own on first need
    other = _OtherKind()
    cr3 = _engine(store, other)
    assert cr3._state("u1").index.vector_index is None and cr3._snapshots.loaded == 1
    assert [i.id for i in cr3.search(q, user_id="u1", k=5)] == got
    assert len(other.made) == 1 and len(other.made[0]) == 200
    cr4 = _engine(store, None)
    assert [i.id for i in cr4.search(q, user_id="u1", k=5)] == got
    assert cr4._state("u1").index.vector_index is None


def test_usearch_factory_validates_its_settings() -> None:
    pytest.importorskip("usearch")
    from chatrecall.adapters.usearch import UsearchIndexFactory

    for kw, match in (({"dtype": "f64"}, "dtype='f64'"), ({"connectivity": 1}, "connectivity=1"),
                      ({"expansion_search": 0}, "expansion_search=0"), ({"threads": True}, "threads=True")):
        with pytest.raises(ConfigError, match=match):
            UsearchIndexFactory(**kw)


def test_usearch_over_embedded_chroma_with_the_real_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """connect() wires usearch for large users; its graph is snapshotted and restored with the index."""
    pytest.importorskip("usearch")
    pytest.importorskip("chromadb")
    pytest.importorskip("sentence_transformers")
    from chatrecall import connect
    from chatrecall.adapters.usearch import UsearchIndexFactory, UsearchVectorIndex

    monkeypatch.setattr(UserIndex, "EXACT_MAX", 40)
    # a shortlist of at least 40 of the 120 (the engine's: 20 per k, 1,000 at least), still under the user's size so
    # the graph is used: the int8 graph orders near-equal similarities approximately, and with a shortlist of exactly
    # k = 10 the 10th best was once missed (0.064 returned for 0.066, a CI rehearsal under load)
    monkeypatch.setattr(UserIndex, "SHORTLIST_MIN", 40)
    monkeypatch.setattr(UserIndex, "SHORTLIST_PER_K", 1)
    topics = ["the sprint demo", "a flaky CI job", "lunch plans", "the quarterly budget", "a Python import error",
              "the team offsite", "a Kubernetes upgrade", "the coffee machine", "a code review", "the new laptop"]
    turns = [f"Note {i}: we talked about {topics[i % len(topics)]} on day {i}." for i in range(120)]
    turns[77] = "My cat is called Miso and she sleeps on the radiator."
    # warm=False: this test is about the index and its snapshot; the background warm-up has its own tests (and
    # once, in one of eight full-suite runs, this test failed with the warm-up running beside it, not reproduced
    # in 23 runs alone, so the two are kept apart here)
    cr = connect(path=tmp_path / "db", warm=False)
    assert isinstance(cr.vector_index, UsearchIndexFactory)
    cr._snapshots.min_records = 0
    cr.add_many([{"text": t, "user_id": "ana", "session_id": f"s{i // 12}"} for i, t in enumerate(turns)])
    q = "what's my cat called?"
    top = [i.text for i in cr.search(q, user_id="ana", k=3)]
    assert "Miso" in top[0]
    idx = cr._state("ana").index
    assert isinstance(idx.vector_index, UsearchVectorIndex) and len(idx.vector_index) == 120
    qv = cr.embedder.embed_query(q)
    # The HNSW shortlist, rescored exactly: the returned similarities are the exact cosines of their turns, the best
    # turn is the exact best, and at least 9 of the exact top 10 are found. The graph is approximate (int8, and all
    # but the Miso turn sit at cosines of 0.04-0.09 here): a full-suite CI rehearsal (stop 29) once returned the
    # 11th best (0.039) for the 10th (0.052), as an earlier one had with a shortlist of exactly k; the recall of the
    # shortlist at scale is a benchmark figure (bench speed: 99.7 % of the exact top 10 at 100K), not a test.
    pos, sims = idx.dense_topk(qv, 10)
    exact = idx.embeddings @ qv
    np.testing.assert_allclose(sims, exact[pos], rtol=1e-5)
    best10 = np.argsort(-exact, kind="stable")[:10]
    assert pos[0] == best10[0] and len(set(pos.tolist()) & set(best10.tolist())) >= 9, (pos, best10)
    cr.close()
    cr.store.close()

    cr2 = connect(path=tmp_path / "db", warm=False)
    idx2 = cr2._state("ana").index
    assert cr2._snapshots.loaded == 1
    assert isinstance(idx2.vector_index, UsearchVectorIndex) and len(idx2.vector_index) == 120
    assert [i.text for i in cr2.search(q, user_id="ana", k=3)] == top
    cr2.add("We adopted a second cat, Tofu, last week.", user_id="ana", session_id="s99")
    assert "Tofu" in cr2.search("the second cat we adopted", user_id="ana", k=1)[0].text
    assert len(idx2.vector_index) == 121
    cr3 = connect(path=tmp_path / "other", vector_index=None, warm=False)
    assert cr3.vector_index is None
    cr2.close()
    cr2.store.close()
    cr3.close()
    cr3.store.close()
