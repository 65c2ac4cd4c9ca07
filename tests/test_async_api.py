"""The native async API: 200 concurrent conversations, exact results, no cross-user item, a responsive loop."""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatrecall.core import ChatRecall, ConfigError, HashEmbedder, InvalidInputError, NotFoundError, RetrievalConfig
from chatrecall.testing import fake_engine

N_CONVERSATIONS = 200
LAG_LIMIT_S = 0.020
FIXED_NOW = 1_750_000_000.0
ANIMALS = ["cat", "dog", "parrot", "tortoise", "hamster", "rabbit", "ferret", "goldfish"]


class Ticker:
    """Measures event-loop lag: how late ``asyncio.sleep(0.005)`` wakes up, all along the run."""

    def __init__(self, period: float = 0.005) -> None:
        self.period = period
        self.lags: list[float] = []
        self._stop = asyncio.Event()

    async def run(self) -> None:
        while not self._stop.is_set():
            t = time.perf_counter()
            await asyncio.sleep(self.period)
            self.lags.append(max(time.perf_counter() - t - self.period, 0.0))

    def stop(self) -> None:
        self._stop.set()

    def summary(self) -> dict[str, float]:
        lags = sorted(self.lags)
        return {"ticks": len(lags), "p50_ms": statistics.median(lags) * 1e3,
                "p99_ms": lags[int(0.99 * (len(lags) - 1))] * 1e3, "max_ms": lags[-1] * 1e3}


def conversation(i: int) -> tuple[str, list[dict[str, Any]]]:
    user = f"user{i:03d}"
    turns = [
        {"text": f"I keep the spare key in locker {1000 + i}.", "user_id": user, "session_id": "s1"},
        {"text": f"My {ANIMALS[i % len(ANIMALS)]} is called Pip{i}.", "user_id": user, "session_id": "s1"},
        {"text": f"The project codename is Falcon{i}.", "user_id": user, "session_id": "s1", "role": "assistant"},
    ]
    return user, turns


async def run_conversations(cr: ChatRecall, n: int = N_CONVERSATIONS) -> tuple[dict[str, Any], dict[str, float]]:
    ticker = Ticker()
    tick = asyncio.create_task(ticker.run())

    async def one(i: int) -> tuple[str, Any, Any, Any]:
        user, turns = conversation(i)
        await cr.aadd_many(turns)
        await cr.apin(f"Call me agent {i}.", user_id=user)
        found = await cr.asearch("where is the spare key locker?", user_id=user, k=3)
        res = await cr.aretrieve("Remember where I keep the spare key?", user_id=user, session_id="s2")
        pins = await cr.apins(user)
        return user, found, res, pins

    await asyncio.sleep(0.05)  # a few ticks before the load
    out = await asyncio.gather(*(one(i) for i in range(n)))
    ticker.stop()
    await tick
    return {u: (found, res, pins) for u, found, res, pins in out}, ticker.summary()


def check(cr: ChatRecall, results: dict[str, Any], lag: dict[str, float], *, lag_bound: str | None = "p99_ms") -> None:
    """Exact results and isolation always; the loop-lag bound (p99) where the store releases the GIL.

    Embedded Chroma holds the GIL during inserts (its Rust bindings release it only
    on reads: chroma-core/chroma#3873), so no thread pool can keep the loop free
    there; the lag is recorded (``-s``) but not bounded. The p99 is bounded, not the
    max: on a shared 2-core box a single OS-scheduling stall can exceed 20 ms.
    """
    print(f"loop lag: {lag}")
    assert len(results) == N_CONVERSATIONS
    for i in range(N_CONVERSATIONS):
        user = f"user{i:03d}"
        found, res, pins = results[user]
        # Exact: the async result is what the sync API gives for the same state.
        sync = cr.search("where is the spare key locker?", user_id=user, k=3)
        assert [(x.id, round(x.score, 6)) for x in found] == [(x.id, round(x.score, 6)) for x in sync]
        assert found[0].text == f"I keep the spare key in locker {1000 + i}."
        assert res.items and res.items[0].text == found[0].text
        # No cross-user item anywhere.
        for item in (*found, *res.items, *res.recent):
            assert item.record is not None and item.record.user_id == user
        assert [p.text for p in pins] == [f"Call me agent {i}."] == [p.text for p in res.pins]
        assert f"locker {1000 + i}." in res.context and "Falcon" not in res.context.replace(f"Falcon{i}", "")
    if lag_bound is not None:
        assert lag[lag_bound] < LAG_LIMIT_S * 1e3, lag


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()


def _engine(store: Any, embedder: Any) -> ChatRecall:
    # 200 concurrent conversations on 2 cores: the phase-1 time budget (250 ms) would rightly skip some
    # memory lookups (a degraded result); these tests check exact results, so the budget is lifted.
    return ChatRecall(store=store, embedder=embedder, clock=lambda: FIXED_NOW,
                      retrieval=RetrievalConfig(phase1_timeout_ms=30_000))


@pytest.fixture
def embedded_engine(tmp_path: Path, hash_embedder: HashEmbedder) -> Iterator[ChatRecall]:
    pytest.importorskip("chromadb")
    from chatrecall.adapters.chroma import ChromaStore

    cr = _engine(ChromaStore(path=tmp_path / "chroma"), hash_embedder)
    yield cr
    cr.close()


def test_200_conversations_embedded_chroma(embedded_engine: ChatRecall) -> None:
    t0 = time.perf_counter()
    results, lag = asyncio.run(run_conversations(embedded_engine))
    check(embedded_engine, results, lag, lag_bound=None)
    assert time.perf_counter() - t0 < 60


