"""Concurrency: 8 threads adding and retrieving on one ChatRecall instance.

Each thread owns two users and also writes to one user shared by all threads
(so the per-user lock and the write path are contended). Operations are a mix
of single adds, small mixed-user batches, pins, gated retrieves (forced to
memory or both) and searches. At the end:

* no thread raised;
* ``cr.count(user)`` is exactly the number of distinct turns written for the user;
* no read ever returned another user's item (checked by id against what the
  owning thread wrote, and by the record's ``user_id``);
* the engine's cached index of every user equals what the store holds.

Backends: the in-memory fake (10,000 operations), embedded Chroma and a
``chroma run`` server (1,600 operations each by default, 10,000 each with
``CHATRECALL_STRESS=full``). The embedder is the hash fake: the store and
the engine are what is under test. Timings are printed (``-s``).
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from chatrecall import ChatRecall, Gate, PinConfig, PinLimitError, RetrievalConfig, Turn
from chatrecall.core._types import COLLECTION_MEMORIES
from chatrecall.testing import HashEmbedder, InMemoryStore

FULL = os.environ.get("CHATRECALL_STRESS") == "full"
THREADS = 8
WORDS = (
    "Postgres", "billing", "cheese", "Zanzibar", "launch", "Friday", "ECONNREFUSED", "config.yaml", "Marie",
    "Lyon", "Helm", "deploy",
)
GATE = Gate()


def _engine(store: Any, **kw: Any) -> ChatRecall:
    # A generous phase-1 budget: under 8-way contention a slow lookup would be skipped
    # (and noted), which is allowed but would make the isolation check vacuous.
    return ChatRecall(store=store, embedder=HashEmbedder(dim=64), gate=GATE, pins=PinConfig(max_pins=50),
                      retrieval=RetrievalConfig(phase1_timeout_ms=30_000), **kw)


class Ledger:
    """What each thread wrote, for the final exact counts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.mem: dict[str, set[str]] = defaultdict(set)  # user -> ids
        self.pins: dict[str, set[str]] = defaultdict(set)

    def wrote(self, user: str, ids: list[str] | set[str], table: str = "mem") -> None:
        with self.lock:
            getattr(self, table)[user].update(ids)

    def owner_of(self) -> dict[str, str]:
        with self.lock:
            return {i: u for u, ids in self.mem.items() for i in ids}


def run_threads(cr: ChatRecall, ops_total: int, seed: int = 7) -> dict[str, Any]:
    ledger = Ledger()
    errors: list[BaseException] = []
    stats: dict[str, int] = defaultdict(int)
    stats_lock = threading.Lock()
    per_thread = ops_total // THREADS
    shared = "shared-user"
    start = threading.Barrier(THREADS)

    def check(user: str, items: Any, mine: set[str]) -> None:
        for it in items:
            assert it.record is not None and it.record.user_id == user, f"{user} got {it.record and it.record.user_id}"
            assert it.id in mine or it.source == "corpus", f"{user} got an id it never wrote"

    def work(t: int) -> None:
        rng = random.Random(seed * 100 + t)
        users = [f"t{t}-a", f"t{t}-b"]
        local: dict[str, set[str]] = defaultdict(set)
        counts: dict[str, int] = defaultdict(int)
        try:
            start.wait()
            for n in range(per_thread):
                r = rng.random()
                user = rng.choice(users)
                text = f"t{t} op{n} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8)))
                if r < 0.25:
                    rid = cr.add(text, user_id=user, session_id=f"s{n % 3}")
                    local[user].add(rid)
                    ledger.wrote(user, [rid])
                    counts["add"] += 1
                elif r < 0.33:
                    turns = [Turn(text=f"{text} #{j}", user_id=rng.choice([*users, shared]), session_id="batch")
                             for j in range(rng.randint(2, 5))]
                    ids = cr.add_many(turns)
                    for rid, turn in zip(ids, turns):
                        local[turn.user_id].add(rid)
                        ledger.wrote(turn.user_id, [rid])
                    counts["add_many"] += 1
                elif r < 0.35:
                    try:
                        pin = cr.pin(f"pin {t}/{n}", user_id=user)
                        ledger.wrote(user, [pin.id], "pins")
                    except PinLimitError:
                        pass
                    counts["pin"] += 1
                elif r < 0.85:
                    res = cr.retrieve(f"remember what we said about {rng.choice(WORDS)}?", user_id=user,
                                      session_id=f"s{n % 3}", route=rng.choice(("memory", "both")), k=8)
                    assert not res.degraded, res.notes
                    check(user, res.items, local[user])
                    check(user, res.recent, local[user])
                    assert all(p.user_id == user for p in res.pins)
                    counts["retrieve"] += 1
                else:
                    target = shared if rng.random() < 0.3 else user
                    items = cr.search(rng.choice(WORDS), user_id=target, k=10)
                    if target == shared:
                        assert all(i.record is not None and i.record.user_id == shared for i in items)
                    else:
                        check(target, items, local[target])
                    counts["search"] += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            with stats_lock:
                for k, v in counts.items():
                    stats[k] += v

    t0 = time.perf_counter()
    threads = [threading.Thread(target=work, args=(t,), name=f"worker{t}") for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]

    # Exact final counts and no stray rows.
    total = 0
    for user, ids in ledger.mem.items():
        assert cr.count(user) == len(ids), f"{user}: count {cr.count(user)} != {len(ids)} written"
        got = {r.id for r in cr.store.get(COLLECTION_MEMORIES, where={"user_id": user}).records}
        assert got == ids
        total += len(ids)
    assert cr.store.count(COLLECTION_MEMORIES) == total
    for user, pids in ledger.pins.items():
        assert {p.id for p in cr.pins(user)} == pids
    # The cache agrees with the store (no write landed in a stale index only, none was missed).
    for user, st in list(cr._users.items()):
        assert set(st.index.pos) == ledger.mem.get(user, set()), f"{user}: cached index differs from the store"
    ops = sum(stats.values())
    assert ops == per_thread * THREADS
    return {"ops": ops, "seconds": round(elapsed, 2), "ops_per_s": round(ops / elapsed), "memories": total,
            **dict(stats)}


