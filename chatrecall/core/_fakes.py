"""Deterministic test doubles shipped with the package (like httpx's MockTransport)."""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ._errors import ConfigError, InvalidInputError

__all__ = ["ExactVectorIndex", "ExactVectorIndexFactory", "HashEmbedder"]

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


class ExactVectorIndex:
    """A :class:`~chatrecall.core.VectorIndex` that scans every vector: exact, for tests.

    It counts its searches (``searches``) so a test can see the engine use it;
    ``fail`` makes every later call raise, as a broken index would.

    Example:
        >>> ix = ExactVectorIndexFactory().create(2)
        >>> ix.add(np.arange(2), np.eye(2, dtype=np.float32))
        >>> ix.search(np.array([0.0, 1.0], dtype=np.float32), 1).tolist()
        [1]
    """

    def __init__(self, dim: int, vectors: np.ndarray | None = None) -> None:
        self.dim = dim
        self._vec = np.zeros((0, dim), dtype=np.float32) if vectors is None else vectors
        self.searches = 0
        self.fail = False

    def __len__(self) -> int:
        return int(self._vec.shape[0])

    def _check(self) -> None:
        if self.fail:
            raise RuntimeError("ExactVectorIndex told to fail")

    def add(self, positions: np.ndarray, vectors: np.ndarray) -> None:
        self._check()
        positions = np.asarray(positions, dtype=np.int64)
        if positions.size and not np.array_equal(positions, np.arange(len(self), len(self) + positions.size)):
            raise ValueError(f"positions must continue at {len(self)}, got {positions[:3].tolist()}...")
        self._vec = np.concatenate([self._vec, np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)])

    def search(self, qvec: np.ndarray, k: int) -> np.ndarray:
        self._check()
        self.searches += 1
        sims = self._vec @ np.asarray(qvec, dtype=np.float32)
        k = min(k, sims.size)
        if k <= 0:
            return np.zeros(0, dtype=np.int64)
        return np.argpartition(-sims, k - 1)[:k].astype(np.int64)

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        np.save(buf, self._vec, allow_pickle=False)
        return buf.getvalue()


class ExactVectorIndexFactory:
    """Makes :class:`ExactVectorIndex` instances (and remembers them: ``made``), for tests."""

    name = "exact-test"

    def __init__(self) -> None:
        self.made: list[ExactVectorIndex] = []

    def create(self, dim: int) -> ExactVectorIndex:
        ix = ExactVectorIndex(dim)
        self.made.append(ix)
        return ix

    def restore(self, data: bytes, dim: int) -> ExactVectorIndex:
        vec = np.load(io.BytesIO(data), allow_pickle=False)
        if vec.ndim != 2 or vec.shape[1] != dim:
            raise ValueError(f"stored vectors have shape {vec.shape}, not (n, {dim})")
        ix = ExactVectorIndex(dim, vec.astype(np.float32, copy=False))
        self.made.append(ix)
        return ix