@pytest.mark.server
def test_200_conversations_chroma_server(chroma_server_factory: Any, hash_embedder: HashEmbedder) -> None:
    from chatrecall.adapters.chroma import ChromaStore

    server = chroma_server_factory()
    cr = _engine(ChromaStore(url=server.url, namespace="aio"), hash_embedder)
    try:
        t0 = time.perf_counter()
        results, lag = asyncio.run(run_conversations(cr))
        check(cr, results, lag)
        assert time.perf_counter() - t0 < 60
    finally:
        cr.close()


def test_200_conversations_in_memory_store(hash_embedder: HashEmbedder) -> None:
    from chatrecall.core import InMemoryStore

    cr = _engine(InMemoryStore(), hash_embedder)
    results, lag = asyncio.run(run_conversations(cr))
    check(cr, results, lag, lag_bound="p50_ms")  # pure-Python work in 4 threads: GIL hand-offs lift the p99


@pytest.mark.model
@pytest.mark.server
def test_200_conversations_real_model(chroma_server: str, st_embedder: Any) -> None:
    from chatrecall.adapters.chroma import ChromaStore

    # The session's server (nothing here stops or kills it), in a namespace of this test's own: the store
    # starts empty, as on a private server, without paying for another server's start. The hash-embedder
    # variant above keeps its private server: it bounds the loop's p99 lag, and that bound failed once in a
    # full run on a loaded box while it used the shared server (cause not established; not worth ~2 s).
    cr = _engine(ChromaStore(url=chroma_server, namespace=f"aio_model{uuid.uuid4().hex[:10]}"), st_embedder)
    st_embedder.embed_documents(["warm up"])  # lazy model init is not part of the measurement
    try:
        t0 = time.perf_counter()
        results, lag = asyncio.run(run_conversations(cr))
        check(cr, results, lag, lag_bound="p50_ms")  # tokenisation holds the GIL: p99 is reported, not bounded
        assert time.perf_counter() - t0 < 60
    finally:
        cr.close()


# ---------------------------------------------------------------- unit tests on the fakes
def test_async_methods_match_sync_and_raise_our_errors() -> None:
    cr = fake_engine(clock=lambda: FIXED_NOW)

    async def main() -> None:
        rid = await cr.aadd("We use Postgres for billing", user_id="u1", session_id="s1")
        assert await cr.aadd_many([]) == []
        assert (await cr.aadd_many(t for t in [{"text": "Deploys use Helm", "user_id": "u1", "session_id": "s1"}]))
        docs = await cr.aadd_documents([{"title": "Runbook", "text": "Restart the billing worker with make restart."}])
        assert docs
        hits = await cr.asearch("billing database", user_id="u1")
        assert hits[0].id == rid and hits == cr.search("billing database", user_id="u1")
        res = await cr.aretrieve("Remember which database we use for billing?", user_id="u1")
        assert res.route.value == "memory" and res.items[0].id == rid
        assert [r.text for r in await cr.ahistory("u1", "s1")] == ["We use Postgres for billing", "Deploys use Helm"]
        pin = await cr.apin("Answer in French", user_id="u1")
        assert await cr.apins("u1") == [pin]
        assert await cr.aunpin(pin.id, user_id="u1") == pin
        with pytest.raises(InvalidInputError, match="text must not be empty"):
            await cr.aadd("  ", user_id="u1", session_id="s1")
        with pytest.raises(NotFoundError):
            await cr.aunpin(pin.id, user_id="u1")
        again = await cr.apin("Answer in German", user_id="u1")
        assert await cr.aunpin(again) == again  # the Pin itself, as apin returned it
        rep = await cr.aforget("u1")
        assert rep.memories == 2
        with pytest.raises(NotFoundError):
            await cr.aforget("u1")

    asyncio.run(main())


def test_concurrency_is_bounded_and_configurable() -> None:
    cr = fake_engine()
    with pytest.raises(ConfigError, match="max_workers=0"):
        cr.configure_async(max_workers=0)
    with pytest.raises(ConfigError, match="max_workers=True"):
        cr.configure_async(max_workers=True)  # type: ignore[arg-type]
    cr.configure_async(max_workers=2)
    assert cr.async_workers == 2
    import threading

    running, peak, lock = 0, 0, threading.Lock()

    def slow(x: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.02)
        with lock:
            running -= 1
        return x

    async def main() -> list[int]:
        return await asyncio.gather(*(cr._arun(slow, i) for i in range(10)))

    assert asyncio.run(main()) == list(range(10))
    assert peak == 2
    threads = {t.name for t in threading.enumerate() if t.name.startswith("chatrecall-aio")}
    assert 1 <= len(threads) <= 2


def test_context_variables_reach_the_worker_and_aclose() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    cr = fake_engine()

    async def main() -> str:
        var.set("request-42")
        async with cr:
            return await cr._arun(var.get)

    assert asyncio.run(main()) == "request-42"


@pytest.mark.server
def test_200_conversations_embedded_chroma_server_process(tmp_path: Path, hash_embedder: HashEmbedder) -> None:
    # The async deployment of an embedded store: Chroma in a child process, so its writes cannot hold the
    # loop's GIL. Exact results and isolation as in-process; the lag is measured by bench_async.py.
    pytest.importorskip("chromadb")
    from chatrecall.adapters.chroma import ChromaStore

    store = ChromaStore(path=tmp_path / "chroma", server_process=True)
    cr = _engine(store, hash_embedder)
    try:
        results, lag = asyncio.run(run_conversations(cr))
        check(cr, results, lag, lag_bound=None)
    finally:
        cr.close()
        store.close()
