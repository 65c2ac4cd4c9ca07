"""Memory stays flat: 100,000 retrieves over 100 users on one ChatRecall.

Every retrieve uses a message never seen before (a running number in it), so
any cache keyed by message, query or embedding would grow; users are visited
round robin, and ``--max-cached-users`` smaller than ``--users`` makes the
per-user index cache evict and rebuild all the time. At every checkpoint the
script prints (and saves) the process RSS, Python heap (tracemalloc current
and peak), and the size of every bounded structure in the engine: cached users,
metric histograms and per-conversation tables, the embedder's cache.

Flat means: after the warm-up checkpoint, tracemalloc's current size grows by
less than ``--tolerance`` (default 5%) and every cache stays at or under its
cap. The verdict is printed and stored with the numbers.

Usage::

    python benchmarks/bench_memory_flat.py                      # fakes, 100k retrieves, 100 users
    python benchmarks/bench_memory_flat.py --max-cached-users 32   # with cache churn
    python benchmarks/bench_memory_flat.py --store chroma --retrieves 20000
    python benchmarks/bench_memory_flat.py --out benchmarks/results/memory_flat.json

The embedder is always the hash fake: the engine's own memory is under test,
not a model's.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from chatrecall import ChatRecall, Turn  # noqa: E402
from chatrecall.testing import HashEmbedder, InMemoryStore  # noqa: E402

WORDS = (
    "Postgres", "billing", "cheese", "Zanzibar", "launch", "Friday", "ECONNREFUSED", "config.yaml", "Marie",
    "Lyon", "Helm", "deploy", "TriBridConfig", "parse_notes()", "migration", "ticket", "outage", "Redis",
    "cache", "port",
)
TEMPLATES = (
    "remember what we decided about {w} for ticket #{n}?",
    "what did I say about {w} and {v} last time ({n})",
    "hi there {n}",
    "why does {w} fail with ECONNREFUSED on port {n}?",
    "what is {w}? ref {n}",
    "no, that's wrong, I meant {v} not {w} ({n})",
)


def rss_mb() -> float:
    """Current resident set size in MiB (Linux /proc; falls back to peak RSS)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cache_sizes(cr: ChatRecall) -> dict[str, int]:
    """Every structure of the engine that could grow with traffic, and its size now."""
    m = cr.metrics
    sizes = {
        "cached_users": len(cr._users),
        "metric_histograms": len(m._hist),
        "metric_max_hist_len": max((len(h) for h in m._hist.values()), default=0),
        "metric_conversations": len(m._conv),
        "metric_days": len(m._days),
        "metric_counters": len(m._counters),
        "correction_pending": sum(len(st.correction_pending) for st in list(cr._users.values())),
        "indexed_records": sum(len(st.index) for st in list(cr._users.values())),
    }
    info = getattr(cr.embedder, "cache_info", None)
    if callable(info):
        sizes["embedder_cache"] = int(info().currsize)
    return sizes


def caps(cr: ChatRecall, users: int, sessions: int) -> dict[str, int]:
    m = cr.metrics
    return {
        "cached_users": cr._max_users,
        "metric_max_hist_len": m._window,
        "metric_conversations": m._max_conv,
        "metric_days": m._max_days,
        "correction_pending": users * sessions,
    }


def bypass_fake_token_cache() -> None:
    """Make the hash embedder recompute token buckets instead of caching them.

    Its ``lru_cache`` (bounded at 65,536 tokens) fills up with the unique
    tokens of the messages and would dominate the heap for the first ~40,000
    retrieves, hiding the engine's own allocations. It belongs to the test
    fake, not to the engine, so it is bypassed here.
    """
    from chatrecall.core import _fakes

    _fakes._bucket = getattr(_fakes._bucket, "__wrapped__", _fakes._bucket)  # type: ignore[assignment]


