"""Shared pieces of the benchmark harnesses.

Machine description, embedding cache, baseline rankers (dense numpy, bm25s,
langchain-chroma), chatrecall as a ranker, metric helpers and the JSON +
markdown + rich output every ``chatrecall bench`` command writes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import platform
import re
import resource
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from chatrecall.core._protocols import Embedder
from chatrecall.testing import ManualClock

__all__ = [
    "BM25Ranker",
    "CachingEmbedder",
    "ChromaLCRanker",
    "DenseRanker",
    "FeedEmbedder",
    "Ranker",
    "RankerFactory",
    "default_data_dir",
    "lc_embeddings",
    "machine_info",
    "make_chatrecall",
    "mean",
    "replace_tuned_block",
    "ndcg_official",
    "peak_rss_mb",
    "percentile",
    "progress",
    "render_markdown",
    "write_outputs",
]

#: Systems every quality harness runs (``--systems`` picks a subset).
CHATRECALL_SYSTEMS: dict[str, str | None] = {
    "chatrecall": None,
    "chatrecall_hybrid": "hybrid",
    "chatrecall_recency": "recency",
    "chatrecall_relevance": "relevance",
    "chatrecall_keyword": "keyword",
    "chatrecall_entity": "entity",
    "chatrecall_graph": "graph",
}
BASELINE_SYSTEMS = ("dense_only", "bm25_only", "langchain_chroma")
ALL_SYSTEMS = (*CHATRECALL_SYSTEMS, *BASELINE_SYSTEMS)


# ----------------------------------------------------------------- dependencies
#: How to get every third-party package a harness imports.
BENCH_INSTALL = 'pip install "chatrecall[bench]"'
#: Top-level modules the harnesses import (lazily) -> the distribution providing each; all in ``[bench]``.
BENCH_MODULES = {
    "bm25s": "bm25s",
    "langchain_chroma": "langchain-chroma",
    "langchain_core": "langchain-core",
    "chromadb": "chromadb",
    "sentence_transformers": "sentence-transformers",
    "torch": "torch",
}
#: Modules a baseline system needs beyond numpy.
_SYSTEM_MODULES = {"bm25_only": ("bm25s",), "langchain_chroma": ("langchain_chroma", "chromadb")}


def write_results(out: Path, result: Mapping[str, Any], md: Sequence[str]) -> None:
    """A benchmark's results as ``out``.json and ``out``.md (parents made), the markdown also printed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    out.with_suffix(".md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print("\n".join(md))


