"""ONNX Runtime backend of :class:`~chatrecall.adapters.sentence_transformers.SentenceTransformerEmbedder`.

A plain sentence-transformers model directory (Transformer + Pooling, with an
optional Normalize; all-MiniLM-L6-v2 as bundled) is exported to ONNX once, on
first use, from its local PyTorch weights (``torch.onnx.export``, no network),
and cached under ``$CHATRECALL_HOME/onnx`` (default
``~/.local/share/chatrecall/onnx``). Backends:

* ``onnx``: the exported float32 graph (eager attention, then ONNX Runtime's
  transformer fusions: embedding + LayerNorm, attention, bias + GELU, skip +
  LayerNorm); vectors equal PyTorch's (cosine > 0.9999).
* ``onnx-int8``: that graph after dynamic int8 quantisation of its weight
  MatMuls / attention projections (per-channel weights, embeddings and the
  activation x activation products stay float32), for queries and documents.
  Dynamic activation scales are per batch, so a document's vector depends a
  little on its batch; LoCoMo dev dense R@10 -0.9 % relative.
* ``onnx-int8-query`` (what ``auto`` picks): the int8 graph for single queries
  only (no padding: one deterministic vector per text; mean cosine to PyTorch
  0.995), the float32 graph for documents, so stored vectors equal PyTorch's.
  Query embedding about 6x faster than PyTorch with dense recall unchanged
  within 1 % on LoCoMo and LongMemEval dev (README, "Speed and scale").

Tokenisation runs the model's own ``tokenizer.json`` (``tokenizers``, Rust),
with the model's ``max_seq_length``; pooling and L2 normalisation run in numpy.
After the first export, nothing of PyTorch is imported.

Single texts run on a one-thread session: on a loaded machine one
thread per call has the lowest latency and concurrent callers scale across
cores. Batches run on a session with up to ``batch_threads`` threads.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chatrecall._home import data_dir
from chatrecall.core import ConfigError

from ._guard import install_hint

__all__ = ["BACKENDS", "OnnxEncoder", "available", "cache_root", "resolve_backend"]

log = logging.getLogger("chatrecall.onnx")

#: Backend names a user can ask for (``auto`` picks ``onnx-int8-query`` when it can run, else ``onnx``, else
#: ``torch``).
BACKENDS = ("auto", "torch", "onnx", "onnx-int8", "onnx-int8-query")
#: Bumped when the exported graph or the quantisation recipe changes (invalidates caches).
EXPORT_VERSION = "2"
_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
_POOLING = ("pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens",
            "pooling_mode_mean_sqrt_len_tokens")


def cache_root() -> Path:
    """Where exported models are cached: ``$CHATRECALL_HOME/onnx`` or the platform data dir's ``chatrecall/onnx``."""
    return data_dir("onnx")


def _installed(module: str) -> bool:
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def available(quantized: bool) -> bool:
    """Whether the ONNX backend can run here (the export also needs torch and transformers)."""
    need = ["onnxruntime", "tokenizers"] + (["onnx"] if quantized else [])
    return all(_installed(m) for m in need)


@dataclass(frozen=True, slots=True)
class _Layout:
    """What the export and the runtime need to know about a model directory."""

    root: Path
    transformer: Path
    dim: int
    pooling: str
    max_seq_length: int
    prompts: dict[str, str]