def build(args: argparse.Namespace, tmp: str) -> ChatRecall:
    if args.store == "chroma":
        from chatrecall.adapters.chroma import ChromaStore

        store: Any = ChromaStore(path=Path(tmp) / "chroma")
    else:
        store = InMemoryStore()
    cr = ChatRecall(store=store, embedder=HashEmbedder(dim=64), max_cached_users=args.max_cached_users)
    turns = []
    for u in range(args.users):
        for i in range(args.memories):
            w, v = WORDS[(u + i) % len(WORDS)], WORDS[(u * 7 + i * 3) % len(WORDS)]
            turns.append(Turn(text=f"user {u} note {i}: we talked about {w} and {v}", user_id=f"user{u}",
                              session_id=f"s{i % args.sessions}", role="user" if i % 2 == 0 else "assistant"))
    for start in range(0, len(turns), 500):
        cr.add_many(turns[start:start + 500])
    cr.add_documents([f"Runbook {w}: restart {w} with care, see {v}." for w, v in zip(WORDS, WORDS[1:])])
    return cr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--retrieves", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--memories", type=int, default=20, help="stored turns per user")
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--max-cached-users", type=int, default=256)
    ap.add_argument("--store", choices=("memory", "chroma"), default="memory")
    ap.add_argument("--checkpoints", type=int, default=10)
    ap.add_argument("--tolerance", type=float, default=0.05, help="allowed heap growth after warm-up")
    ap.add_argument("--out", type=str, default=None, help="write the result JSON here")
    ap.add_argument("--no-tracemalloc", action="store_true",
                    help="skip tracemalloc (it slows Python ~3x); RSS, live blocks and gc objects are still tracked")
    args = ap.parse_args(argv)

    bypass_fake_token_cache()
    with tempfile.TemporaryDirectory(prefix="cr-memflat-") as tmp:
        t0 = time.perf_counter()
        cr = build(args, tmp)
        setup_s = time.perf_counter() - t0
        limits = caps(cr, args.users, args.sessions)
        every = max(args.retrieves // args.checkpoints, 1)
        gc.collect()
        if not args.no_tracemalloc:
            tracemalloc.start()
        rows: list[dict[str, Any]] = []
        degraded = 0
        t0 = time.perf_counter()
        print(f"{'retrieves':>10} {'rss_mb':>8} {'heap_mb':>8} {'peak_mb':>8} {'blocks':>9} {'objects':>8} "
              f"{'users':>6} {'conv':>6} {'hist':>6} {'s':>7}", flush=True)
        for n in range(1, args.retrieves + 1):
            u = n % args.users
            tpl = TEMPLATES[n % len(TEMPLATES)]
            msg = tpl.format(w=WORDS[n % len(WORDS)], v=WORDS[(n * 5) % len(WORDS)], n=n)
            res = cr.retrieve(msg, user_id=f"user{u}", session_id=f"s{n % args.sessions}")
            degraded += res.degraded
            if n % every == 0 or n == args.retrieves:
                gc.collect()
                cur, peak = tracemalloc.get_traced_memory() if tracemalloc.is_tracing() else (0, 0)
                row = {"retrieves": n, "rss_mb": round(rss_mb(), 1), "heap_mb": round(cur / 2**20, 2),
                       "heap_peak_mb": round(peak / 2**20, 2), "live_blocks": sys.getallocatedblocks(),
                       "gc_objects": len(gc.get_objects()), "seconds": round(time.perf_counter() - t0, 1),
                       **cache_sizes(cr)}
                rows.append(row)
                print(f"{n:>10} {row['rss_mb']:>8} {row['heap_mb']:>8} {row['heap_peak_mb']:>8} "
                      f"{row['live_blocks']:>9} {row['gc_objects']:>8} {row['cached_users']:>6} {row['metric_conversations']:>6} {row['metric_max_hist_len']:>6} "
                      f"{row['seconds']:>7}", flush=True)
        if tracemalloc.is_tracing():
            tracemalloc.stop()
        cr.close()

    # Metric histograms fill up to their 10,000-sample window first: the warm-up
    # checkpoint is the first one past it (or the second checkpoint on short runs).
    warm_i = next((i for i, r in enumerate(rows) if r["retrieves"] > cr.metrics._window), min(1, len(rows) - 1))
    warm = rows[warm_i]
    last = rows[-1]
    key = "heap_mb" if warm["heap_mb"] > 0 else "live_blocks"
    growth = (last[key] - warm[key]) / max(warm[key], 1e-9)
    over = {k: (last[k], cap) for k, cap in limits.items() if k in last and max(r[k] for r in rows) > cap}
    flat = growth <= args.tolerance and not over
    result = {
        "benchmark": "memory_flat",
        "config": vars(args),
        "setup_seconds": round(setup_s, 1),
        "retrieves_per_s": round(args.retrieves / max(last["seconds"], 1e-9)),
        "degraded_results": degraded,
        "checkpoints": rows,
        "caps": limits,
        "growth_measure": key,
        "warmup_checkpoint": warm["retrieves"],
        "heap_growth_after_warmup": round(growth, 4),
        "live_blocks_growth_after_warmup": last["live_blocks"] - warm["live_blocks"],
        "gc_objects_growth_after_warmup": last["gc_objects"] - warm["gc_objects"],
        "rss_growth_after_warmup_mb": round(last["rss_mb"] - warm["rss_mb"], 1),
        "caches_over_cap": over,
        "flat": flat,
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cores": os.cpu_count()},
    }
    print(f"{key} growth after warm-up ({warm['retrieves']:,} -> {last['retrieves']:,}): {growth:+.2%}  rss growth: {result['rss_growth_after_warmup_mb']:+.1f} MiB  "
          f"caches over cap: {over or 'none'}  -> {'FLAT' if flat else 'GROWING'}")
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {out}")
    return 0 if flat else 1


if __name__ == "__main__":
    raise SystemExit(main())