def kind_totals(rows: Sequence[Mapping[str, Any]], cols: Sequence[str], *,
                order: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Per ``kind`` of the rows: how many, and each column summed (booleans count as 1), in ``order`` or as first
    seen."""
    totals: dict[str, dict[str, Any]] = {}
    for r in rows:
        t = totals.setdefault(r["kind"], {"kind": r["kind"], "n": 0, **dict.fromkeys(cols, 0)})
        t["n"] += 1
        for col in cols:
            t[col] += int(r[col])
    kinds = [k for k in order if k in totals] if order is not None else list(totals)
    return [totals[k] for k in kinds]


def require_systems(names: Iterable[str]) -> None:
    """Fail before any work when a module the systems ``names`` need is not installed.

    Raises:
        ImportError: Naming the missing packages and ``pip install "chatrecall[bench]"``.
    """
    missing = sorted({m for n in names for m in _SYSTEM_MODULES.get(n, ()) if importlib.util.find_spec(m) is None})
    if missing:
        pkgs = ", ".join(BENCH_MODULES[m] for m in missing)
        raise ImportError(f"the baseline systems need {pkgs}: {BENCH_INSTALL} (or run only chatrecall systems, "
                          "e.g. --systems chatrecall)", name=missing[0])


def bench_dependency_message(exc: ImportError) -> str | None:
    """The error to show for ``exc`` when it is a missing benchmark dependency, else None.

    Example:
        >>> print(bench_dependency_message(ModuleNotFoundError("No module named 'bm25s'", name="bm25s")))
        chatrecall bench needs bm25s (No module named 'bm25s'): pip install "chatrecall[bench]"
    """
    if BENCH_INSTALL in str(exc):
        return str(exc)
    top = (exc.name or "").split(".")[0]
    if top not in BENCH_MODULES:
        return None
    return f"chatrecall bench needs {BENCH_MODULES[top]} ({exc}): {BENCH_INSTALL}"


# ----------------------------------------------------------------- machine
def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gb() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def machine_info() -> dict[str, Any]:
    """CPU, cores, RAM and the versions that matter for the numbers."""
    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "ram_gb": _ram_gb(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "load_avg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }
    for pkg in ("chatrecall", "numpy", "torch", "sentence-transformers", "chromadb", "langchain-chroma",
                "langchain-core", "bm25s"):
        info[pkg.replace("-", "_")] = _version(pkg)
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
    except ImportError:  # pragma: no cover - torch is a dependency of the bench
        pass
    return info


def default_data_dir() -> Path:
    """``../shared/data`` beside the checkout (override with ``$CHATRECALL_BENCH_DATA``)."""
    env = os.environ.get("CHATRECALL_BENCH_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (ru_maxrss), in MiB."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return float(rss) / (1024.0 * 1024.0 if sys.platform == "darwin" else 1024.0)


# ----------------------------------------------------------------- stats
def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation; nan when empty."""
    if not values:
        return float("nan")
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def mean(values: Iterable[float]) -> float:
    vals = list(values)
    return float(sum(vals) / len(vals)) if vals else float("nan")


def ndcg_official(ranked_rel: Sequence[int], n_relevant: int, k: int) -> float:
    """nDCG@k exactly as LongMemEval's ``eval_utils.ndcg`` computes it.

    Its DCG does not discount rank 1 and divides rank ``i >= 2`` by
    ``log2(i)`` (so ranks 1 and 2 weigh the same); binary relevance.
    """

    def dcg(rels: Sequence[float]) -> float:
        r = np.asarray(rels, dtype=np.float64)[:k]
        if r.size == 0:
            return 0.0
        return float(r[0] + np.sum(r[1:] / np.log2(np.arange(2, r.size + 1))))

    ideal = dcg([1.0] * min(n_relevant, k))
    return dcg(ranked_rel[:k]) / ideal if ideal > 0 else 0.0


# ----------------------------------------------------------------- embedders
class CachingEmbedder:
    """Wraps an :class:`Embedder` and remembers every vector by text.

    Every system of a run sees the same vectors and each text is embedded
    once. With ``disk_dir`` the document vectors also persist between runs
    (keyed by model name and text hash), which only saves time: quality
    numbers do not depend on it and no timing is taken through this class.
    """

    def __init__(self, base: Embedder, *, disk_dir: str | os.PathLike[str] | None = None,
                 model_name: str | None = None) -> None:
        self.base = base
        self._docs: dict[str, np.ndarray] = {}
        self._queries: dict[str, np.ndarray] = {}
        self.doc_hits = 0
        self.doc_misses = 0
        self.embed_seconds = 0.0
        self._disk: Path | None = None
        self._disk_new: dict[str, np.ndarray] = {}
        self._backend = getattr(base, "backend", "torch")
        if disk_dir is not None:
            name = model_name or getattr(base, "model_name", type(base).__name__)
            name = name if self._backend == "torch" else f"{name}#{self._backend}"  # vectors differ per backend
            tag = hashlib.sha1(str(name).encode()).hexdigest()[:10]
            self._disk = Path(disk_dir) / f"vectors-{tag}.npz"
            if self._disk.exists():
                with np.load(self._disk) as z:
                    keys, vecs = z["keys"], z["vecs"]
                self._docs.update({str(k): v for k, v in zip(keys.tolist(), vecs)})

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    @property
    def dim(self) -> int:
        return self.base.dim

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        todo = list(dict.fromkeys(k for k in keys if k not in self._docs))
        self.doc_hits += len(keys) - len(todo)
        self.doc_misses += len(todo)
        if todo:
            first = {k: t for t, k in zip(texts, keys)}
            t0 = time.perf_counter()
            vecs = self.base.embed_documents([first[k] for k in todo])
            self.embed_seconds += time.perf_counter() - t0
            for k, v in zip(todo, vecs):
                self._docs[k] = v
                if self._disk is not None:
                    self._disk_new[k] = v
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._docs[k] for k in keys]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        vec = self._queries.get(text)
        if vec is None:
            vec = self._queries[text] = np.asarray(self.base.embed_query(text), dtype=np.float32)
        return vec.copy()

    def save(self) -> None:
        """Persist new document vectors (no-op without ``disk_dir``)."""
        if self._disk is None or not self._disk_new:
            return
        if getattr(self.base, "backend", "torch") != self._backend:
            return  # the base fell back to another backend mid-run: its vectors are not this file's
        self._disk.parent.mkdir(parents=True, exist_ok=True)
        keys = np.asarray(list(self._docs), dtype=object).astype(str)
        vecs = np.stack(list(self._docs.values())).astype(np.float32)
        tmp = self._disk.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vecs=vecs)
        os.replace(tmp, self._disk)
        self._disk_new.clear()