def _layout(path: Path) -> _Layout:
    """Read a sentence-transformers directory; ConfigError if it is not Transformer + Pooling (+ Normalize)."""
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        if kinds[:2] != ["Transformer", "Pooling"] or not set(kinds[2:]) <= {"Normalize"}:
            raise ConfigError(f"model {str(path)!r}: ONNX backend supports Transformer + Pooling (+ Normalize), "
                              f"not {kinds}")
        transformer = path / modules[0]["path"]
        pool = json.loads((path / modules[1]["path"] / "config.json").read_text(encoding="utf-8"))
        modes = [m for m in _POOLING if pool.get(m)]
        if len(modes) != 1:
            raise ConfigError(f"model {str(path)!r}: ONNX backend needs exactly one pooling mode, got {modes}")
        st_cfg: dict[str, Any] = {}
        for name in ("sentence_bert_config.json",):
            f = transformer / name
            if f.exists():
                st_cfg = json.loads(f.read_text(encoding="utf-8"))
        extra = path / "config_sentence_transformers.json"
        prompts = json.loads(extra.read_text(encoding="utf-8")).get("prompts") or {} if extra.exists() else {}
        max_len = int(st_cfg.get("max_seq_length") or 512)
        if not (transformer / "tokenizer.json").exists():
            raise ConfigError(f"model {str(path)!r}: ONNX backend needs a fast tokenizer (tokenizer.json)")
        return _Layout(path, transformer, int(pool["word_embedding_dimension"]), modes[0], max_len,
                       {str(k): str(v) for k, v in prompts.items()})
    except ConfigError:
        raise
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise ConfigError(f"model {str(path)!r} is not a sentence-transformers directory the ONNX backend can "
                          f"export: {type(exc).__name__}: {exc}") from exc


def _fingerprint(layout: _Layout) -> str:
    """Cache key of a model: config, tokenizer and weights (size + first/last MiB), export recipe, ORT version."""
    import onnxruntime as ort

    h = hashlib.sha256(f"{EXPORT_VERSION}|{ort.__version__}|{layout.max_seq_length}|{layout.pooling}".encode())
    for name in ("config.json", "tokenizer.json"):
        f = layout.transformer / name
        if f.exists():
            h.update(f.read_bytes())
    for name in _WEIGHTS:
        f = layout.transformer / name
        if f.exists():
            size = f.stat().st_size
            h.update(f"{name}:{size}".encode())
            with f.open("rb") as fh:
                h.update(fh.read(1 << 20))
                fh.seek(max(size - (1 << 20), 0))
                h.update(fh.read(1 << 20))
            break
    return h.hexdigest()[:16]


def _export_fp32(layout: _Layout, out: Path) -> None:
    """Trace the transformer (token ids -> last hidden state) to ONNX from its local weights, then fuse.

    Eager attention traces to the plain MatMul/Softmax pattern ONNX Runtime's transformer optimizer fuses
    (the SDPA export does not fuse); the fusions are an optimisation only and skipped if they fail.
    """
    import torch
    from transformers import AutoModel

    try:
        model = AutoModel.from_pretrained(str(layout.transformer), local_files_only=True,
                                          attn_implementation="eager").eval()
    except (TypeError, ValueError):  # a model class without the eager/sdpa switch
        model = AutoModel.from_pretrained(str(layout.transformer), local_files_only=True).eval()
    import inspect

    params = inspect.signature(model.forward).parameters
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in params]

    class _Wrap(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *args: Any) -> Any:
            return self.inner(**dict(zip(names, args))).last_hidden_state

    ids = torch.ones(2, 8, dtype=torch.long)
    args = tuple(torch.zeros_like(ids) if n == "token_type_ids" else ids for n in names)
    axes = {n: {0: "batch", 1: "seq"} for n in names}
    axes["hidden"] = {0: "batch", 1: "seq"}
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    import warnings

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_Wrap(model), args, str(tmp), dynamo=False, input_names=names, output_names=["hidden"],
                          dynamic_axes=axes, opset_version=17)
    tmp_opt = out.with_name(f"{out.name}.{os.getpid()}.opt.tmp")
    try:
        _fuse(layout, tmp, tmp_opt)
        os.replace(tmp_opt, out)
    except Exception as exc:  # noqa: BLE001 - fusions are an optimisation only
        log.info("ONNX transformer fusions skipped: %s: %s", type(exc).__name__, exc)
        os.replace(tmp, out)
    finally:
        for f in (tmp, tmp_opt):
            f.unlink(missing_ok=True)


