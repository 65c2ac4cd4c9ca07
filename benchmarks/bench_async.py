"""Async API vs the sync API in a thread pool: throughput and event-loop lag.

    python benchmarks/bench_async.py [--store memory|embedded|embedded-process|server] [--embedder hash|minilm]
                                     [--n 200] [--freeze-gc] [--cap N] [--warm]

Each of N conversations stores 3 turns, pins a constraint, searches and
retrieves. ``async`` awaits ``cr.a*`` (the engine's bounded pool);
``sync_in_threadpool`` awaits ``loop.run_in_executor(ThreadPoolExecutor(4), cr.*)``.
A ticker (``asyncio.sleep(0.005)`` in a loop) records how late the loop wakes.
``embedded-process`` is ``ChromaStore(path=..., server_process=True)``; ``--cap``
sets how many records the embedded group commit merges per write; ``--warm``
opens the collections before the clock starts. Results:
``benchmarks/results/async.json`` (with the 1-minute load average of each run).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures as cf
import gc
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_async_api import FIXED_NOW, Ticker, conversation  # noqa: E402

from chatrecall.core import ChatRecall, HashEmbedder, InMemoryStore  # noqa: E402
from chatrecall.core._types import COLLECTION_MEMORIES, COLLECTION_PINS  # noqa: E402


async def workload(cr: ChatRecall, n: int, mode: str, pool: cf.ThreadPoolExecutor,
                   freeze_gc: bool = False) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    if freeze_gc:  # the documented deployment recipe: freeze the start-up heap, so full collections stay short
        gc.collect()
        gc.freeze()

    async def call(name: str, *args: Any, **kwargs: Any) -> Any:
        if mode == "async":
            return await getattr(cr, "a" + name)(*args, **kwargs)
        return await loop.run_in_executor(pool, lambda: getattr(cr, name)(*args, **kwargs))

    async def one(i: int) -> None:
        user, turns = conversation(i)
        await call("add_many", turns)
        await call("pin", f"Call me agent {i}.", user_id=user)
        await call("search", "where is the spare key locker?", user_id=user, k=3)
        await call("retrieve", "Remember where I keep the spare key?", user_id=user, session_id="s2")

    ticker = Ticker()
    tick = asyncio.create_task(ticker.run())
    await asyncio.sleep(0.05)
    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    elapsed = time.perf_counter() - t0
    ticker.stop()
    await tick
    lag = ticker.summary()
    return {"conversations": n, "seconds": round(elapsed, 3), "calls_per_s": round(4 * n / elapsed, 1),
            "lag_p50_ms": round(lag["p50_ms"], 2), "lag_p99_ms": round(lag["p99_ms"], 2),
            "lag_max_ms": round(lag["max_ms"], 2)}


def make_engine(store_kind: str, embedder: Any, root: Path, url: str | None, tag: str, cap: int | None = None,
                warm: bool = False) -> ChatRecall:
    if store_kind == "memory":
        store: Any = InMemoryStore()
    else:
        from chatrecall.adapters.chroma import ChromaStore

        if url:
            store = ChromaStore(url=url, namespace=f"bench_{tag}")
        else:
            store = ChromaStore(path=root / tag, server_process=store_kind == "embedded-process")
        if cap is not None and store._writer is not None:
            store._writer.max_records = cap
        if warm:
            for name in (COLLECTION_MEMORIES, COLLECTION_PINS):
                store._collection(name, True)
    return ChatRecall(store=store, embedder=embedder, clock=lambda: FIXED_NOW)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", choices=("memory", "embedded", "embedded-process", "server"), default="server")
    ap.add_argument("--embedder", choices=("hash", "minilm"), default="hash")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--freeze-gc", action="store_true", help="gc.freeze() after start-up (both modes)")
    ap.add_argument("--cap", type=int, default=None, help="embedded: most records per group-commit write")
    ap.add_argument("--warm", action="store_true", help="open/create the collections before the clock starts")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "async.json"))
    args = ap.parse_args()
    embedder: Any = HashEmbedder()
    if args.embedder == "minilm":
        from chatrecall.adapters.sentence_transformers import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder()
    root = Path(tempfile.mkdtemp())
    proc, url = None, None
    if args.store == "server":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from conftest import ChromaServer

        server = ChromaServer(root / "server").start()
        proc, url = server, server.url
    results: dict[str, Any] = {}
    try:
        for mode in ("sync_in_threadpool", "async"):
            cr = make_engine(args.store, embedder, root, url, mode, args.cap, args.warm)
            with cf.ThreadPoolExecutor(max_workers=cr.async_workers) as pool:
                results[mode] = asyncio.run(workload(cr, args.n, mode, pool, args.freeze_gc))
            results[mode]["load_avg_1m"] = round(os.getloadavg()[0], 2)
            gc.unfreeze()
            cr.close()
            cr.store.close()
            print(mode, results[mode], flush=True)
    finally:
        if proc is not None:
            proc.stop()
        shutil.rmtree(root, ignore_errors=True)
    out = Path(args.out)
    data = json.loads(out.read_text()) if out.exists() else {"runs": {}}
    key = f"{args.store}+{args.embedder}" + ("+freeze_gc" if args.freeze_gc else "")
    key += (f"+cap{args.cap}" if args.cap is not None else "") + ("+warm" if args.warm else "")
    data["runs"][key] = results
    data["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                       "load_avg_1m": round(os.getloadavg()[0], 2), "platform": platform.platform(),
                       "workers": 4, "note": "shared 2-core box; lag = how late asyncio.sleep(0.005) wakes"}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":
    main()