class FeedEmbedder:
    """Document vectors are handed in ahead of time; queries run the real model.

    Used to load many synthetic-but-realistic vectors into a store without
    running the model on them, while every query embedding stays real.
    """

    def __init__(self, base: Embedder) -> None:
        self.base = base
        self._queue: list[np.ndarray] = []

    @property
    def dim(self) -> int:
        return self.base.dim

    def feed(self, vectors: np.ndarray) -> None:
        self._queue.append(np.asarray(vectors, dtype=np.float32))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not self._queue:
            return self.base.embed_documents(texts)
        block = self._queue.pop(0)
        if block.shape[0] != len(texts):
            raise RuntimeError(f"fed {block.shape[0]} vectors for {len(texts)} texts")
        return block

    def embed_query(self, text: str) -> np.ndarray:
        return self.base.embed_query(text)


def lc_embeddings(embedder: Embedder) -> Any:
    """Our embedder as a LangChain ``Embeddings`` (for the langchain-chroma baseline)."""
    from langchain_core.embeddings import Embeddings

    class _LC(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embedder.embed_documents(texts).tolist()  # type: ignore[no-any-return]

        def embed_query(self, text: str) -> list[float]:
            return embedder.embed_query(text).tolist()  # type: ignore[no-any-return]

    return _LC()


# ----------------------------------------------------------------- rankers
class Ranker:
    """One system under test over one haystack: index once, rank many queries.

    ``keys`` are the caller's item keys (dia_id, turn id); ``rank`` returns
    keys best first.
    """

    name = "ranker"

    def index(self, keys: Sequence[str], texts: Sequence[str], meta: Sequence[Mapping[str, Any]]) -> None:
        raise NotImplementedError

    def rank(self, query: str, k: int) -> list[str]:
        raise NotImplementedError

    def close(self) -> None:
        """Release the haystack."""


class DenseRanker(Ranker):
    """Exact cosine top-k with numpy (the dense-only baseline)."""

    name = "dense_only"

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.keys: list[str] = []
        self.mat = np.zeros((0, embedder.dim), dtype=np.float32)

    def index(self, keys: Sequence[str], texts: Sequence[str], meta: Sequence[Mapping[str, Any]]) -> None:
        self.keys = list(keys)
        self.mat = self.embedder.embed_documents(list(texts))

    def rank(self, query: str, k: int) -> list[str]:
        sims = self.mat @ self.embedder.embed_query(query)
        k = min(k, sims.size)
        part = np.argpartition(-sims, k - 1)[:k]
        return [self.keys[i] for i in part[np.argsort(-sims[part], kind="stable")]]


class BM25Ranker(Ranker):
    """``bm25s`` with its default English stopwords, no stemmer (the BM25 baseline)."""

    name = "bm25_only"

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.model: Any = None

    def index(self, keys: Sequence[str], texts: Sequence[str], meta: Sequence[Mapping[str, Any]]) -> None:
        import bm25s

        self.keys = list(keys)
        self.model = bm25s.BM25()
        self.model.index(bm25s.tokenize(list(texts), stopwords="en", show_progress=False), show_progress=False)

    def rank(self, query: str, k: int) -> list[str]:
        import bm25s

        tok = bm25s.tokenize([query], stopwords="en", show_progress=False)
        k = min(k, len(self.keys))
        docs, scores = self.model.retrieve(tok, k=k, show_progress=False)
        # bm25s fills with arbitrary zero-score docs when fewer match; keep them (a ranking is a ranking)
        return [self.keys[int(i)] for i in docs[0]]


class ChromaLCRanker(Ranker):
    """langchain-chroma ``Chroma(...).as_retriever(search_kwargs={"k": k})`` (in-memory client)."""

    name = "langchain_chroma"

    def __init__(self, embedder: Embedder) -> None:
        import chromadb
        from chromadb.config import Settings

        self.client = chromadb.EphemeralClient(Settings(anonymized_telemetry=False, allow_reset=True))
        self.emb = lc_embeddings(embedder)
        self.db: Any = None

    def index(self, keys: Sequence[str], texts: Sequence[str], meta: Sequence[Mapping[str, Any]]) -> None:
        from langchain_chroma import Chroma

        self.close()
        self.db = Chroma(collection_name=f"bench-{uuid.uuid4().hex[:12]}", embedding_function=self.emb,
                         client=self.client)
        uniq = list(dict.fromkeys(keys))
        text_of = dict(zip(keys, texts))
        self.db.add_texts([text_of[k] for k in uniq], metadatas=[{"key": k} for k in uniq], ids=uniq)

    def rank(self, query: str, k: int) -> list[str]:
        docs = self.db.as_retriever(search_kwargs={"k": k}).invoke(query)
        return [d.metadata["key"] for d in docs]

    def close(self) -> None:
        if self.db is not None:
            self.db.delete_collection()
            self.db = None


def make_chatrecall(embedder: Embedder, *, store: str = "chroma", path: str | None = None,
                    clock: Callable[[], float] | None = None, **kwargs: Any) -> tuple[Any, str]:
    """A ChatRecall on ``store`` (``chroma``: embedded ChromaStore in a temp dir, or ``memory``).

    Returns the engine and a description of the store for the output.
    """
    from chatrecall.core import ChatRecall, InMemoryStore

    if clock is not None:
        kwargs["clock"] = clock
    if store == "memory":
        return ChatRecall(store=InMemoryStore(), embedder=embedder, **kwargs), "InMemoryStore"
    if store != "chroma":
        raise ValueError(f"store={store!r}: use 'chroma' or 'memory'")
    from chatrecall.adapters.chroma import ChromaStore

    path = path or tempfile.mkdtemp(prefix="chatrecall-bench-")
    return (ChatRecall(store=ChromaStore(path=path), embedder=embedder, **kwargs),
            f"ChromaStore(embedded, {path})")


class MutableClock(ManualClock):
    """The :class:`~chatrecall.testing.ManualClock` the harnesses set to each question's "now".

    Starts at the wall-clock time (not ``ManualClock.START``), as the
    harnesses always did.
    """

    __slots__ = ()

    def __init__(self, t: float | None = None) -> None:
        super().__init__(time.time() if t is None else t)


def systems_to_run(systems: str | Sequence[str] | None) -> list[str]:
    """``--systems`` (names, or one comma-separated string; None: all) validated, dependencies checked.

    Raises:
        ValueError: An unknown system.
        ImportError: A baseline's library is missing (names ``chatrecall[bench]``).
    """
    names = parse_systems(systems if isinstance(systems, str) or systems is None else ",".join(systems))
    require_systems(names)
    return names


@dataclass(frozen=True)
class Harness:
    """What a quality harness measures with: the cached embedder, the clock and the engine.

    Attributes:
        emb: The embedder every system shares, its vectors cached.
        clock: The engine's clock; the harness sets it to each question's date.
        engine: A ChatRecall, or None when no chatrecall system runs.
        store_desc: The engine's store, as the results describe it (``-`` without engine).
    """

    emb: CachingEmbedder
    clock: MutableClock
    engine: Any
    store_desc: str

    def close(self) -> None:
        """Persist the embedding cache and close the engine."""
        self.emb.save()
        if self.engine is not None:
            self.engine.close()


def open_harness(names: Sequence[str], *, store: str, embedder: Any, engine: bool = False) -> Harness:
    """The embedder (bundled MiniLM when ``embedder`` is None, vectors cached on disk) and the engine.

    Args:
        names: Systems from :func:`systems_to_run`; the engine is opened when one is a chatrecall system.
        store: ``chroma`` (embedded ChromaStore in a temp dir) or ``memory``.
        embedder: An Embedder, or None for the bundled model.
        engine: Open the engine even without a chatrecall system (LoCoMo's token study).
    """
    base = embedder if embedder is not None else real_embedder()
    emb = CachingEmbedder(base, disk_dir=embed_cache_dir() if embedder is None else None)
    clock = MutableClock()
    if engine or any(n in CHATRECALL_SYSTEMS for n in names):
        cr, store_desc = make_chatrecall(emb, store=store, clock=clock)
        return Harness(emb, clock, cr, store_desc)
    return Harness(emb, clock, None, "-")


def ingest_haystack(engine: Any, user_id: str, keys: Sequence[str], texts: Sequence[str],
                    meta: Sequence[Mapping[str, Any]], *, batch: int = 512) -> dict[str, list[str]]:
    """Store a haystack as one user; returns record id -> caller keys.

    ``meta`` rows hold ``session_id``, ``role`` and ``timestamp``. Identical
    text in one session is stored once (the engine's ids are content
    derived), so one id may map to several keys.
    """
    from chatrecall.core import Turn

    id_keys: dict[str, list[str]] = {}
    turns = [Turn(text=t, user_id=user_id, session_id=str(m["session_id"]), role=str(m.get("role", "user")),
                  timestamp=m.get("timestamp"), metadata={"key": k}) for k, t, m in zip(keys, texts, meta)]
    for i in range(0, len(turns), batch):
        ids = engine.add_many(turns[i:i + batch])
        for rid, key in zip(ids, keys[i:i + batch]):
            id_keys.setdefault(rid, []).append(key)
    return id_keys


RankerFactory = Callable[[], Ranker]


def baseline_rankers(names: Iterable[str], embedder: Embedder) -> dict[str, Ranker]:
    out: dict[str, Ranker] = {}
    for n in names:
        if n == "dense_only":
            out[n] = DenseRanker(embedder)
        elif n == "bm25_only":
            out[n] = BM25Ranker()
        elif n == "langchain_chroma":
            out[n] = ChromaLCRanker(embedder)
    return out


def parse_systems(spec: str | None) -> list[str]:
    """``--systems a,b`` -> validated list (all systems when None)."""
    if not spec:
        return list(ALL_SYSTEMS)
    names = [s.strip() for s in spec.split(",") if s.strip()]
    bad = [s for s in names if s not in ALL_SYSTEMS]
    if bad:
        raise ValueError(f"unknown system(s) {bad}; known: {', '.join(ALL_SYSTEMS)}")
    return names


#: Backend of :func:`real_embedder` (``chatrecall bench ... --embedder torch|onnx|onnx-int8|minilm``).
EMBED_BACKEND = "auto"


def real_embedder(cache_size: int = 2048) -> Any:
    from chatrecall.adapters.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(cache_size=cache_size, backend=EMBED_BACKEND)


def embed_cache_dir() -> Path | None:
    """Where document vectors persist between runs (``$CHATRECALL_BENCH_CACHE``; ``off`` disables)."""
    env = os.environ.get("CHATRECALL_BENCH_CACHE")
    if env == "off":
        return None
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "chatrecall-bench"


# ----------------------------------------------------------------- output
def progress(console: Any) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=False)


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        if abs(v) >= 100:
            return f"{v:.1f}"
        if abs(v) >= 10:
            return f"{v:.2f}"
        return f"{v:.3f}"
    if v is None:
        return "-"
    return str(v)


