"""Speed and scale: gate time, retrieve latency at 1K-100K memories, ingest, memory.

Method:

* Gate: :meth:`ChatRecall.decide` on every LoCoMo question and a sample of
  conversation turns posed as messages; microseconds per decision.
* Retrieve latency: one user holding N memories in the engine's store
  (embedded ChromaStore in a temp dir by default). The stored texts are real
  conversation turns (LoCoMo and LongMemEval user turns, up to
  ``real_texts``) with their real MiniLM vectors. Sizes beyond that reuse the
  texts in further sessions with perturbed vectors:
  ``normalize(v + N(0, sigma^2 I))`` with sigma chosen so the copy has cosine
  ~0.9 to its source; that keeps the neighbourhood structure of real text
  while making every vector distinct. Query embedding is always real (the
  model runs for every query, its cache is off) and is included in every
  timing. Modes: ``vector_only`` (relevance strategy), ``vector_1hop`` and
  ``vector_bfs3`` (relevance + graph, ``graph_depth`` 1 and 3),
  ``entity_first`` (entity strategy), ``hybrid`` (default config),
  ``retrieve`` (the full :meth:`ChatRecall.retrieve` with gate and budget) and
  the baseline ``langchain_chroma`` (``Chroma.similarity_search`` on a
  collection of the same texts and vectors, same embedder).
* Ingest: the same real, never-embedded-before turns through the raw
  embedder batch call, through :meth:`ChatRecall.add_many` (embed, store,
  index) and through langchain-chroma ``add_texts``; turns per second.
* Memory: peak RSS (``ru_maxrss``) after each size.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._common import (
    CachingEmbedder,
    FeedEmbedder,
    default_data_dir,
    embed_cache_dir,
    lc_embeddings,
    mean,
    peak_rss_mb,
    percentile,
    progress,
    real_embedder,
    target,
)

__all__ = ["load_texts", "perturb", "run_speed"]

USER = "speed-user"


def load_texts(data_dir: Path, max_texts: int) -> tuple[list[str], list[str]]:
    """Real turn texts (deduplicated) and real questions from the shared data."""
    texts: list[str] = []
    questions: list[str] = []
    loc = data_dir / "locomo" / "locomo_dev.json"
    if loc.exists():
        from ._locomo import load_locomo

        for c in load_locomo(loc):
            texts.extend(c.texts)
            questions.extend(q.question for q in c.questions)
    lme = data_dir / "longmemeval" / "longmemeval_s_dev60.json.gz"
    if lme.exists() and len(texts) < max_texts:
        with gzip.open(lme, "rt", encoding="utf-8") as fh:
            for rec in json.load(fh):
                questions.append(rec["question"])
                for sess in rec["haystack_sessions"]:
                    texts.extend(t["content"] for t in sess if t.get("role") == "user" and t.get("content"))
    texts = list(dict.fromkeys(t.strip() for t in texts if t.strip()))[:max_texts]
    questions = list(dict.fromkeys(questions))
    if not texts:
        raise FileNotFoundError(f"no LoCoMo/LongMemEval data under {data_dir}")
    return texts, questions


def perturb(vectors: np.ndarray, copy: int, *, cosine: float = 0.9, seed: int = 0) -> np.ndarray:
    """Distinct unit vectors near ``vectors`` (expected cosine ``cosine``); copy 0 is the original."""
    if copy == 0:
        return vectors
    d = vectors.shape[1]
    sigma = math.sqrt((1.0 / cosine**2 - 1.0) / d)
    rng = np.random.default_rng(seed * 1_000_003 + copy)
    out = vectors + rng.normal(0.0, sigma, size=vectors.shape).astype(np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


def _lat(modes: dict[str, Callable[[str], Any]], queries: Sequence[str], warmup: int = 3) -> dict[str, dict[str, float]]:
    """p50/p95/mean ms per mode; modes run round-robin per query so load drifts hit all alike."""
    for q in queries[:warmup]:
        for fn in modes.values():
            fn(q)
    ms: dict[str, list[float]] = {m: [] for m in modes}
    for q in queries[warmup:]:
        for mode, fn in modes.items():
            t0 = time.perf_counter()
            fn(q)
            ms[mode].append((time.perf_counter() - t0) * 1e3)
    return {m: {"p50": percentile(v, 50), "p95": percentile(v, 95), "mean": mean(v)} for m, v in ms.items()}


def _size_label(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def run_speed(
    *,
    sizes: Sequence[int] = (1000, 10000, 100000),
    queries: int = 50,
    store: str = "chroma",
    data_dir: str | Path | None = None,
    console: Any = None,
    embedder: Any = None,
    real_texts: int = 10000,
    ingest_turns: int = 600,
    gate_messages: int = 3000,
    texts: Sequence[str] | None = None,
    questions: Sequence[str] | None = None,
    rounds: int = 3,
) -> dict[str, Any]:
    """Run the speed benchmark; returns the result dict.

    Args:
        sizes: Memory counts to time retrieval at (ascending order is fastest).
        queries: Timed queries per mode and size (distinct real questions).
        store: ``chroma`` (embedded ChromaStore) or ``memory`` (InMemoryStore).
        data_dir: The shared data directory (default ``../shared/data``).
        embedder: Embedder with a real model (default bundled MiniLM, query cache off).
        real_texts: Real texts (with real vectors) before perturbed copies start.
        ingest_turns: Turns used for the ingest throughput comparison.
        gate_messages: Messages timed through the gate.
        texts, questions: Use these instead of reading ``data_dir`` (tests).
        rounds: Timing rounds per size; the round with the fastest bare query
            embedding (least disturbed by other processes) is reported, the
            median over rounds is kept too.
    """
    import chromadb
    from chromadb.config import Settings
    from langchain_chroma import Chroma

    from chatrecall.core import ChatRecall, InMemoryStore, RetrievalConfig, Strategy, Turn

    t_start = time.perf_counter()
    load_start = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    sizes = sorted(int(s) for s in sizes)
    if texts is None or questions is None:
        texts, questions = load_texts(Path(data_dir) if data_dir else default_data_dir(), real_texts)
    texts, questions = list(texts), list(questions)
    base = embedder if embedder is not None else real_embedder(cache_size=0)
    notes: list[str] = []
    result: dict[str, Any] = {"benchmark": "speed", "title": "chatrecall speed and scale"}

    with progress(console) as prog:
        # ------------------------------------------------------------ gate
        task = prog.add_task("gate decisions", total=1)
        gate_msgs = (questions + texts)[:gate_messages]
        probe = ChatRecall(store=InMemoryStore(), embedder=base)
        for m in gate_msgs[:50]:
            probe.decide(m)
        us = []
        for m in gate_msgs:
            t_ns = time.perf_counter_ns()
            probe.decide(m)
            us.append((time.perf_counter_ns() - t_ns) / 1e3)
        probe.close()
        gate = {"gate_us_p50": percentile(us, 50), "gate_us_p95": percentile(us, 95), "messages": len(us)}
        prog.advance(task)

        # ------------------------------------------------------------ ingest
        ingest_texts = texts[:ingest_turns]  # LoCoMo turns first: typical chat-message lengths
        task = prog.add_task(f"ingest throughput ({len(ingest_texts)} turns x 3)", total=3)
        base.embed_documents(ingest_texts[:32])  # warm the model up
        tmp = Path(tempfile.mkdtemp(prefix="chatrecall-speed-"))
        eng = _engine(base, store, tmp / "ingest")
        client = chromadb.EphemeralClient(Settings(anonymized_telemetry=False, allow_reset=True))
        lc = Chroma(collection_name="ingest", embedding_function=lc_embeddings(base), client=client)
        raw_s, cr_s, lc_s = 0.0, 0.0, 0.0
        step = 100  # the three paths alternate per chunk of the same texts, so load drifts hit all alike
        for i in range(0, len(ingest_texts), step):
            chunk = ingest_texts[i:i + step]
            t0 = time.perf_counter()
            base.embed_documents(chunk)
            t1 = time.perf_counter()
            eng.add_many([Turn(text=t, user_id="ingest", session_id=f"s{(i + j) // 20}", timestamp=1.7e9 + i + j)
                          for j, t in enumerate(chunk)])
            t2 = time.perf_counter()
            lc.add_texts(chunk)
            t3 = time.perf_counter()
            raw_s, cr_s, lc_s = raw_s + t1 - t0, cr_s + t2 - t1, lc_s + t3 - t2
            prog.update(task, completed=3 * (i + len(chunk)) / len(ingest_texts))
        eng.close()
        lc.delete_collection()
        n_in = len(ingest_texts)
        ingest = {"turns": n_in, "raw_embedder_turns_per_s": n_in / raw_s, "chatrecall_add_many_turns_per_s": n_in / cr_s,
                  "langchain_chroma_add_texts_turns_per_s": n_in / lc_s}
        ingest["chatrecall_vs_raw"] = ingest["chatrecall_add_many_turns_per_s"] / ingest["raw_embedder_turns_per_s"]

        # ------------------------------------------------------------ vectors for the store
        n_real = min(len(texts), max(sizes))
        task = prog.add_task(f"real vectors for {n_real} texts", total=1)
        cache = CachingEmbedder(base, disk_dir=embed_cache_dir() if embedder is None else None)
        real_vecs = cache.embed_documents(texts[:n_real])
        cache.save()
        prog.advance(task)

        # ------------------------------------------------------------ latency per size
        feed = FeedEmbedder(base)
        cfg_default = RetrievalConfig()
        eng = _engine(feed, store, tmp / "scale", sync_interval_s=1e12)
        lc = Chroma(collection_name="scale", embedding_function=lc_embeddings(feed), client=client)
        qs = (questions * (queries // max(len(questions), 1) + 2))[:queries + 3]
        qv = {q: base.embed_query(q) for q in qs}
        modes: dict[str, Callable[[str], Any]] = {
            "embed_query_only": lambda q: base.embed_query(q),
            "vector_only": lambda q: eng.search(q, user_id=USER, k=10, strategy="relevance"),
            "vector_1hop": lambda q: eng.search(q, user_id=USER, k=10, strategy="hybrid"),
            "vector_bfs3": lambda q: eng.search(q, user_id=USER, k=10, strategy="hybrid"),
            "entity_first": lambda q: eng.search(q, user_id=USER, k=10, strategy="entity"),
            "hybrid": lambda q: eng.search(q, user_id=USER, k=10, strategy="hybrid"),
            "retrieve": lambda q: eng.retrieve(q, user_id=USER, session_id="s0-0"),
            "langchain_chroma": lambda q: lc.similarity_search(q, k=10),
            # the same two without the query embedding (vectors computed beforehand)
            "hybrid_search_only": lambda q: eng._search_memory(q, qv[q], eng.extractor.extract(q), USER,
                                                               strategy=Strategy.HYBRID, k=10),
            "langchain_chroma_search_only": lambda q: lc.similarity_search_by_vector(qv[q].tolist(), k=10),
        }
        configs = {
            "vector_1hop": RetrievalConfig(weights={"relevance": 0.7, "graph": 0.3}, graph_depth=1),
            "vector_bfs3": RetrievalConfig(weights={"relevance": 0.7, "graph": 0.3}, graph_depth=3),
        }

        def with_config(mode: str, fn: Callable[[str], Any]) -> Callable[[str], Any]:
            cfg = configs.get(mode, cfg_default)

            def run(q: str) -> Any:
                eng.retrieval_config = cfg  # a plain attribute, read on every call
                return fn(q)

            return run

        timed = {m: with_config(m, fn) for m, fn in modes.items()}
        systems: dict[str, dict[str, float]] = {m: {} for m in modes}
        memory: dict[str, float] = {}
        loaded = 0
        ingest_times: dict[str, float] = {}
        for n in sizes:
            label = _size_label(n)
            task = prog.add_task(f"{label}: store {n} memories", total=n - loaded)
            t_ing = time.perf_counter()
            block = 2000
            while loaded < n:
                hi = min(n, loaded + block - (loaded % block))
                copy, lo = divmod(loaded, n_real)
                hi = min(hi, (copy + 1) * n_real)
                idx = np.arange(lo, lo + (hi - loaded))
                vecs = perturb(real_vecs[idx], copy)
                block_turns = [Turn(text=texts[i], user_id=USER, session_id=f"s{copy}-{i // 25}",
                                    timestamp=1.6e9 + loaded + j * 1.0) for j, i in enumerate(idx.tolist())]
                feed.feed(vecs)
                eng.add_many(block_turns)
                feed.feed(vecs)
                lc.add_texts([t.text for t in block_turns], ids=[f"{copy}-{i}" for i in idx.tolist()])
                prog.advance(task, hi - loaded)
                loaded = hi
            ingest_times[label] = time.perf_counter() - t_ing
            task = prog.add_task(f"{label}: {len(modes)} modes x {queries} queries x {rounds} rounds", total=rounds)
            runs = []
            for _ in range(rounds):
                runs.append(_lat(timed, qs))
                prog.advance(task)
            # the round whose bare query embedding was fastest is the one least disturbed by other processes
            best = min(runs, key=lambda r: r["embed_query_only"]["p50"])
            for mode in modes:
                systems[mode][f"p50_ms@{label}"] = best[mode]["p50"]
                systems[mode][f"p95_ms@{label}"] = best[mode]["p95"]
                systems[mode][f"p50_ms_median_of_rounds@{label}"] = float(np.median([r[mode]["p50"] for r in runs]))
            memory[f"peak_rss_mb@{label}"] = peak_rss_mb()
            memory[f"index_vectors_mb@{label}"] = n * base.dim * 4 / 2**20
        # cold load: a fresh engine rebuilds the user's index from the store
        if store == "chroma":
            t0 = time.perf_counter()
            eng2 = _engine(base, store, tmp / "scale", sync_interval_s=1e12)
            eng2.count(USER)
            eng2.search("warm", user_id=USER, k=1)
            result["cold_index_load_s"] = time.perf_counter() - t0
            eng2.close()
            notes.append(f"Cold start: a new process rebuilds the index of the {sizes[-1]} memories from Chroma "
                         f"in {result['cold_index_load_s']:.1f} s (first query of that user).")
        eng.close()
        lc.delete_collection()

    big = _size_label(sizes[-1])
    result.update({
        "description": (
            f"One user with N memories in {('embedded ChromaStore' if store == 'chroma' else 'InMemoryStore')}; "
            f"{queries} distinct real questions per mode; query embedding (real model, cache off) included in every "
            f"timing. Stored vectors: {n_real} real MiniLM vectors of real turns, larger sizes add perturbed "
            "copies (cosine ~0.9 to the source)."
        ),
        "store": store,
        "sizes": sizes,
        "systems": systems,
        "gate": gate,
        "ingest": ingest,
        "memory": memory,
        "store_fill_seconds": ingest_times,
        "load_avg_1m_start": load_start,
        "seconds": round(time.perf_counter() - t_start, 1),
    })
    cols = [f"{p}_ms@{_size_label(n)}" for n in sizes for p in ("p50", "p95")]
    result["tables"] = [
        {"title": "Latency per query (ms, query embedding included)", "columns": cols,
         "rows": [{"system": m, **v} for m, v in systems.items()]},
        {"title": "Ingest throughput", "first": "path", "columns": ["turns_per_s"],
         "rows": [{"path": "raw embedder batch", "turns_per_s": ingest["raw_embedder_turns_per_s"]},
                  {"path": "chatrecall add_many", "turns_per_s": ingest["chatrecall_add_many_turns_per_s"]},
                  {"path": "langchain-chroma add_texts", "turns_per_s": ingest["langchain_chroma_add_texts_turns_per_s"]}]},
        {"title": "Gate and memory", "first": "metric", "columns": ["value"],
         "rows": [{"metric": k, "value": v} for k, v in {**gate, **memory}.items()]},
    ]
    targets = []
    hy = systems["hybrid"]
    for n, goal in ((10000, 10.0), (100000, 20.0)):
        key = f"p50_ms@{_size_label(n)}"
        if key in hy:
            targets.append(target(f"hybrid retrieve p50 @{_size_label(n)} (ms)", "<=", goal, hy[key]))
    key = f"p50_ms@{big}"
    if key in systems["langchain_chroma"]:
        ratio = hy[key] / systems["langchain_chroma"][key]
        result["hybrid_vs_langchain_chroma_p50"] = ratio
        targets.append(target(f"hybrid p50 / langchain-chroma p50 @{big}", "<=", 1.5, ratio))
    targets.append(target("ingest chatrecall / raw embedder", ">=", 0.8, ingest["chatrecall_vs_raw"]))
    result["targets"] = targets
    notes.append(f"Each size is timed in {rounds} rounds; the table shows the round whose bare query embedding was "
                 "fastest (least disturbed by other processes); *_median_of_rounds keys in the JSON hold the median "
                 "over rounds.")
    notes.append(f"1-minute load average {load_start:.2f} at the start and {os.getloadavg()[0]:.2f} at the end "
                 "(other processes share the CPU; every latency, the query embedding most, grows with it; the modes "
                 "run round-robin per query so they see the same load).")
    notes.append("Latency modes: vector_only = strategy 'relevance'; vector_1hop / vector_bfs3 = weights "
                 "relevance 0.7 + graph 0.3 with graph_depth 1 / 3; entity_first = strategy 'entity'; hybrid = "
                 "default RetrievalConfig; retrieve = ChatRecall.retrieve (gate, two-phase, budget).")
    notes.append("Index sync with the store is disabled during timing (sync_interval_s=1e12); with the default "
                 "30 s a query that falls due re-reads the user's records (see the cold start figure).")
    result["notes"] = notes
    return result


def _engine(embedder: Any, store: str, path: Path, **kw: Any) -> Any:
    from chatrecall.core import ChatRecall, InMemoryStore

    if store == "memory":
        return ChatRecall(store=InMemoryStore(), embedder=embedder, **kw)
    from chatrecall.adapters.chroma import ChromaStore

    return ChatRecall(store=ChromaStore(path=path), embedder=embedder, **kw)
