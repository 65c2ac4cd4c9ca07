"""Speed and scale: gate time, retrieve latency at 1K-100K memories, ingest, memory, cold start, threads, server.

Method:

* Gate: :meth:`ChatRecall.decide` on every LoCoMo question and a sample of
  conversation turns posed as messages; microseconds per decision.
* Retrieve latency: one user holding N memories in the engine's store
  (embedded ChromaStore by default). The stored texts are real
  conversation turns (LoCoMo and LongMemEval user turns, up to
  ``real_texts``) with their real MiniLM vectors. Sizes beyond that reuse the
  texts in further sessions with perturbed vectors:
  ``normalize(v + N(0, sigma^2 I))`` with sigma chosen so the copy has cosine
  ~0.9 to its source; that keeps the neighbourhood structure of real text
  while making every vector distinct. Query embedding is always real (the
  model runs for every query, its cache is off) and is included in every
  timing but the ``*_search_only`` ones. Modes: ``vector_only`` (relevance
  strategy), ``vector_1hop`` and ``vector_bfs3`` (relevance + graph,
  ``graph_depth`` 1 and 3), ``entity_first`` (entity strategy), ``hybrid``
  (default config), ``retrieve`` (the full :meth:`ChatRecall.retrieve` with
  gate and budget) and the baseline ``langchain_chroma``
  (``Chroma.similarity_search`` on a collection of the same texts and
  vectors, same embedder); ``hybrid_search_only`` and
  ``langchain_chroma_search_only`` are the same two searches on a query
  vector computed beforehand. p50, p95 and p99 per mode.
* Ingest: the same real, never-embedded-before turns through the raw
  embedder batch call, through :meth:`ChatRecall.add_many` (embed, store,
  index) and through langchain-chroma ``add_texts``; turns per second.
* Memory: peak RSS (``ru_maxrss``) after each size.
* Threads: ``retrieve`` throughput (retrieves/s) with ``threads`` threads
  calling one engine at once against one thread, same queries, alternating.
* Server: at ``server_size`` memories (10K by default) the same user is loaded
  into a real ``chroma run`` started and stopped by the benchmark, and
  ``retrieve`` through it is timed round-robin against the embedded store.
* Cold start: after each size the store is closed and a fresh Python process
  opens it and times its first ``retrieve`` of that user, with the index
  snapshot the engine wrote beside the store and without snapshots (the
  index rebuilt from Chroma).

Stores of each size can be kept between runs (``cache_dir`` or
``$CHATRECALL_SPEED_CACHE``): building 100K memories takes a while, and the
stores hold nothing but the same deterministic data.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import gzip
import hashlib
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chatrecall.core import RetrievalConfig

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
SESSION = "s0-0"
#: Bumped when what the cached stores hold changes (texts, sessions, timestamps, perturbation).
_CACHE_LAYOUT = "1"
_SERVER_START_S = 90.0


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


def _stats(v: Sequence[float]) -> dict[str, float]:
    return {"p50": percentile(v, 50), "p95": percentile(v, 95), "p99": percentile(v, 99), "mean": mean(v)}


def _lat(modes: dict[str, Callable[[str], Any]], queries: Sequence[str], warmup: int = 3) -> dict[str, dict[str, float]]:
    """p50/p95/p99/mean ms per mode; modes run round-robin per query so load drifts hit all alike."""
    for q in queries[:warmup]:
        for fn in modes.values():
            fn(q)
    ms: dict[str, list[float]] = {m: [] for m in modes}
    for q in queries[warmup:]:
        for mode, fn in modes.items():
            t0 = time.perf_counter()
            fn(q)
            ms[mode].append((time.perf_counter() - t0) * 1e3)
    return {m: _stats(v) for m, v in ms.items()}


def _size_label(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


# ---------------------------------------------------------------- threads
def _throughput(fn: Callable[[str], Any], queries: Sequence[str], threads: int, calls: int,
                rounds: int = 2) -> dict[str, float]:
    """Calls per second of ``fn`` on one thread and on ``threads`` threads (alternating rounds, best of each)."""
    qs = [queries[i % len(queries)] for i in range(calls)]
    for q in qs[:3]:
        fn(q)

    def timed(q: str) -> float:
        t0 = time.perf_counter()
        fn(q)
        return (time.perf_counter() - t0) * 1e3

    one: list[tuple[float, list[float]]] = []
    many: list[tuple[float, list[float]]] = []
    with cf.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="speed-bench") as pool:
        for _ in range(rounds):
            t0 = time.perf_counter()
            lat = [timed(q) for q in qs]
            one.append((len(qs) / (time.perf_counter() - t0), lat))
            t0 = time.perf_counter()
            lat = list(pool.map(timed, qs))
            many.append((len(qs) / (time.perf_counter() - t0), lat))
    r1, lat1 = max(one, key=lambda r: r[0])
    rn, latn = max(many, key=lambda r: r[0])
    return {"threads": float(threads), "calls": float(len(qs)), "retrieves_per_s_1_thread": r1,
            f"retrieves_per_s_{threads}_threads": rn, "speedup": rn / r1,
            "p50_ms_1_thread": percentile(lat1, 50), f"p50_ms_{threads}_threads": percentile(latn, 50),
            f"p95_ms_{threads}_threads": percentile(latn, 95), f"p99_ms_{threads}_threads": percentile(latn, 99)}


# ---------------------------------------------------------------- server
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def chroma_executable() -> str | None:
    """The ``chroma`` CLI of this environment (beside the interpreter, else on PATH)."""
    beside = Path(sys.executable).parent / ("chroma.exe" if os.name == "nt" else "chroma")
    return str(beside) if beside.exists() else shutil.which("chroma")


class _Server:
    """A ``chroma run`` subprocess on a free port, logging to a file; stopped by :meth:`stop`."""

    def __init__(self, path: Path) -> None:
        exe = chroma_executable()
        if exe is None:
            raise RuntimeError("the `chroma` executable (chromadb CLI) was not found")
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        path.mkdir(parents=True, exist_ok=True)
        self.log = path.parent / f"{path.name}-chroma.log"
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [exe, "run", "--path", str(path), "--port", str(self.port), "--host", "127.0.0.1"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
        deadline = time.monotonic() + _SERVER_START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chroma server exited with {self.proc.returncode}: {self._tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=1.0) as r:  # noqa: S310
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"chroma server not up after {_SERVER_START_S:.0f}s: {self._tail()}")

    def _tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-1500:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ---------------------------------------------------------------- cold start
_COLD_CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
spec = json.loads(sys.argv[1])
from chatrecall.adapters.chroma import ChromaStore
from chatrecall.core import ChatRecall
t1 = time.perf_counter()
kind, _, arg = spec["embedder"].partition(":")
if kind == "hash":
    from chatrecall.core import HashEmbedder
    emb = HashEmbedder(dim=int(arg))
else:
    from chatrecall.adapters.sentence_transformers import SentenceTransformerEmbedder
    emb = SentenceTransformerEmbedder(cache_size=0, backend=arg or "auto")
store = ChromaStore(path=spec["path"], snapshots=spec["snapshots"])
cr = ChatRecall(store=store, embedder=emb)
cr._snapshots.min_records = spec["min_records"]
t2 = time.perf_counter()
emb.embed_query("warm up the model")
t3 = time.perf_counter()
res = cr.retrieve(spec["query"], user_id=spec["user"], session_id=spec["session"])
t4 = time.perf_counter()
cr.retrieve(spec["query2"], user_id=spec["user"], session_id=spec["session"])
t5 = time.perf_counter()
out = {"import_s": t1 - t0, "open_s": t2 - t1, "model_s": t3 - t2, "first_retrieve_s": t4 - t3,
       "second_retrieve_ms": (t5 - t4) * 1e3, "records": len(cr._state(spec["user"]).index),
       "from_snapshot": cr._snapshots.loaded, "route": res.route.value, "load_1m": os.getloadavg()[0]}
print("COLD " + json.dumps(out), flush=True)
os._exit(0)  # timing done: skip interpreter teardown
"""