def replace_tuned_block(tuned: Path, name: str, script: str, body: str) -> None:
    """Rewrite only the ``# BEGIN name (generated by script)`` ... ``# END name`` block of ``tuned``.

    Args:
        tuned: The ``_tuned.py`` file.
        name: The block's name.
        script: The script that owns it (``benchmarks/tune_x.py``), as the BEGIN line says.
        body: The lines between BEGIN and END (ending with a newline).

    Raises:
        SystemExit: ``tuned`` has no such block (a script never adds one silently).
    """
    src = tuned.read_text(encoding="utf-8")
    begin = f"# BEGIN {name} (generated by {script})"
    m = re.search(re.escape(begin) + r"\n.*?# END " + re.escape(name) + r"\n", src, flags=re.S)
    if m is None:
        raise SystemExit(f"{tuned}: no {name} block")
    tuned.write_text(src[:m.start()] + f"{begin}\n{body}# END {name}\n" + src[m.end():], encoding="utf-8")


def md_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *, first: str = "system") -> str:
    """A GitHub markdown table; ``rows`` hold ``first`` plus ``columns``."""
    head = [first, *columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r.get(c)) for c in head) + " |")
    return "\n".join(lines)


def systems_table(systems: Mapping[str, Mapping[str, Any]], columns: Sequence[str]) -> str:
    rows = [{"system": name, **metrics} for name, metrics in systems.items()]
    return md_table(rows, [c for c in columns if any(c in m for m in systems.values())])