@contextlib.contextmanager
def _export_lock(folder: Path) -> Iterator[None]:
    """Hold ``folder/.export.lock`` exclusively (an advisory ``flock``; released if the process dies).

    Where ``fcntl`` is missing (Windows) nothing is locked: processes exporting at once may race, and one
    that loses falls back to PyTorch with a warning.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(folder / ".export.lock", "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _fuse(layout: _Layout, src: Path, out: Path) -> None:
    """ONNX Runtime's offline transformer fusions (the architectures it knows; others get the generic ones)."""
    from onnxruntime.transformers.optimizer import optimize_model

    cfg = json.loads((layout.transformer / "config.json").read_text(encoding="utf-8"))
    kind = cfg.get("model_type", "bert")
    opt = optimize_model(str(src), model_type=kind if kind in ("bert", "roberta", "distilbert") else "bert",
                         num_heads=int(cfg.get("num_attention_heads", 0)), hidden_size=int(cfg.get("hidden_size", 0)),
                         opt_level=1)
    opt.save_model_to_file(str(out))


def _weight_nodes(file: Path) -> list[str]:
    """MatMul / fused Attention nodes whose weights are constants: the ones worth int8.

    Left in float32: the embedding tables (Gather, EmbedLayerNormalization) and the activation x activation
    MatMuls of an unfused attention (Q.K^T, softmax.V), whose dynamic quantisation costs the most accuracy.
    """
    import onnx

    graph = onnx.load(str(file), load_external_data=False).graph
    consts = {i.name for i in graph.initializer} | {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    return [n.name for n in graph.node
            if n.op_type in ("MatMul", "Attention") and len(n.input) > 1 and n.input[1] in consts]


def _quantize(layout: _Layout, fp32: Path, out: Path) -> None:
    """Dynamic int8 of the (fused) float32 graph's weight products, per-channel weights."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    root = logging.getLogger()
    quiet = _DropQuantizeAdvice()
    root.addFilter(quiet)  # onnxruntime advises pre-processing on the root logger: a new user's first use printed it
    try:
        quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                         nodes_to_quantize=_weight_nodes(fp32), op_types_to_quantize=["MatMul", "Attention"],
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        os.replace(tmp, out)
    finally:
        root.removeFilter(quiet)
        tmp.unlink(missing_ok=True)


class _DropQuantizeAdvice(logging.Filter):
    """Drops onnxruntime's "Please consider to run pre-processing before quantization" (the export is fused)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Please consider to run pre-processing")


class OnnxEncoder:
    """Runs a sentence-transformers model directory in ONNX Runtime; built lazily.

    Example:
        >>> enc = OnnxEncoder(default_model_path(), backend="onnx-int8-query")  # doctest: +SKIP
        >>> enc.encode(["hello"], document=False).shape  # doctest: +SKIP
        (1, 384)

    Args:
        path: A local sentence-transformers model directory.
        backend: ``onnx`` (float32), ``onnx-int8`` (int8 for everything) or ``onnx-int8-query`` (int8 for
            single queries, float32 for documents).
        quantized: Legacy switch: True means ``onnx-int8``, False ``onnx`` (overrides ``backend``).
        cache_dir: Where exported graphs live (default :func:`cache_root`).
        batch_threads: ONNX Runtime threads for batches (default: CPU count, at most 4).

    Raises:
        ConfigError: The directory is not a model the backend can export, or an unknown ``backend``.
    """

    def __init__(self, path: str | os.PathLike[str], *, backend: str = "onnx", quantized: bool | None = None,
                 cache_dir: str | os.PathLike[str] | None = None, batch_threads: int | None = None) -> None:
        if quantized is not None:
            backend = "onnx-int8" if quantized else "onnx"
        if backend not in ("onnx", "onnx-int8", "onnx-int8-query"):
            raise ConfigError(f"backend={backend!r} is not an ONNX backend")
        self.layout = _layout(Path(path))
        self.name = backend
        #: Whether anything runs on the int8 graph (queries at least).
        self.quantized = backend != "onnx"
        self._cache_dir = Path(cache_dir) if cache_dir is not None else cache_root()
        self._batch_threads = batch_threads or max(1, min(os.cpu_count() or 1, 4))
        self._lock = threading.Lock()
        self._tok: Any = None
        self._tok1: Any = None
        self._query: Any = None  # one thread, single queries
        self._doc1: Any = None  # one thread, single documents (the query session unless onnx-int8-query)
        self._batch: Any = None
        self._inputs: list[str] = []
        self.model_file: Path | None = None  # the graph of queries
        self.doc_model_file: Path | None = None  # the graph of documents

    @property
    def dim(self) -> int:
        """Output dimension (from the pooling config)."""
        return self.layout.dim

    def prompt(self, document: bool) -> str:
        """Prompt text prepended like sentence-transformers does (``query`` / ``document`` or ``passage``)."""
        p = self.layout.prompts
        if document:
            return p.get("document", p.get("passage", ""))
        return p.get("query", "")

    # ------------------------------------------------------------------ build
    @property
    def folder(self) -> Path:
        """The cache folder of this model's graphs (one per model directory and export recipe)."""
        return self._cache_dir / f"{self.layout.root.name}-{_fingerprint(self.layout)}"

    def model_path(self, quantized: bool | None = None) -> Path:
        """The cached graph (int8 if ``quantized``, default: the query graph), exported now if missing.

        One process at a time exports into the folder (the others wait, then find the graph made): two
        workers of one deploy starting together on a fresh machine raced, and one fell back to PyTorch.
        """
        quantized = self.quantized if quantized is None else quantized
        folder = self.folder
        fp32 = folder / "model.onnx"
        target = folder / ("model-int8.onnx" if quantized else "model.onnx")
        if target.exists():
            return target
        folder.mkdir(parents=True, exist_ok=True)
        with _export_lock(folder):
            if target.exists():  # made by another process while this one waited
                return target
            if not fp32.exists():
                log.info("exporting %s to ONNX (once) into %s", self.layout.root, folder)
                _export_fp32(self.layout, fp32)
            if quantized:
                _quantize(self.layout, fp32, target)
            meta = {"source": str(self.layout.root), "export_version": EXPORT_VERSION, "dim": self.layout.dim,
                    "pooling": self.layout.pooling, "max_seq_length": self.layout.max_seq_length}
            (folder / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
        return target

    def _session(self, file: Path, threads: int) -> Any:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        return ort.InferenceSession(str(file), opts, providers=["CPUExecutionProvider"])

    def _open(self, quantized: bool) -> tuple[Path, Any]:
        """A one-thread session on the graph; a torn or corrupted cache file is exported again (once)."""
        file = self.model_path(quantized)
        try:
            return file, self._session(file, 1)
        except Exception:  # noqa: BLE001 - a torn or corrupted cache file: export again, once
            file.unlink(missing_ok=True)
            try:
                file = self.model_path(quantized)  # int8: quantised again from the cached float32 graph
                return file, self._session(file, 1)
            except Exception:  # noqa: BLE001 - the float32 graph is bad too: export from scratch
                file.unlink(missing_ok=True)
                (file.parent / "model.onnx").unlink(missing_ok=True)
                file = self.model_path(quantized)
                return file, self._session(file, 1)

    def _ensure(self) -> None:
        if self._query is not None:
            return
        with self._lock:
            if self._query is not None:
                return
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self.layout.transformer / "tokenizer.json"))
            pad = tok.padding or {}
            tok.enable_truncation(max_length=self.layout.max_seq_length)
            tok1 = Tokenizer.from_str(tok.to_str())  # single texts: truncation, never padding
            tok1.no_padding()
            tok.enable_padding(pad_id=int(pad.get("pad_id", 0)), pad_token=str(pad.get("pad_token", "[PAD]")),
                               pad_type_id=int(pad.get("pad_type_id", 0)))
            file, query = self._open(self.quantized)
            # onnx-int8-query: the float32 graph is exported now; its sessions open on the first documents
            doc_file = self.model_path(False) if self.name == "onnx-int8-query" else file
            self._inputs = [i.name for i in query.get_inputs()]
            self._tok, self._tok1, self.model_file, self.doc_model_file = tok, tok1, file, doc_file
            self._doc1 = query if doc_file == file else None
            self._query = query

    def _doc_single(self) -> Any:
        if self._doc1 is None:
            with self._lock:
                if self._doc1 is None:
                    self.doc_model_file, self._doc1 = self._open(False)
        return self._doc1

    def warm(self) -> None:
        """Export/load now instead of on the first call."""
        self._ensure()

    @property
    def loaded(self) -> bool:
        """Whether the query session is open (the first encoding, or :meth:`warm`, opens it)."""
        return self._query is not None

    # ------------------------------------------------------------------ run
    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        m = mask[:, :, None].astype(np.float32)
        mode = self.layout.pooling
        if mode == "pooling_mode_cls_token":
            out = hidden[:, 0]
        elif mode == "pooling_mode_max_tokens":
            out = np.where(m > 0, hidden, -1e9).max(axis=1)
        else:
            summed = (hidden * m).sum(axis=1)
            count = np.maximum(m.sum(axis=1), 1e-9)
            out = summed / (np.sqrt(count) if mode == "pooling_mode_mean_sqrt_len_tokens" else count)
        out = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return np.ascontiguousarray(out, dtype=np.float32)

    def _run(self, session: Any, texts: Sequence[str]) -> np.ndarray:
        enc = self._tok.encode_batch(list(texts))
        ids = np.asarray([e.ids for e in enc], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return self._pool(session.run(None, {n: feed[n] for n in self._inputs})[0], mask)

    def _run_one(self, session: Any, text: str) -> np.ndarray:
        """One text, unpadded: attention mask all ones, no per-batch numpy work."""
        ids = np.asarray(self._tok1.encode(text).ids, dtype=np.int64).reshape(1, -1)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, {n: feed[n] for n in self._inputs})[0]
        if self.layout.pooling == "pooling_mode_mean_tokens":
            out = hidden[0].mean(axis=0)
            return (out / max(float(np.linalg.norm(out)), 1e-12)).astype(np.float32).reshape(1, -1)
        return self._pool(hidden, feed["attention_mask"])

    def encode(self, texts: Sequence[str], *, document: bool, batch_size: int = 64) -> np.ndarray:
        """L2-normalised float32 vectors, shape ``(len(texts), dim)``."""
        self._ensure()
        prompt = self.prompt(document)
        items = [prompt + t for t in texts] if prompt else list(texts)
        if len(items) == 1:
            return self._run_one(self._doc_single() if document else self._query, items[0])
        if self._batch is None:
            with self._lock:
                if self._batch is None:
                    assert self.doc_model_file is not None
                    self._batch = self._session(self.doc_model_file, self._batch_threads)
        # Batches (documents, or several queries at once) run on the documents' graph;
        # length-sorted batches pad less (as sentence-transformers does)
        order = np.argsort([-len(t) for t in items], kind="stable")
        out = np.empty((len(items), self.layout.dim), dtype=np.float32)
        for start in range(0, len(items), batch_size):
            sel = order[start:start + batch_size]
            out[sel] = self._run(self._batch, [items[i] for i in sel])
        return out


