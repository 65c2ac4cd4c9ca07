#!/usr/bin/env python
"""What sentence vectors (``RetrievalConfig(sentence_vectors=True)``, the default since stop 49) cost: at write
and at query.

* **Write:** the speed benchmark's real turns (LoCoMo, then LongMemEval user turns), stored through
  ``ChatRecall.add_many`` with the real model, with and without sentence vectors; the two engines alternate per
  chunk of the same texts, so load drifts hit both alike. Reported: turns per second, texts embedded per turn.
* **Query:** the dense scan of one user's index (``UserIndex.dense_topk``, top 50) at 1,000 and 8,192 turns (the
  largest exact scan), with each turn's sentence count taken from the real turns (``sentence_parts``) and random
  unit vectors (the time does not depend on their values), with and without the sentence vectors, interleaved.

Nothing is chosen here. ``chatrecall bench speed`` fills its stores with vectors fed ahead of time, one per turn, so
its retrieve figures never hold this cost.

Usage::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 python benchmarks/bench_sentence_vectors.py [--out PATH]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from chatrecall._bench._common import default_data_dir, machine_info, md_table, real_embedder, write_results
from chatrecall._bench._speed import load_texts
from chatrecall.core import ChatRecall, InMemoryStore, RetrievalConfig, Turn, UserIndex
from chatrecall.core._index import sentence_parts
from chatrecall.core._types import Record

ROOT = Path(__file__).resolve().parents[1]
SIZES = (1000, 8192)


def write_cost(texts: list[str], chunk: int = 50) -> dict[str, float]:
    """Turns per second through ``add_many`` with and without sentence vectors (real model, in-memory store)."""
    emb = real_embedder()
    emb.embed_documents(texts[:16])  # warm the model up
    engines = {flag: ChatRecall(store=InMemoryStore(), embedder=emb, retrieval=RetrievalConfig(sentence_vectors=flag))
               for flag in (False, True)}
    secs = dict.fromkeys(engines, 0.0)
    for i in range(0, len(texts), chunk):
        for flag, eng in engines.items():
            t0 = time.perf_counter()
            eng.add_many([Turn(text=t, user_id=f"u{flag}", session_id=f"s{(i + j) // 20}", timestamp=1.7e9 + i + j)
                          for j, t in enumerate(texts[i:i + chunk])])
            secs[flag] += time.perf_counter() - t0
    for eng in engines.values():
        eng.close()
    parts = sum(len(sentence_parts(t)) for t in texts)
    return {"turns": float(len(texts)), "turns_per_s_one_vector": len(texts) / secs[False],
            "turns_per_s_sentence_vectors": len(texts) / secs[True],
            "texts_embedded_per_turn": (len(texts) + parts) / len(texts)}


def query_cost(counts: list[int], n: int, rounds: int = 300, seed: int = 0) -> dict[str, float]:
    """``dense_topk`` p50 (ms) over ``n`` turns with and without their sentences' vectors, interleaved."""
    rng = np.random.default_rng(seed)

    def unit(m: int) -> np.ndarray:
        v = rng.standard_normal((m, 384)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    recs = [Record(id=f"r{i}", text="x", user_id="u", session_id=f"s{i // 20}", role="user", timestamp=float(i),
                   seq=i % 20) for i in range(n)]
    turns = unit(n)
    cs = [counts[i % len(counts)] for i in range(n)]
    plain, split = UserIndex(384), UserIndex(384)
    plain.add(recs, turns)
    split.add(recs, turns, [unit(c) if c else None for c in cs])
    q = unit(1)[0]
    times: dict[str, list[float]] = {"one_vector": [], "sentence_vectors": []}
    for _ in range(rounds):
        for name, idx in (("one_vector", plain), ("sentence_vectors", split)):
            t0 = time.perf_counter()
            idx.dense_topk(q, 50)
            times[name].append((time.perf_counter() - t0) * 1e3)
    return {"turns": float(n), "sentences": float(sum(cs)),
            **{f"dense_topk_p50_ms_{k}": float(np.percentile(v, 50)) for k, v in times.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sentence_vectors_cost.json")
    ap.add_argument("--write-turns", type=int, default=400)
    args = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    texts, _ = load_texts(default_data_dir(), 20000)
    counts = [len(sentence_parts(t)) for t in texts]
    write = write_cost(texts[: args.write_turns])
    query = [query_cost(counts, n) for n in SIZES]
    res = {"benchmark": "sentence_vectors_cost", "write": write, "query": query,
           "real_turns": len(texts), "turns_with_sentences": sum(c > 0 for c in counts),
           "sentences_per_turn": float(np.mean(counts)), "load_avg_1m": [load0, os.getloadavg()[0]],
           "machine": machine_info()}
    md = ["# Sentence vectors: what they cost (`benchmarks/bench_sentence_vectors.py`)", "",
          f"Real turns: {len(texts)}, {sum(c > 0 for c in counts)} with sentence vectors, "
          f"{float(np.mean(counts)):.2f} sentences per turn; load {load0:.1f} -> {os.getloadavg()[0]:.1f}.", "",
          md_table([{"system": "add_many", **write}], list(write)), "",
          md_table([{"system": "dense_topk", **r} for r in query], list(query[0])), ""]
    write_results(args.out, res, md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