def render_markdown(result: Mapping[str, Any]) -> str:
    """The whole result as markdown: title, tables, targets, notes, machine."""
    out = [f"# {result.get('title', 'chatrecall benchmark')}", ""]
    if result.get("description"):
        out += [str(result["description"]), ""]
    for sec in result.get("tables", []):
        out += [f"## {sec['title']}", ""]
        if sec.get("note"):
            out += [sec["note"], ""]
        out += [md_table(sec["rows"], sec["columns"], first=sec.get("first", "system")), ""]
    if result.get("targets"):
        out += ["## Targets", ""]
        out += [md_table(result["targets"], ["target", "measured", "met"], first="metric"), ""]
    if result.get("notes"):
        out += ["## Notes", ""] + [f"- {n}" for n in result["notes"]] + [""]
    m = result.get("machine", {})
    out += ["## Machine", "", ", ".join(f"{k}: {v}" for k, v in m.items() if v is not None), ""]
    return "\n".join(out)


def print_tables(result: Mapping[str, Any], console: Any) -> None:
    from rich.table import Table

    for sec in result.get("tables", []):
        first = sec.get("first", "system")
        t = Table(title=sec["title"])
        t.add_column(first)
        for c in sec["columns"]:
            t.add_column(c, justify="right")
        for r in sec["rows"]:
            t.add_row(str(r.get(first)), *(_fmt(r.get(c)) for c in sec["columns"]))
        console.print(t)
    if result.get("targets"):
        t = Table(title="targets")
        for c in ("metric", "target", "measured", "met"):
            t.add_column(c)
        for r in result["targets"]:
            t.add_row(str(r["metric"]), str(r["target"]), _fmt(r["measured"]),
                      "[green]yes[/]" if r["met"] else "[red]no[/]")
        console.print(t)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return None
    if isinstance(obj, (np.floating, np.integer)):
        return _jsonable(obj.item())
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return obj