def resolve_backend(backend: str, path: Path | None) -> OnnxEncoder | None:
    """The ONNX encoder ``backend`` asks for, or None for PyTorch.

    ``auto`` gives ``onnx-int8-query`` (int8 single queries, float32
    documents: query embedding about 6x PyTorch, LoCoMo / LongMemEval dense
    recall within 1 %) when ONNX Runtime, ``onnx`` and ``tokenizers`` are
    installed and ``path`` is a plain local model directory; ``onnx`` without
    the ``onnx`` package; else None (PyTorch). ``onnx-int8`` also embeds
    documents in int8 (faster ingest, about 1 % lower dense R@10), opt-in.

    Raises:
        ConfigError: Unknown name, or an ONNX backend asked for a model or an
            install that cannot run it.
    """
    if backend not in BACKENDS:
        raise ConfigError(f"backend={backend!r} is unknown; use one of {', '.join(BACKENDS)}")
    if backend == "torch":
        return None
    quantized = backend != "onnx"
    if backend == "auto":
        if path is None or not path.is_dir() or not available(False):
            return None
        try:
            return OnnxEncoder(path, backend="onnx-int8-query" if available(True) else "onnx")
        except ConfigError as exc:
            log.info("ONNX backend not used: %s", exc)
            return None
    if not available(quantized):
        need = "onnxruntime, tokenizers" + (" and onnx" if quantized else "")
        raise ConfigError(f"backend={backend!r} needs {need}: {install_hint('embeddings')}")
    if path is None or not path.is_dir():
        raise ConfigError(f"backend={backend!r} needs a local model directory, not a loaded model")
    return OnnxEncoder(path, backend=backend)
