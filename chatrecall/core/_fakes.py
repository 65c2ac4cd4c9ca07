"""Deterministic test doubles shipped with the package (like httpx's MockTransport)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ._errors import ConfigError, InvalidInputError

__all__ = ["HashEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=65536)
def _bucket(token: str, dim: int) -> tuple[int, float]:
    # blake2b, not hash(): the vector must be identical across processes.
    h = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
    v = int.from_bytes(h, "little")
    return v % dim, 1.0 if (v >> 63) & 1 else -1.0


class HashEmbedder:
    """Feature-hashing embedder: texts sharing words get similar vectors.

    Fast and deterministic, for unit tests and examples; it knows no
    synonyms, so use a real model (``SentenceTransformerEmbedder``) for quality.

    Example:
        >>> emb = HashEmbedder(dim=64)
        >>> emb.embed_query("hello world").shape
        (64,)
    """

    def __init__(self, dim: int = 256) -> None:
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 8:
            raise ConfigError(f"dim={dim!r} is invalid: must be an int >= 8")
        self._dim = dim
        self.calls = 0  # number of texts embedded, so tests can check caching/batching

    @property
    def dim(self) -> int:
        return self._dim

    def _one(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be str, got {type(text).__name__}")
        vec = np.zeros(self._dim, dtype=np.float32)
        words = _WORD.findall(text.casefold())
        for w in words:
            i, s = _bucket(w, self._dim)
            vec[i] += s
        for a, b in zip(words, words[1:]):  # bigrams give some word-order signal
            i, s = _bucket(a + " " + b, self._dim)
            vec[i] += 0.5 * s
        n = float(np.linalg.norm(vec))
        if n == 0.0:
            vec[0] = 1.0
            return vec
        return vec / n

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += len(texts)
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.stack([self._one(t) for t in texts]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        self.calls += 1
        return self._one(text)