def write_outputs(result: dict[str, Any], out: str | os.PathLike[str], console: Any | None = None) -> Path:
    """Write ``out`` (JSON) and ``out`` with ``.md``; print the tables with rich."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    result.setdefault("machine", machine_info())
    path.write_text(json.dumps(_jsonable(result), indent=1) + "\n", encoding="utf-8")
    path.with_suffix(".md").write_text(render_markdown(result), encoding="utf-8")
    if console is not None:
        print_tables(result, console)
        console.print(f"[green]wrote[/] {path} and {path.with_suffix('.md')}")
    return path


def target(metric: str, op: str, goal: float, measured: float | None) -> dict[str, Any]:
    """One target line: ``measured op goal`` (op ``>=`` or ``<=``)."""
    ok = measured is not None and not math.isnan(measured) and (measured >= goal if op == ">=" else measured <= goal)
    return {"metric": metric, "target": f"{op} {goal:g}", "measured": measured, "met": bool(ok)}


# ----------------------------------------------------------------- in-process haystack (tuning)
def load_chat_scenarios(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The scenarios of a ``benchmarks/data/chat_scenarios`` file (JSON lines)."""
    text = Path(path).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def chat_scenario_turns(sc: Mapping[str, Any]) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """A chat scenario (``benchmarks/data/chat_scenarios``) as (keys ``"session:turn"``, texts, meta with
    session_id / role / timestamp), its turns a minute apart from each session's date."""
    from chatrecall.core._validate import check_timestamp

    keys: list[str] = []
    texts: list[str] = []
    meta: list[dict[str, Any]] = []
    for s, (turns, date) in enumerate(zip(sc["sessions"], sc["session_dates"])):
        start = check_timestamp(date)
        if start is None:
            raise ValueError(f"scenario {sc.get('id')!r}: session {s} has no date")
        for t, turn in enumerate(turns):
            keys.append(f"{s}:{t}")
            texts.append(turn["content"])
            meta.append({"session_id": f"s{s}", "role": turn["role"], "timestamp": start + 60.0 * t})
    return keys, texts, meta


