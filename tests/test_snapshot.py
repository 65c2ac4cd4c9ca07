"""Index snapshots: round trip, stale detection, corruption, isolation (core/_snapshot.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chatrecall.core import ChatRecall
from chatrecall.core import _snapshot as snap
from chatrecall.core._index import UserIndex
from chatrecall.core._types import Where
from chatrecall.testing import HashEmbedder, InMemoryStore


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


def _fill(cr: ChatRecall, user: str, n: int, tag: str = "") -> None:
    cr.add_many([{"text": f"{tag}turn {i} about Paris and Alice's dog {i % 7} last week", "user_id": user,
                  "session_id": f"s{i // 10}", "role": "user" if i % 2 else "assistant",
                  "metadata": {"topic": f"t{i % 3}"} if i % 4 == 0 else None} for i in range(n)])


def _engine(store: SnapStore, min_records: int = 10) -> ChatRecall:
    cr = ChatRecall(store=store, embedder=HashEmbedder())
    cr._snapshots.min_records = min_records
    return cr


def _same(a: UserIndex, b: UserIndex) -> None:
    assert [r for r in a.records] == [r for r in b.records]
    assert a.pos == b.pos
    assert set(vars(a)) == set(vars(b))
    for name, va in vars(a).items():
        vb = getattr(b, name)
        if isinstance(va, np.ndarray):
            np.testing.assert_array_equal(va, vb, err_msg=name)
        elif not name.endswith("_np"):
            assert va == vb, name
            assert type(va) is type(vb), name


def test_round_trip_equals_fresh_build_and_skips_the_full_read(tmp_path: Path) -> None:
    store = SnapStore(tmp_path / "snaps")
    cr = _engine(store)
    _fill(cr, "u1", 60)
    cr.close()  # writes the snapshot of the changed user
    assert list((tmp_path / "snaps").glob("*.json"))
    cr2 = _engine(store)
    before = store.full_reads
    a = cr2._state("u1").index
    assert store.full_reads == before  # served from the snapshot
    assert cr2._snapshots.loaded == 1
    fresh = UserIndex(a.dim)
    batch = store.get("memories", where={"user_id": "u1"}, include_embeddings=True)
    fresh.add(batch.records, batch.embeddings)
    _same(a, fresh)
    # searching a restored index gives the same answer as a rebuilt one
    q = "what about Alice's dog last week?"
    cold = _engine(SnapStore(tmp_path / "none"))
    _fill(cold, "u1", 60)
    assert [i.id for i in cr2.search(q, user_id="u1", k=5)] == [i.id for i in cold.search(q, user_id="u1", k=5)]
    # and it keeps working: new writes land in the restored index
    _fill(cr2, "u1", 3, tag="more ")
    assert len(cr2._state("u1").index) == 63


def test_stale_snapshot_is_rebuilt(tmp_path: Path) -> None:
    store = SnapStore(tmp_path / "snaps")
    cr = _engine(store)
    _fill(cr, "u1", 40)
    cr.close()
    writer = _engine(store, min_records=10**9)  # another process: writes, never snapshots
    _fill(writer, "u1", 2, tag="late ")
    cr2 = _engine(store)
    idx = cr2._state("u1").index
    assert len(idx) == 42 and cr2._snapshots.rejected == 1
    # a deletion with the same count elsewhere is seen too (ids digest)
    cr2.close()
    store.delete("memories", ids=[idx.records[0].id])
    _fill(writer, "u1", 1, tag="swap ")
    cr3 = _engine(store)
    ids3 = set(cr3._state("u1").index.pos)
    assert ids3 == set(store.ids("memories", {"user_id": "u1"}))


def test_upsert_same_id_and_forget_invalidate(tmp_path: Path) -> None:
    store = SnapStore(tmp_path / "snaps")
    cr = _engine(store)
    _fill(cr, "u1", 30)
    cr.upsert("k1", "first text", user_id="u1", session_id="kv")
    cr.close()
    cr2 = _engine(store)
    cr2._state("u1")
    cr2.upsert("k1", "second text", user_id="u1", session_id="kv")
    assert not list((tmp_path / "snaps").glob("*.json"))  # same ids, new text: the snapshot went
    cr3 = _engine(store)
    assert cr3._state("u1").index.records[cr3._state("u1").index.pos["k1"]].text == "second text"
    cr3.close()
    cr3.forget("u1")
    assert not list((tmp_path / "snaps").glob("*.json"))


@pytest.mark.parametrize("damage", ["truncate", "flip", "json", "swap"])
def test_corrupted_snapshot_is_rebuilt(tmp_path: Path, damage: str) -> None:
    store = SnapStore(tmp_path / "snaps")
    cr = _engine(store)
    _fill(cr, "u1", 40)
    cr.close()
    key = snap.snapshot_key("u1")
    npz, js = tmp_path / "snaps" / f"{key}.npz", tmp_path / "snaps" / f"{key}.json"
    if damage == "truncate":
        npz.write_bytes(npz.read_bytes()[:-500])
    elif damage == "flip":
        raw = bytearray(npz.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        npz.write_bytes(bytes(raw))
    elif damage == "json":
        js.write_text(js.read_text()[:-10])
    else:  # arrays of another write under this header
        other = _engine(SnapStore(tmp_path / "other"))
        _fill(other, "u1", 40)
        other.close()
        npz.write_bytes((tmp_path / "other" / f"{key}.npz").read_bytes())
    cr2 = _engine(store)
    idx = cr2._state("u1").index
    assert len(idx) == 40 and cr2._snapshots.loaded == 0
    assert set(idx.pos) == set(store.ids("memories", {"user_id": "u1"}))


def test_never_serves_another_users_snapshot(tmp_path: Path) -> None:
    store = SnapStore(tmp_path / "snaps")
    cr = _engine(store)
    _fill(cr, "alice", 30)
    _fill(cr, "bob", 30, tag="bob ")
    cr.close()
    ka, kb = snap.snapshot_key("alice"), snap.snapshot_key("bob")
    folder = tmp_path / "snaps"
    # put alice's files under bob's name: the header names alice, so bob's load refuses it
    for suffix in (".npz", ".json"):
        (folder / f"{kb}{suffix}").write_bytes((folder / f"{ka}{suffix}").read_bytes())
    cr2 = _engine(store)
    bob = cr2._state("bob").index
    assert all(r.user_id == "bob" for r in bob.records) and len(bob) == 30
    assert cr2._snapshots.loaded == 0
    alice = cr2._state("alice").index
    assert all(r.user_id == "alice" for r in alice.records)


def test_small_users_and_stores_without_snapshot_dir_write_nothing(tmp_path: Path) -> None:
    store = SnapStore(tmp_path / "snaps")
    cr = _engine(store, min_records=1000)
    _fill(cr, "u1", 20)
    cr.close()
    assert not (tmp_path / "snaps").exists()
    plain = ChatRecall(store=InMemoryStore(), embedder=HashEmbedder())
    assert not plain._snapshots.enabled


def test_embedded_chroma_snapshot_lives_under_the_store(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    from chatrecall.adapters.chroma import ChromaStore

    store = ChromaStore(path=tmp_path / "db")
    cr = _engine(store)  # type: ignore[arg-type]
    _fill(cr, "u1", 30)
    cr.close()
    store.close()
    assert store.snapshot_dir is not None and store.snapshot_dir.is_relative_to(tmp_path / "db")
    store2 = ChromaStore(path=tmp_path / "db")
    cr2 = _engine(store2)  # type: ignore[arg-type]
    assert len(cr2._state("u1").index) == 30 and cr2._snapshots.loaded == 1
    assert ChromaStore(path=tmp_path / "db2", snapshots=False).snapshot_dir is None
    store2.close()