def _cold_run(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    import chatrecall

    root = str(Path(chatrecall.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p),
           "ANONYMIZED_TELEMETRY": "False", "TOKENIZERS_PARALLELISM": "false"}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _COLD_CHILD, json.dumps(spec)], env=env, capture_output=True,
                          text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("COLD ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"cold-start child failed ({proc.returncode}): {proc.stderr[-1500:]}")
    out: dict[str, Any] = json.loads(line[5:])
    out["process_s"] = wall
    return out


#: The stores of each size are filled with vectors fed ahead of time (:class:`FeedEmbedder`), one per turn, whatever
#: ``RetrievalConfig.sentence_vectors`` defaults to: sentence vectors would need the model on every sentence of 100K
#: turns. What they cost: ``benchmarks/bench_sentence_vectors.py``.
FILL_RETRIEVAL = RetrievalConfig(sentence_vectors=False)


# ---------------------------------------------------------------- stores of one size
def _blocks(n_from: int, n_to: int, n_real: int, block: int = 2000) -> Iterator[tuple[int, int, np.ndarray]]:
    """(copy, first position, source indices) of the memories n_from..n_to, never crossing a copy boundary."""
    loaded = n_from
    while loaded < n_to:
        hi = min(n_to, loaded + block - (loaded % block))
        copy, lo = divmod(loaded, n_real)
        hi = min(hi, (copy + 1) * n_real)
        yield copy, loaded, np.arange(lo, lo + (hi - loaded))
        loaded = hi


def _turns(copy: int, first: int, idx: np.ndarray, texts: Sequence[str]) -> list[Any]:
    from chatrecall.core import Turn

    return [Turn(text=texts[i], user_id=USER, session_id=f"s{copy}-{i // 25}", timestamp=1.6e9 + first + j * 1.0)
            for j, i in enumerate(idx.tolist())]


def _fill(eng: Any, lc: Any, feed: FeedEmbedder, real_vecs: np.ndarray, texts: Sequence[str], n_from: int,
          n_to: int, advance: Callable[[int], None]) -> None:
    """Store memories n_from..n_to of the user in the engine (and in langchain-chroma when given)."""
    n_real = real_vecs.shape[0]
    for copy, first, idx in _blocks(n_from, n_to, n_real):
        vecs = perturb(real_vecs[idx], copy)
        turns = _turns(copy, first, idx, texts)
        feed.feed(vecs)
        eng.add_many(turns)
        if lc is not None:
            feed.feed(vecs)
            lc.add_texts([t.text for t in turns], ids=[f"{copy}-{i}" for i in idx.tolist()])
        advance(len(idx))


class _Sized:
    """The chatrecall store (embedded Chroma) and langchain-chroma store of one size, built or reused."""

    def __init__(self, root: Path, n: int) -> None:
        self.dir = root / f"n{n}"
        self.n = n

    @property
    def ready(self) -> bool:
        return (self.dir / "done.json").exists()

    @property
    def cr_path(self) -> Path:
        return self.dir / "chatrecall"

    @property
    def lc_path(self) -> Path:
        return self.dir / "langchain"


def _open_lc(path: Path, feed: FeedEmbedder) -> tuple[Any, Any]:
    import chromadb
    from chromadb.config import Settings
    from langchain_chroma import Chroma

    client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
    return client, Chroma(collection_name="scale", embedding_function=lc_embeddings(feed), client=client)


def _open_cr(path: Path, feed: Any, **kw: Any) -> Any:
    from chatrecall._connect import default_vector_index
    from chatrecall.adapters.chroma import ChromaStore
    from chatrecall.core import ChatRecall

    kw.setdefault("vector_index", default_vector_index())  # what connect() gives users
    kw.setdefault("retrieval", FILL_RETRIEVAL)
    eng = ChatRecall(store=ChromaStore(path=path), embedder=feed, sync_interval_s=1e12, **kw)
    eng._snapshots.min_records = 0  # every size gets its snapshot (the engine's default skips users under 1000)
    return eng


def _close_cr(eng: Any) -> None:
    eng.close()
    eng.store.close()


def _cache_key(texts: Sequence[str], n_real: int, dim: int, emb_desc: str) -> str:
    h = hashlib.sha256()
    for part in (_CACHE_LAYOUT, USER, str(n_real), str(dim), emb_desc):
        h.update(part.encode("utf-8") + b"\x1f")
    for t in texts[:n_real]:
        h.update(t.encode("utf-8") + b"\x1e")
    return h.hexdigest()[:16]


def _embedder_desc(base: Any) -> str:
    name = type(base).__name__
    for attr in ("model_name", "name", "backend"):
        val = getattr(base, attr, None)
        if isinstance(val, str):
            name += f":{val}"
    return name


def _cold_spec_embedder(embedder: Any, base: Any) -> str:
    from chatrecall.core import HashEmbedder

    if isinstance(base, HashEmbedder):
        return f"hash:{base.dim}"
    if embedder is None:
        from . import _common

        return f"minilm:{_common.EMBED_BACKEND}"
    return f"hash:{base.dim}"  # a custom embedder cannot be rebuilt in a child: the index work is what is timed


# ---------------------------------------------------------------- main
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
    server: bool | int | str | None = None,
    threads: int | None = 8,
    cold_start: bool | str | Sequence[int] | None = None,
    cold_runs: int = 2,
    cache_dir: str | Path | None = None,
    throughput_calls: int | None = None,
    embedder_backends: str | Sequence[str] | None = None,
) -> dict[str, Any]:
    """Run the speed benchmark; returns the result dict.

    Args:
        sizes: Memory counts to time retrieval at (ascending order is fastest).
        queries: Timed queries per mode and size (distinct real questions).
        store: ``chroma`` (embedded ChromaStore) or ``memory`` (InMemoryStore;
            no cold start and no server mode).
        data_dir: The shared data directory (default ``../shared/data``).
        embedder: Embedder with a real model (default bundled MiniLM, query cache off).
        real_texts: Real texts (with real vectors) before perturbed copies start.
        ingest_turns: Turns used for the ingest throughput comparison.
        gate_messages: Messages timed through the gate.
        texts, questions: Use these instead of reading ``data_dir`` (tests).
        rounds: Timing rounds per size; the round with the fastest bare query
            embedding (least disturbed by other processes) is reported, the
            median over rounds is kept too.
        server: Server mode: True (at 10K, or the smallest size when 10K is
            not timed), a size, False; None = on when the store is chroma and
            the ``chroma`` CLI is installed.
        threads: Threads of the throughput mode (0 or None: skipped).
        cold_start: True / None (every size, chroma store only), False, or
            the sizes (a list or ``"10000,100000"``).
        cold_runs: Fresh processes per size and variant (the faster is reported).
        cache_dir: Keep the stores of each size here and reuse them
            (default ``$CHATRECALL_SPEED_CACHE``; none: temporary stores).
        throughput_calls: Retrieves per thread-mode round (default
            ``max(queries, 16 * threads)``).
        embedder_backends: Also time bare query embedding on these backends
            of the bundled model (``"torch,onnx,onnx-int8-query"``), against torch.
    """
    import chromadb
    from chromadb.config import Settings
    from langchain_chroma import Chroma

    from chatrecall.core import ChatRecall, InMemoryStore, RetrievalConfig, Strategy, Turn

    t_start = time.perf_counter()
    load_start = _load()
    sizes = sorted(int(s) for s in sizes)
    if texts is None or questions is None:
        texts, questions = load_texts(Path(data_dir) if data_dir else default_data_dir(), real_texts)
    texts, questions = list(texts), list(questions)
    base = embedder if embedder is not None else real_embedder(cache_size=0)
    notes: list[str] = []
    result: dict[str, Any] = {"benchmark": "speed", "title": "chatrecall speed and scale"}
    chroma = store == "chroma"
    if isinstance(cold_start, str):
        cold_start = [int(s) for s in cold_start.split(",") if s.strip()] if cold_start not in ("none", "") else False
    cold_sizes: set[int] = set()
    if chroma and (cold_start is None or cold_start is True):
        cold_sizes = set(sizes)
    elif chroma and cold_start is not False:
        cold_sizes = {int(s) for s in cold_start}  # type: ignore[union-attr]
    if isinstance(server, str):  # from the command line: auto, on, off or a size
        server = {"auto": None, "on": True, "off": False}.get(server.lower(), None if not server.isdigit()
                                                             else int(server))
    if server is None:
        server = chroma and chroma_executable() is not None
    server_size = 0
    if server and chroma:
        server_size = int(server) if not isinstance(server, bool) else (10000 if 10000 in sizes else sizes[0])
        if server_size not in sizes:
            notes.append(f"Server mode skipped: size {server_size} is not among the timed sizes {sizes}.")
            server_size = 0
    elif server and not chroma:
        notes.append("Server mode needs the chroma store: skipped.")
    threads = int(threads or 0)
    cache_env = os.environ.get("CHATRECALL_SPEED_CACHE")
    cache_root = Path(cache_dir) if cache_dir is not None else Path(cache_env) if cache_env else None
    tmp = Path(tempfile.mkdtemp(prefix="chatrecall-speed-"))

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
        qs = (questions * (queries // max(len(questions), 1) + 2))[:queries + 3]
        qv = {q: base.embed_query(q) for q in qs}
        configs = {
            "vector_1hop": RetrievalConfig(weights={"relevance": 0.7, "graph": 0.3}, graph_depth=1),
            "vector_bfs3": RetrievalConfig(weights={"relevance": 0.7, "graph": 0.3}, graph_depth=3),
        }
        cur: dict[str, Any] = {}  # the engine and langchain store of the size being timed

        def mode_fns() -> dict[str, Callable[[str], Any]]:
            def cfg(mode: str, fn: Callable[[str], Any]) -> Callable[[str], Any]:
                conf = configs.get(mode, cfg_default)

                def run(q: str) -> Any:
                    cur["eng"].retrieval_config = conf  # a plain attribute, read on every call
                    return fn(q)

                return run

            modes: dict[str, Callable[[str], Any]] = {
                "embed_query_only": lambda q: base.embed_query(q),
                "vector_only": lambda q: cur["eng"].search(q, user_id=USER, k=10, strategy="relevance"),
                "vector_1hop": lambda q: cur["eng"].search(q, user_id=USER, k=10, strategy="hybrid"),
                "vector_bfs3": lambda q: cur["eng"].search(q, user_id=USER, k=10, strategy="hybrid"),
                "entity_first": lambda q: cur["eng"].search(q, user_id=USER, k=10, strategy="entity"),
                "hybrid": lambda q: cur["eng"].search(q, user_id=USER, k=10, strategy="hybrid"),
                "retrieve": lambda q: cur["eng"].retrieve(q, user_id=USER, session_id=SESSION),
                "langchain_chroma": lambda q: cur["lc"].similarity_search(q, k=10),
                # the same two without the query embedding (vectors computed beforehand)
                "hybrid_search_only": lambda q: cur["eng"]._search_memory(
                    q, qv[q], cur["eng"].extractor.extract(q), USER, strategy=Strategy.HYBRID, k=10),
                "langchain_chroma_search_only": lambda q: cur["lc"].similarity_search_by_vector(qv[q].tolist(), k=10),
            }
            return {m: cfg(m, fn) for m, fn in modes.items()}

        timed = mode_fns()
        systems: dict[str, dict[str, float]] = {m: {} for m in timed}
        memory: dict[str, float] = {}
        ingest_times: dict[str, float] = {}
        thr: dict[str, dict[str, float]] = {}
        cold: dict[str, dict[str, Any]] = {}
        server_res: dict[str, Any] = {}
        key = _cache_key(texts, n_real, base.dim, _embedder_desc(base))
        store_root = (cache_root / key) if (chroma and cache_root is not None) else tmp / "scale"
        reused: list[str] = []
        prev: _Sized | None = None
        mem_eng: Any = None
        mem_lc: Any = None
        loaded = 0
        for n in sizes:
            label = _size_label(n)
            t_ing = time.perf_counter()
            if chroma:
                sized = _Sized(store_root, n)
                if sized.ready:
                    reused.append(label)
                else:
                    _build(sized, prev, feed, real_vecs, texts, prog, label)
                ingest_times[label] = time.perf_counter() - t_ing
                t_open = time.perf_counter()
                cur["eng"] = _open_cr(sized.cr_path, feed)
                cur["eng"].search("warm up", user_id=USER, k=1)  # loads the user's index (snapshot or store)
                cur["open_s"] = time.perf_counter() - t_open
                lc_client, cur["lc"] = _open_lc(sized.lc_path, feed)
                prev = sized
            else:
                if mem_eng is None:
                    mem_eng = _engine(feed, store, tmp / "scale", sync_interval_s=1e12, retrieval=FILL_RETRIEVAL)
                    mem_lc = Chroma(collection_name="scale", embedding_function=lc_embeddings(feed), client=client)
                task = prog.add_task(f"{label}: store {n} memories", total=n - loaded)
                _fill(mem_eng, mem_lc, feed, real_vecs, texts, loaded, n, functools.partial(prog.advance, task))
                loaded = n
                ingest_times[label] = time.perf_counter() - t_ing
                cur["eng"], cur["lc"] = mem_eng, mem_lc
            task = prog.add_task(f"{label}: {len(timed)} modes x {queries} queries x {rounds} rounds", total=rounds)
            runs = []
            for _ in range(rounds):
                runs.append(_lat(timed, qs))
                prog.advance(task)
            # the round whose bare query embedding was fastest is the one least disturbed by other processes
            best = min(runs, key=lambda r: r["embed_query_only"]["p50"])
            for mode in timed:
                for p in ("p50", "p95", "p99"):
                    systems[mode][f"{p}_ms@{label}"] = best[mode][p]
                systems[mode][f"p50_ms_median_of_rounds@{label}"] = float(np.median([r[mode]["p50"] for r in runs]))
            memory[f"load_avg_1m@{label}"] = _load()
            if threads:
                task = prog.add_task(f"{label}: retrieve on 1 and {threads} threads", total=1)
                calls = throughput_calls or max(queries, 16 * threads)
                thr[label] = _throughput(lambda q: cur["eng"].retrieve(q, user_id=USER, session_id=SESSION), qs,
                                         threads, calls)
                thr[label]["load_avg_1m"] = _load()
                prog.advance(task)
            if n == server_size:
                task = prog.add_task(f"{label}: server mode (chroma run)", total=1)
                try:
                    server_res = _server_mode(cur["eng"], feed, real_vecs, texts, qs, qv, n, rounds, tmp / "server")
                except (RuntimeError, OSError) as exc:  # no server: the rest of the run stands
                    notes.append(f"Server mode failed: {type(exc).__name__}: {exc}")
                prog.advance(task)
            memory[f"peak_rss_mb@{label}"] = peak_rss_mb()
            memory[f"index_vectors_mb@{label}"] = n * base.dim * 4 / 2**20
            if chroma:
                memory[f"open_and_first_search_s@{label}"] = cur["open_s"]
                _close_cr(cur["eng"])  # writes the user's snapshot beside the store
                lc_client.close()
                cur.clear()
                if n in cold_sizes:
                    task = prog.add_task(f"{label}: cold start in fresh processes", total=2 * cold_runs)
                    cold[label] = _cold_start(sized, _cold_spec_embedder(embedder, base), qs, cold_runs,
                                              functools.partial(prog.advance, task))
        if mem_eng is not None:
            mem_eng.close()
            mem_lc.delete_collection()

        # ------------------------------------------------------------ query embedding by backend
        # last: a PyTorch model leaves threads behind that would disturb the timings above
        backends = _backend_times(embedder_backends, embedder, questions[:max(queries, 20)], prog, notes)

    result.update(_assemble(sizes, systems, gate, ingest, memory, ingest_times, thr, cold, server_res, backends,
                            store, queries, n_real, rounds, threads, load_start, reused, store_root if chroma else None,
                            cache_root is not None, notes))
    result["seconds"] = round(time.perf_counter() - t_start, 1)
    shutil.rmtree(tmp, ignore_errors=True)  # cached stores live under cache_dir, not here
    return result


def _build(sized: _Sized, prev: _Sized | None, feed: FeedEmbedder, real_vecs: np.ndarray, texts: Sequence[str],
           prog: Any, label: str) -> None:
    """Build the stores of one size: a copy of the previous size's stores, plus the memories it lacks."""
    work = sized.dir.with_name(f"{sized.dir.name}.building-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    start = 0
    if prev is not None and prev.ready and prev.n < sized.n:
        shutil.copytree(prev.dir, work)
        (work / "done.json").unlink()
        start = prev.n
    work.mkdir(parents=True, exist_ok=True)
    task = prog.add_task(f"{label}: store {sized.n} memories", total=sized.n - start)
    eng = _open_cr(work / "chatrecall", feed)
    lc_client, lc = _open_lc(work / "langchain", feed)
    try:
        _fill(eng, lc, feed, real_vecs, texts, start, sized.n, lambda k: prog.advance(task, k))
    finally:
        _close_cr(eng)
        lc_client.close()
    (work / "done.json").write_text(json.dumps({"memories": sized.n, "user": USER}), encoding="utf-8")
    shutil.rmtree(sized.dir, ignore_errors=True)
    sized.dir.parent.mkdir(parents=True, exist_ok=True)
    os.replace(work, sized.dir)


def _cold_start(sized: _Sized, emb_spec: str, qs: Sequence[str], runs: int,
                advance: Callable[[], None]) -> dict[str, Any]:
    """First retrieve of the user in fresh processes: with the snapshot and without (index rebuilt from Chroma)."""
    spec = {"path": str(sized.cr_path), "user": USER, "session": SESSION, "query": qs[0], "query2": qs[1],
            "embedder": emb_spec, "min_records": 0}
    timeout = 120.0 + sized.n * 2e-3
    best: dict[str, dict[str, Any]] = {}
    for _ in range(runs):  # the variants alternate, so a load drift hits both
        for variant, snaps in (("snapshot", True), ("no_snapshot", False)):
            out = _cold_run({**spec, "snapshots": snaps}, timeout)
            if variant == "snapshot" and not out["from_snapshot"]:
                out["note"] = "no valid snapshot was found: the index was rebuilt"
            if variant not in best or out["first_retrieve_s"] < best[variant]["first_retrieve_s"]:
                best[variant] = out
            advance()
    res: dict[str, Any] = {v: best[v] for v in best}
    if "snapshot" in best and "no_snapshot" in best:
        res["speedup"] = best["no_snapshot"]["first_retrieve_s"] / max(best["snapshot"]["first_retrieve_s"], 1e-9)
    return res


def _server_mode(eng: Any, feed: FeedEmbedder, real_vecs: np.ndarray, texts: Sequence[str], qs: Sequence[str],
                 qv: dict[str, np.ndarray], n: int, rounds: int, path: Path) -> dict[str, Any]:
    """The same user in a real ``chroma run``: retrieve p50/p95/p99 against the embedded engine, round-robin."""
    from chatrecall.adapters.chroma import ChromaStore
    from chatrecall.core import ChatRecall, Strategy

    srv = _Server(path)
    try:
        s_store = ChromaStore(url=srv.url, namespace="speed", timeout_s=30.0, snapshots=False)
        s_eng = ChatRecall(store=s_store, embedder=feed, sync_interval_s=1e12, retrieval=FILL_RETRIEVAL)
        t0 = time.perf_counter()
        _fill(s_eng, None, feed, real_vecs, texts, 0, n, lambda k: None)
        fill_s = time.perf_counter() - t0
        s_eng.search("warm up", user_id=USER, k=1)
        modes: dict[str, Callable[[str], Any]] = {
            "retrieve_embedded": lambda q: eng.retrieve(q, user_id=USER, session_id=SESSION),
            "retrieve_server": lambda q: s_eng.retrieve(q, user_id=USER, session_id=SESSION),
            "search_only_embedded": lambda q: eng._search_memory(q, qv[q], eng.extractor.extract(q), USER,
                                                                 strategy=Strategy.HYBRID, k=10),
            "search_only_server": lambda q: s_eng._search_memory(q, qv[q], s_eng.extractor.extract(q), USER,
                                                                 strategy=Strategy.HYBRID, k=10),
        }
        runs = [_lat(modes, qs) for _ in range(rounds)]
        best = min(runs, key=lambda r: r["retrieve_embedded"]["p50"])
        out: dict[str, Any] = {"size": n, "url": srv.url, "fill_s": fill_s, "load_avg_1m": _load()}
        for mode, st in best.items():
            for p in ("p50", "p95", "p99"):
                out[f"{mode}_{p}_ms"] = st[p]
        out["retrieve_server_vs_embedded_p50"] = out["retrieve_server_p50_ms"] / out["retrieve_embedded_p50_ms"]
        out["search_only_server_vs_embedded_p50"] = (out["search_only_server_p50_ms"]
                                                     / out["search_only_embedded_p50_ms"])
        s_eng.close()
        s_store.close()
        return out
    finally:
        srv.stop()
        shutil.rmtree(path, ignore_errors=True)


def _backend_times(names: str | Sequence[str] | None, embedder: Any, qs: Sequence[str], prog: Any,
                   notes: list[str]) -> dict[str, dict[str, float]]:
    """Bare query embedding p50/p95/p99 per backend of the bundled model (torch is the baseline)."""
    if not names:
        return {}
    if embedder is not None:
        notes.append("Query embedding by backend skipped: a custom embedder was given.")
        return {}
    from chatrecall.adapters.sentence_transformers import SentenceTransformerEmbedder

    wanted = [s.strip() for s in (names.split(",") if isinstance(names, str) else names) if s.strip()]
    task = prog.add_task(f"query embedding on {', '.join(wanted)}", total=1)
    encs: dict[str, Callable[[str], Any]] = {}
    for name in wanted:
        try:
            e = SentenceTransformerEmbedder(cache_size=0, backend=name)
            e.embed_query("warm up")
            encs[name] = e.embed_query
        except Exception as exc:  # noqa: BLE001 - a backend that cannot run is reported, not fatal
            notes.append(f"Backend {name!r} could not run: {type(exc).__name__}: {exc}")
    # One backend at a time (a block of queries each, 3 alternating rounds, best round per backend): interleaved
    # per query, PyTorch's and ONNX Runtime's thread pools spin against each other on a small machine.
    lat: dict[str, dict[str, float]] = {}
    for _ in range(3):
        for name, fn in encs.items():
            st = _lat({name: fn}, qs)[name]
            if name not in lat or st["p50"] < lat[name]["p50"]:
                lat[name] = st
    prog.advance(task)
    out = {name: {"p50_ms": st["p50"], "p95_ms": st["p95"], "p99_ms": st["p99"]} for name, st in lat.items()}
    if "torch" in out:
        for st in out.values():
            st["speedup_vs_torch"] = out["torch"]["p50_ms"] / st["p50_ms"]
    return out


def _assemble(sizes: Sequence[int], systems: dict[str, dict[str, float]], gate: dict[str, Any],
              ingest: dict[str, Any], memory: dict[str, float], ingest_times: dict[str, float],
              thr: dict[str, dict[str, float]], cold: dict[str, dict[str, Any]], server_res: dict[str, Any],
              backends: dict[str, dict[str, float]], store: str, queries: int, n_real: int, rounds: int,
              threads: int, load_start: float, reused: list[str], store_root: Path | None, cached: bool,
              notes: list[str]) -> dict[str, Any]:
    labels = [_size_label(n) for n in sizes]
    big = labels[-1]
    res: dict[str, Any] = {
        "description": (
            f"One user with N memories in {('embedded ChromaStore' if store == 'chroma' else 'InMemoryStore')}; "
            f"{queries} distinct real questions per mode; query embedding (real model, cache off) included in every "
            f"timing but *_search_only. Stored vectors: {n_real} real MiniLM vectors of real turns, larger sizes add "
            "perturbed copies (cosine ~0.9 to the source)."
        ),
        "store": store, "sizes": list(sizes), "systems": systems, "gate": gate, "ingest": ingest, "memory": memory,
        "store_fill_seconds": ingest_times, "load_avg_1m_start": load_start,
    }
    cols = [f"{p}_ms@{lb}" for lb in labels for p in ("p50", "p95", "p99")]
    tables: list[dict[str, Any]] = [
        {"title": "Latency per query (ms, query embedding included but in *_search_only)", "columns": cols,
         "rows": [{"system": m, **v} for m, v in systems.items()]},
    ]
    # ratios to langchain-chroma, end to end and search only, per size
    ratios: dict[str, dict[str, float]] = {}
    lc, lcs = systems.get("langchain_chroma", {}), systems.get("langchain_chroma_search_only", {})
    for lb in labels:
        k = f"p50_ms@{lb}"
        if k in lc and k in lcs:
            ratios[lb] = {"hybrid_vs_langchain_end_to_end": systems["hybrid"][k] / lc[k],
                          "retrieve_vs_langchain_end_to_end": systems["retrieve"][k] / lc[k],
                          "hybrid_vs_langchain_search_only": systems["hybrid_search_only"][k] / lcs[k],
                          "langchain_search_only_ms": lcs[k], "hybrid_search_only_ms": systems["hybrid_search_only"][k]}
    res["ratios_to_langchain_chroma_p50"] = ratios
    if ratios:
        rcols = ["hybrid_vs_langchain_end_to_end", "retrieve_vs_langchain_end_to_end",
                 "hybrid_vs_langchain_search_only", "hybrid_search_only_ms", "langchain_search_only_ms"]
        tables.append({"title": "Ratio to langchain-chroma (p50), end to end and search only", "first": "size",
                       "columns": rcols, "rows": [{"size": lb, **r} for lb, r in ratios.items()]})
    if big in ratios:
        res["hybrid_vs_langchain_chroma_p50"] = ratios[big]["hybrid_vs_langchain_end_to_end"]
        res["hybrid_vs_langchain_chroma_search_only_p50"] = ratios[big]["hybrid_vs_langchain_search_only"]
    if thr:
        res["threads"] = thr
        tcols = ["retrieves_per_s_1_thread", f"retrieves_per_s_{threads}_threads", "speedup", "p50_ms_1_thread",
                 f"p50_ms_{threads}_threads", f"p95_ms_{threads}_threads", f"p99_ms_{threads}_threads", "load_avg_1m"]
        tables.append({"title": f"retrieve throughput: {threads} threads against 1 (one engine)", "first": "size",
                       "columns": tcols, "rows": [{"size": lb, **r} for lb, r in thr.items()]})
    if server_res:
        res["server"] = server_res
        scols = ["retrieve_embedded_p50_ms", "retrieve_server_p50_ms", "retrieve_server_vs_embedded_p50",
                 "retrieve_embedded_p95_ms", "retrieve_server_p95_ms", "retrieve_embedded_p99_ms",
                 "retrieve_server_p99_ms", "search_only_embedded_p50_ms", "search_only_server_p50_ms", "load_avg_1m"]
        tables.append({"title": "Server mode (a real `chroma run`) against the embedded store", "first": "size",
                       "columns": scols, "rows": [{"size": _size_label(server_res["size"]), **server_res}]})
    if cold:
        res["cold_start"] = cold
        rows = []
        for lb, c in cold.items():
            for variant in ("snapshot", "no_snapshot"):
                if variant in c:
                    rows.append({"run": f"{lb} {variant.replace('_', ' ')}", **c[variant]})
        ccols = ["first_retrieve_s", "second_retrieve_ms", "model_s", "open_s", "import_s", "process_s", "records",
                 "from_snapshot", "load_1m"]
        tables.append({"title": "Cold start: first retrieve of the user in a fresh process (s)", "first": "run",
                       "columns": ccols, "rows": rows})
    if backends:
        res["query_embedding_backends"] = backends
        tables.append({"title": "Query embedding by backend (ms, bundled MiniLM)", "first": "backend",
                       "columns": ["p50_ms", "p95_ms", "p99_ms", "speedup_vs_torch"],
                       "rows": [{"backend": b, **v} for b, v in backends.items()]})
    tables += [
        {"title": "Ingest throughput", "first": "path", "columns": ["turns_per_s"],
         "rows": [{"path": "raw embedder batch", "turns_per_s": ingest["raw_embedder_turns_per_s"]},
                  {"path": "chatrecall add_many", "turns_per_s": ingest["chatrecall_add_many_turns_per_s"]},
                  {"path": "langchain-chroma add_texts", "turns_per_s": ingest["langchain_chroma_add_texts_turns_per_s"]}]},
        {"title": "Gate and memory", "first": "metric", "columns": ["value"],
         "rows": [{"metric": k, "value": v} for k, v in {**gate, **memory}.items()]},
    ]
    res["tables"] = tables

    targets = []
    hy, rt = systems["hybrid"], systems["retrieve"]
    for n, goal in ((10000, 10.0), (100000, 20.0)):
        k = f"p50_ms@{_size_label(n)}"
        if k in hy:
            targets.append(target(f"hybrid search p50 @{_size_label(n)} (ms)", "<=", goal, hy[k]))
    for n, goal in ((10000, 5.0), (100000, 10.0)):
        lb = _size_label(n)
        if f"p50_ms@{lb}" in rt:
            targets.append(target(f"retrieve p50 @{lb} (ms)", "<=", goal, rt[f"p50_ms@{lb}"]))
            targets.append(target(f"retrieve p95 / p50 @{lb}", "<=", 2.0, rt[f"p95_ms@{lb}"] / rt[f"p50_ms@{lb}"]))
    if big in ratios:
        targets.append(target(f"hybrid p50 / langchain-chroma p50 @{big}", "<=", 1.5,
                              ratios[big]["hybrid_vs_langchain_end_to_end"]))
        targets.append(target(f"search only: hybrid / langchain-chroma p50 @{big}", "<=", 1.2,
                              ratios[big]["hybrid_vs_langchain_search_only"]))
    for lb, c in cold.items():
        if "snapshot" in c and lb == "100k":
            targets.append(target(f"cold start @{lb}: first retrieve with snapshot (s)", "<=", 2.0,
                                  c["snapshot"]["first_retrieve_s"]))
    if server_res:
        targets.append(target(f"server retrieve p50 / embedded @{_size_label(server_res['size'])}", "<=", 1.5,
                              server_res["retrieve_server_vs_embedded_p50"]))
    if "torch" in backends:
        for b, v in backends.items():
            if b != "torch":
                targets.append(target(f"query embedding {b} speed-up over torch", ">=", 3.0, v["speedup_vs_torch"]))
    targets.append(target("ingest chatrecall / raw embedder", ">=", 0.8, ingest["chatrecall_vs_raw"]))
    res["targets"] = targets

    notes.append(f"Each size is timed in {rounds} rounds; the table shows the round whose bare query embedding was "
                 "fastest (least disturbed by other processes); *_median_of_rounds keys in the JSON hold the median "
                 f"over rounds. p99 of {queries} queries is close to their maximum.")
    notes.append(f"1-minute load average {load_start:.2f} at the start and {_load():.2f} at the end "
                 "(other processes share the CPU; every latency, the query embedding most, grows with it; the modes "
                 "run round-robin per query so they see the same load). The load after each size is in the memory "
                 "table (load_avg_1m@size).")
    notes.append("Latency modes: vector_only = strategy 'relevance'; vector_1hop / vector_bfs3 = weights "
                 "relevance 0.7 + graph 0.3 with graph_depth 1 / 3; entity_first = strategy 'entity'; hybrid = "
                 "default RetrievalConfig; retrieve = ChatRecall.retrieve (gate, two-phase, budget); *_search_only = "
                 "the hybrid search and langchain-chroma's similarity_search_by_vector on a query vector computed "
                 "beforehand.")
    notes.append("Index sync with the store is disabled during timing (sync_interval_s=1e12).")
    if thr:
        notes.append(f"Throughput: the same retrieve calls on 1 thread and on {threads} threads of one engine, "
                     "alternating in 2 rounds, the faster round of each reported; the machine's cores bound the "
                     "speed-up.")
    if server_res:
        notes.append("Server mode: a `chroma run` on localhost started and stopped by the benchmark, filled with the "
                     "same memories; retrieve through it (freshness probe included: one count per second of the "
                     "memories collection) against the embedded engine, round-robin per query.")
    if cold:
        notes.append("Cold start: the store is closed, then a fresh Python process opens it, loads the model and "
                     "warms it with one query (model_s), and times its first retrieve of the user (first_retrieve_s: "
                     "the index restored from the snapshot the engine wrote at close, or rebuilt from Chroma with "
                     "snapshots off) and a second one; process_s is the whole process, interpreter start to exit. "
                     "The faster of the runs per variant is shown.")
    if backends:
        notes.append("Query embedding by backend: the bundled MiniLM on each backend (cache off), timed last, one "
                     "backend at a time in 3 alternating rounds, best round each; interleaving them per query lets "
                     "PyTorch's and ONNX Runtime's thread pools spin against each other.")
    if store_root is not None and cached:
        notes.append(f"Stores reused from the cache for sizes {', '.join(reused) or 'none'} ({store_root}); "
                     "store_fill_seconds of a reused size is ~0.")
    res["notes"] = notes
    return res


def _engine(embedder: Any, store: str, path: Path, **kw: Any) -> Any:
    from chatrecall.core import ChatRecall, InMemoryStore

    if store == "memory":
        return ChatRecall(store=InMemoryStore(), embedder=embedder, **kw)
    from chatrecall.adapters.chroma import ChromaStore

    return ChatRecall(store=ChromaStore(path=path), embedder=embedder, **kw)