def chat_question_time(meta: Sequence[Mapping[str, Any]]) -> float:
    """When a chat scenario's question is asked: three days after its last turn (``chat_scenario_turns``' meta)."""
    return float(meta[-1]["timestamp"]) + 3 * 86400.0


def indexed_baselines(embedder: Embedder, keys: Sequence[str], texts: Sequence[str],
                      meta: Sequence[Mapping[str, Any]]) -> tuple[DenseRanker, BM25Ranker]:
    """The dense and BM25 baselines, both indexed on the same turns."""
    dense, bm25 = DenseRanker(embedder), BM25Ranker()
    dense.index(keys, texts, meta)
    bm25.index(keys, texts, meta)
    return dense, bm25


def _part_vectors(embedder: Embedder, texts: Sequence[str], roles: Sequence[str]) -> list[np.ndarray | None]:
    """Per text, the vectors of its sentences as the engine stores them (None for a one-sentence text)."""
    from chatrecall.core._index import sentence_parts

    parts = [sentence_parts(t, r) for t, r in zip(texts, roles)]
    flat = [x for ps in parts for x in ps]
    if not flat:
        return [None] * len(texts)
    vecs = np.asarray(embedder.embed_documents(flat), dtype=np.float32)
    out: list[np.ndarray | None] = []
    at = 0
    for ps in parts:
        out.append(vecs[at: at + len(ps)] if ps else None)
        at += len(ps)
    return out


