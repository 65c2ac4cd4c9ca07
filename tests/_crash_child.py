"""Child process of ``test_crash_safety``: writes into embedded Chroma until it is SIGKILLed.

Usage: ``python _crash_child.py <chroma dir> <ack file> <seed>``, or :func:`run_child` in a process forked
from a forkserver that has already imported chatrecall and chromadb (what the test does: each round then
pays for opening the store, not for ~2 s of imports).

Every write is acknowledged by appending one line to the ack file *after*
the call returned, with a single unbuffered ``write()`` (it survives SIGKILL:
the kernel already has it). Lines:

* ``M <id> <user> <session>``  a memory (one line per id of an ``add_many``);
* ``P <id> <user> <session or ->``  a pin;
* ``D <id> <user>``  a private corpus chunk;
* ``F> <user> <session>`` / ``F< <user> <session>``  a session forget started / returned.

The module also holds :func:`check_consistency`, used by the parent after
reopening the store, so that the checks and the writer stay side by side.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

DIM = 64
USERS = tuple(f"user{i}" for i in range(6))
WORDS = (
    "we", "use", "Postgres", "for", "billing", "the", "cheese", "project", "Zanzibar", "launch", "on", "Friday",
    "ECONNREFUSED", "in", "config.yaml", "parse_notes()", "Marie", "visits", "Lyon", "deploy", "with", "Helm",
    "TriBridConfig", "is", "slow", "v2.3.1", "ticket", "#4821",
)
#: Rows per user that the vector index may leave unreachable (see check_consistency).
ANN_SLACK = 2
MAX_LIFETIME_S = 120.0  # the parent kills us long before; never outlive a crashed parent


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + f" (note {n})"


def main(path: str, ack_path: str, seed: int) -> None:
    from chatrecall import ChatRecall, Turn
    from chatrecall.adapters.chroma import ChromaStore
    from chatrecall.testing import HashEmbedder

    rng = random.Random(seed)
    store = ChromaStore(path=path)
    cr = ChatRecall(store=store, embedder=HashEmbedder(dim=DIM))
    fd = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def ack(lines: Iterable[str]) -> None:
        data = "".join(line + "\n" for line in lines).encode()
        if data:
            os.write(fd, data)  # one unbuffered write: in the kernel before the next op starts

    ack(["READY"])
    n = 0
    deadline = time.monotonic() + MAX_LIFETIME_S
    while time.monotonic() < deadline:
        n += 1
        r = rng.random()
        user = rng.choice(USERS)
        session = f"r{seed}s{rng.randint(0, 3)}"
        if r < 0.80:
            turns = []
            for _ in range(rng.choice((1, 1, 3, 10, 40, 120))):
                u = rng.choice(USERS) if rng.random() < 0.5 else user
                turns.append(Turn(text=_text(rng, n), user_id=u, session_id=session, role=rng.choice(("user", "assistant"))))
                n += 1
            ids = cr.add_many(turns)
            ack(f"M {i} {t.user_id} {t.session_id}" for i, t in zip(ids, turns))
        elif r < 0.88:
            sess = session if rng.random() < 0.5 else None
            try:
                pin = cr.pin(f"pin {n}: " + _text(rng, n)[:60], user_id=user, session_id=sess)
            except Exception as exc:  # PinLimitError: full is fine, nothing written
                if type(exc).__name__ != "PinLimitError":
                    raise
                continue
            ack([f"P {pin.id} {user} {sess or '-'}"])
        elif r < 0.94:
            ids = cr.add_documents([_text(rng, n) * 20], user_id=user)
            ack(f"D {i} {user}" for i in ids)
        else:
            ack([f"F> {user} {session}"])
            try:
                cr.forget(user, session)
            except Exception as exc:
                if type(exc).__name__ != "NotFoundError":
                    raise
            ack([f"F< {user} {session}"])


def run_child(path: str, ack_path: str, seed: int, err_path: str) -> None:
    """:func:`main` in a forked child, its stderr (a traceback if it fails) going to ``err_path``."""
    fd = os.open(err_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(fd, 2)
    os.close(fd)
    main(path, ack_path, seed)


# ---------------------------------------------------------------- parent side
@dataclass
class Acked:
    """What the child acknowledged, replayed in order."""

    mem: dict[str, tuple[str, str]] = field(default_factory=dict)
    pins: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    docs: dict[str, str] = field(default_factory=dict)
    #: ids whose presence is unknown: a forget of their session started but was not acknowledged
    maybe_gone: set[str] = field(default_factory=set)
    writes: int = 0

    def replay(self, text: str) -> None:
        lines = text.split("\n")
        if lines and lines[-1] != "":
            lines = lines[:-1]  # a torn last line was never acknowledged (cannot happen with one write)
        pending: tuple[str, str] | None = None
        for line in lines:
            parts = line.split(" ")
            kind = parts[0]
            if kind == "M":
                self.mem[parts[1]] = (parts[2], parts[3])
                self.maybe_gone.discard(parts[1])
                self.writes += 1
            elif kind == "P":
                self.pins[parts[1]] = (parts[2], None if parts[3] == "-" else parts[3])
                self.maybe_gone.discard(parts[1])
                self.writes += 1
            elif kind == "D":
                self.docs[parts[1]] = parts[2]
                self.writes += 1
            elif kind == "F>":
                pending = (parts[1], parts[2])
            elif kind == "F<":
                user, session = parts[1], parts[2]
                for table in (self.mem, self.pins):
                    for rid in [i for i, (u, s) in table.items() if u == user and s == session]:
                        del table[rid]
                        self.maybe_gone.discard(rid)
                pending = None
                self.writes += 1
        if pending is not None:  # killed mid-forget: those records may or may not be there
            user, session = pending
            for table in (self.mem, self.pins):
                self.maybe_gone |= {i for i, (u, s) in table.items() if u == user and s == session}


def _not_found_by_own_vector(store: Any, user: str, ids: set[str]) -> set[str]:
    """The ids among ``ids`` that a query by their own stored vector (among the user's rows) does not return."""
    from chatrecall.core._types import COLLECTION_MEMORIES

    if not ids:
        return set()
    batch = store.get(COLLECTION_MEMORIES, ids=sorted(ids), include_embeddings=True)
    assert batch.embeddings is not None
    found = {rec.id for rec, emb in zip(batch.records, batch.embeddings)
             if rec.id in {h.record.id for h in store.query(COLLECTION_MEMORIES, emb, 5, {"user_id": user})}}
    return ids - found


def check_consistency(store: Any, acked: Acked, engine_factory: Any) -> dict[str, int]:
    """Assert the reopened store is consistent and holds every acknowledged write.

    Returns counts for the report.
    """
    import numpy as np

    from chatrecall.core._types import COLLECTION_CORPUS, COLLECTION_MEMORIES, COLLECTION_PINS

    out: dict[str, int] = {}
    for coll in (COLLECTION_MEMORIES, COLLECTION_PINS, COLLECTION_CORPUS):
        batch = store.get(coll, include_embeddings=True)
        recs = batch.records
        ids = [r.id for r in recs]
        assert len(ids) == len(set(ids)), f"{coll}: duplicate ids"
        assert store.count(coll) == len(recs), f"{coll}: count() disagrees with get()"
        if recs:
            emb = batch.embeddings
            assert emb is not None and emb.shape == (len(recs), DIM), f"{coll}: embeddings missing"
            assert np.isfinite(emb).all()
            assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-3), f"{coll}: torn embedding"
        for r in recs:  # no orphan: every row carries its text and metadata
            assert r.text and r.user_id in USERS and r.role, f"{coll}: orphan row {r}"
            assert r.session_id or coll == COLLECTION_PINS, f"{coll}: row without session {r}"  # global pin: ''
            assert coll != COLLECTION_MEMORIES or r.role in ("user", "assistant"), f"bad role {r}"
            assert r.timestamp > 0
        out[coll] = len(recs)
    stored_mem = {r.id: r for r in store.get(COLLECTION_MEMORIES).records}
    stored_pins = {r.id for r in store.get(COLLECTION_PINS).records}
    stored_docs = {r.id for r in store.get(COLLECTION_CORPUS).records}
    lost_mem = [i for i in acked.mem if i not in stored_mem and i not in acked.maybe_gone]
    lost_pins = [i for i in acked.pins if i not in stored_pins and i not in acked.maybe_gone]
    lost_docs = [i for i in acked.docs if i not in stored_docs]
    assert not lost_mem, f"{len(lost_mem)} acknowledged memories lost, e.g. {lost_mem[:3]}"
    assert not lost_pins, f"{len(lost_pins)} acknowledged pins lost"
    assert not lost_docs, f"{len(lost_docs)} acknowledged corpus chunks lost"
    for rid, (user, session) in acked.mem.items():
        if rid in stored_mem:
            assert (stored_mem[rid].user_id, stored_mem[rid].session_id) == (user, session)

    # The rebuilt per-user index holds every stored record with its entities,
    # and the vector index finds every stored record (HNSW caught up with the log).
    cr = engine_factory(store)
    try:
        for user in USERS:
            mine = {rid: r for rid, r in stored_mem.items() if r.user_id == user}
            assert cr.count(user) == len(mine)
            idx = cr._state(user).index
            assert set(idx.pos) == set(mine), f"{user}: index and store disagree"
            for rid, r in mine.items():
                # Entities are computed at write time and stored with the row (not recomputed
                # here: the extractor of another version may differ); the index must carry them.
                assert len(r.entities) == len(set(r.entities))
                p = idx.pos[rid]
                assert idx.records[p].entities == r.entities
                for key in r.entities[:24]:
                    assert p in idx._ent[key], f"{rid}: entity {key!r} not indexed"
            if mine:
                q = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
                hits = store.query(COLLECTION_MEMORIES, q, len(mine), {"user_id": user})
                missed = set(mine) - {h.record.id for h in hits}
                unfound = _not_found_by_own_vector(store, user, missed)
                # HNSW is approximate: a query for all of a user's rows may pass over a few rows that a query by
                # their own vector finds, and a graph may leave a node or two unreachable. A log that the index
                # did not replay after the kill misses the whole tail of the writes, far more than this.
                assert len(unfound) <= ANN_SLACK, (
                    f"{user}: vector index misses records: {len(missed)} of {len(mine)} not returned, "
                    f"{len(unfound)} of them not found by their own vector either, e.g. {sorted(unfound)[:3]}")
        # and the reopened store takes writes and answers reads
        rid = cr.add("after the crash we still use Postgres", user_id=USERS[0], session_id="after")
        res = cr.retrieve("what did we say about Postgres?", user_id=USERS[0], route="memory", k=50)
        assert not res.degraded
        cr.forget(USERS[0], "after")
        assert rid not in {r.id for r in store.get(COLLECTION_MEMORIES, ids=[rid]).records}
    finally:
        cr.close()
    return out


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