def test_threads_on_fakes() -> None:
    cr = _engine(InMemoryStore())
    out = run_threads(cr, 10_000 if not FULL else 50_000)
    print(f"\n[concurrency/fakes] {out}")
    assert out["ops"] >= 10_000


def test_threads_on_fakes_with_cache_eviction() -> None:
    """A cache smaller than the user count: states are evicted and rebuilt while threads write."""
    cr = _engine(InMemoryStore(), max_cached_users=3)
    out = run_threads(cr, 1_600, seed=11)
    print(f"\n[concurrency/fakes+eviction] {out}")


def _chroma_ops() -> int:
    # A Chroma upsert costs ~30 ms (it syncs to disk) and writes are a third of the mix.
    return 10_000 if FULL else 1_600


def test_threads_on_embedded_chroma(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    from chatrecall.adapters.chroma import ChromaStore

    store = ChromaStore(path=tmp_path / "db")
    cr = _engine(store)
    try:
        out = run_threads(cr, _chroma_ops(), seed=3)
    finally:
        cr.close()
        store.close()
    print(f"\n[concurrency/embedded chroma] {out}")


@pytest.mark.server
def test_threads_on_chroma_server(chroma_server: str) -> None:
    pytest.importorskip("chromadb")
    from chatrecall.adapters.chroma import ChromaStore

    store = ChromaStore(url=chroma_server, namespace=f"conc{uuid.uuid4().hex[:10]}", timeout_s=30.0)
    cr = _engine(store)
    try:
        out = run_threads(cr, _chroma_ops(), seed=5)
    finally:
        cr.close()
        store.close()
    print(f"\n[concurrency/chroma server] {out}")


# ---------------------------------------------------------------- bounded resources
def test_caches_stay_bounded_under_many_users_and_messages() -> None:
    """Reduced variant of benchmarks/bench_memory_flat.py: sizes only, no timing.

    3,000 retrieves, each with a message never seen before, spread over 60
    users with room for 8 in the cache and 40 sessions each: every structure
    that grows with traffic must stay at its cap.
    """
    users, cached, sessions = 60, 8, 40
    cr = ChatRecall(store=InMemoryStore(), embedder=HashEmbedder(dim=64), gate=GATE, max_cached_users=cached)
    cr.metrics = type(cr.metrics)(window=500, max_conversations=100, max_days=5)  # small caps, reached quickly
    for u in range(users):
        cr.add_many([Turn(text=f"user {u} fact {i} about {WORDS[(u + i) % len(WORDS)]}", user_id=f"u{u}",
                          session_id=f"s{i % 3}") for i in range(5)])
    seen_max: dict[str, int] = defaultdict(int)
    for n in range(3000):
        msg = ("no, that's wrong, I meant " if n % 7 == 0 else "remember ") + f"{WORDS[n % len(WORDS)]} #{n}?"
        cr.retrieve(msg, user_id=f"u{n % users}", session_id=f"s{n % sessions}")
        if n % 50 == 0:
            m = cr.metrics
            for name, size in (("users", len(cr._users)), ("hist", max(len(h) for h in m._hist.values())),
                               ("conv", len(m._conv)), ("days", len(m._days)),
                               ("pending", max(len(st.correction_pending) for st in list(cr._users.values())))):
                seen_max[name] = max(seen_max[name], size)
    assert seen_max["users"] <= cached
    assert seen_max["hist"] <= 500
    assert seen_max["conv"] <= 100
    assert seen_max["days"] <= 5
    assert seen_max["pending"] <= sessions
    assert len(cr.metrics._counters) < 200  # counter names come from a fixed vocabulary, not from input
    # Evicted users come back intact from the store.
    assert all(cr.count(f"u{u}") == 5 for u in range(users))
    assert len(cr.search("fact", user_id="u0", k=10)) == 5