class IndexedHaystack:
    """A haystack in a bare :class:`UserIndex`, as the engine would hold it, without a store.

    Records get the engine's ids (identical text in one session is one
    record), sequence numbers and entity keys, so :func:`rank_memories` over
    it ranks exactly as ``ChatRecall.search`` does. Used by
    ``benchmarks/tune_ranking.py``, which ranks every question many times.
    """

    def __init__(self, embedder: Embedder, keys: Sequence[str], texts: Sequence[str],
                 meta: Sequence[Mapping[str, Any]], *, extractor: Any = None,
                 sentence_vectors: bool | None = None) -> None:
        from chatrecall.core import RegexEntityExtractor, RetrievalConfig, UserIndex
        from chatrecall.core._engine import _hash_id
        from chatrecall.core._types import Record

        ext = extractor or RegexEntityExtractor()
        self.index = UserIndex(embedder.dim)
        self.id_keys: dict[str, list[str]] = {}
        records: list[Record] = []
        rows: list[int] = []
        seq: dict[str, int] = {}
        for i, (key, text, m) in enumerate(zip(keys, texts, meta)):
            sid = str(m["session_id"])
            rid = _hash_id("u", sid, text.strip())
            if rid in self.id_keys:
                self.id_keys[rid].append(key)
                continue
            self.id_keys[rid] = [key]
            s = seq.get(sid, 0)
            seq[sid] = s + 1
            ents = tuple(dict.fromkeys(e.key for e in ext.extract(text)))
            records.append(Record(id=rid, text=text, user_id="u", session_id=sid, role=str(m.get("role", "user")),
                                  timestamp=float(m["timestamp"]), seq=s, entities=ents))
            rows.append(i)
        vecs = embedder.embed_documents([texts[i] for i in rows])
        if sentence_vectors is None:  # as the engine: RetrievalConfig's default
            sentence_vectors = RetrievalConfig().sentence_vectors
        parts = _part_vectors(embedder, [texts[i] for i in rows], [r.role for r in records]) \
            if sentence_vectors else None
        self.index.add(records, vecs, parts)

    def rank(self, query: str, qvec: np.ndarray, entities: Sequence[Any], *, k: int, now: float,
             strategy: Any = None, weights: Mapping[str, float] | None = None, params: Any = None) -> list[str]:
        """Caller keys best first (``k`` turns, each expanded to its keys)."""
        from chatrecall.core._config import RetrievalConfig
        from chatrecall.core._ranking import DEFAULT_PARAMS, rank_memories

        cfg = RetrievalConfig(weights=weights) if weights is not None else RetrievalConfig()
        r = rank_memories(self.index, query, qvec, entities, strategy=strategy, k=k, now=now, config=cfg,
                          params=params or DEFAULT_PARAMS)
        out: list[str] = []
        for p in r.positions[:k].tolist():
            out.extend(self.id_keys[self.index.records[p].id])
        return out


def rank_haystack(
    names: Sequence[str],
    engine: Any,
    emb: CachingEmbedder,
    user: str,
    keys: Sequence[str],
    texts: Sequence[str],
    meta: Sequence[Mapping[str, Any]],
    queries: Sequence[str],
    k: int,
    secs: dict[str, float],
    *,
    on_query: Callable[[], None] | None = None,
    before_forget: Callable[[Mapping[str, list[str]], Mapping[str, Ranker]], None] | None = None,
) -> dict[str, list[list[str]]]:
    """The evaluation loop every quality harness shares, over one haystack.

    Embeds the haystack and the queries (so the timings below are search
    alone), indexes it in every baseline and ingests it into ``engine`` as
    ``user``, ranks every query with every system (``secs[name]`` accumulates
    the search time), calls ``before_forget(id_keys, rankers)`` (token study),
    then releases the haystack.

    Returns:
        System name -> per query, the caller keys best first (``k`` turns).
    """
    import contextlib

    from chatrecall.core import NotFoundError

    emb.embed_documents(list(texts))
    for q in queries:
        emb.embed_query(q)
    rankers = baseline_rankers([n for n in names if n in BASELINE_SYSTEMS], emb)
    for r in rankers.values():
        r.index(keys, texts, meta)
    id_keys: dict[str, list[str]] = {}
    if engine is not None:
        with contextlib.suppress(NotFoundError):  # nothing stored yet
            engine.forget(user)
        id_keys = ingest_haystack(engine, user, keys, texts, meta)
    out: dict[str, list[list[str]]] = {n: [] for n in names}
    for q in queries:
        for n in names:
            t0 = time.perf_counter()
            if n in CHATRECALL_SYSTEMS:
                items = engine.search(q, user_id=user, k=k, strategy=CHATRECALL_SYSTEMS[n])
                ranked = [key for it in items for key in id_keys.get(it.id, ())]
            else:
                ranked = rankers[n].rank(q, k)
            secs[n] = secs.get(n, 0.0) + time.perf_counter() - t0
            out[n].append(ranked)
        if on_query is not None:
            on_query()
    if before_forget is not None:
        before_forget(id_keys, rankers)
    for r in rankers.values():
        r.close()
    if engine is not None:
        with contextlib.suppress(NotFoundError):
            engine.forget(user)
    return out
