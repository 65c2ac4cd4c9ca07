"""SentenceTransformerEmbedder and TransformersTokenCounter on the real bundled all-MiniLM-L6-v2."""

from __future__ import annotations

import socket
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")

from chatrecall.adapters.sentence_transformers import (  # noqa: E402
    EmbeddingCacheInfo,
    SentenceTransformerEmbedder,
    default_model_path,
)
from chatrecall.adapters.transformers import TransformersTokenCounter  # noqa: E402
from chatrecall.core._errors import ConfigError, InvalidInputError  # noqa: E402
from chatrecall.core._protocols import Embedder, TokenCounter  # noqa: E402
from chatrecall.core._types import Record  # noqa: E402

pytestmark = pytest.mark.model


def test_shape_dtype_and_normalisation(st_embedder: SentenceTransformerEmbedder) -> None:
    assert isinstance(st_embedder, Embedder)
    assert st_embedder.dim == 384
    docs = st_embedder.embed_documents(["The cat sat on the mat.", "", "Deploy with Helm to k8s"])
    assert docs.shape == (3, 384) and docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    q = st_embedder.embed_query("where do we deploy?")
    assert q.shape == (384,) and q.dtype == np.float32
    assert abs(float(np.linalg.norm(q)) - 1.0) < 1e-5
    empty = st_embedder.embed_documents([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32


def test_query_and_document_embeddings_agree(st_embedder: SentenceTransformerEmbedder) -> None:
    # MiniLM has no query/document prompts, so both paths run the same model: the same vector, except under
    # onnx-int8-query (the default when ONNX Runtime is installed), whose queries run the int8 graph.
    text = "a query about kubernetes"
    q, d = st_embedder.embed_query(text), st_embedder.embed_documents([text])[0]
    if st_embedder.backend == "onnx-int8-query":
        assert 0.98 < float(q @ d) < 0.99999
    else:
        np.testing.assert_allclose(q, d, atol=1e-5)
    exact = SentenceTransformerEmbedder(backend="onnx" if st_embedder.backend.startswith("onnx") else "torch",
                                        cache_size=0)
    np.testing.assert_allclose(exact.embed_query(text), exact.embed_documents([text])[0], atol=1e-5)


def test_semantic_sanity(st_embedder: SentenceTransformerEmbedder) -> None:
    dog, puppy, sheet = st_embedder.embed_documents(["dog", "puppy", "spreadsheet"])
    assert float(dog @ puppy) > float(dog @ sheet) + 0.2
    q = st_embedder.embed_query("How do I restart the postgres database?")
    docs = st_embedder.embed_documents(
        ["Restarting PostgreSQL: run systemctl restart postgresql", "My favourite pasta recipe uses garlic"]
    )
    assert float(docs[0] @ q) > float(docs[1] @ q)


def test_query_cache_is_a_bounded_lru(st_embedder: SentenceTransformerEmbedder) -> None:
    emb = SentenceTransformerEmbedder(st_embedder.model, cache_size=2)  # shares the loaded model
    assert emb.cache_info() == EmbeddingCacheInfo(hits=0, misses=0, size=0, maxsize=2)
    a1 = emb.embed_query("alpha")
    a1[:] = 0.0  # the caller owns its copy: the cache must not be poisoned
    a2 = emb.embed_query("alpha")
    assert emb.cache_info() == EmbeddingCacheInfo(hits=1, misses=1, size=1, maxsize=2)
    np.testing.assert_allclose(np.linalg.norm(a2), 1.0, atol=1e-5)
    emb.embed_query("beta")
    emb.embed_query("alpha")  # alpha is now most recent
    emb.embed_query("gamma")  # evicts beta
    info = emb.cache_info()
    assert (info.hits, info.misses, info.size) == (2, 3, 2)
    emb.embed_query("beta")
    assert emb.cache_info().misses == 4
    emb.cache_clear()
    assert emb.cache_info() == EmbeddingCacheInfo(0, 0, 0, 2)
    off = SentenceTransformerEmbedder(st_embedder.model, cache_size=0)
    off.embed_query("x")
    off.embed_query("x")
    assert off.cache_info() == EmbeddingCacheInfo(hits=0, misses=2, size=0, maxsize=0)


def test_thread_safe(st_embedder: SentenceTransformerEmbedder) -> None:
    emb = SentenceTransformerEmbedder(st_embedder.model, cache_size=8)
    texts = [f"message number {i % 12}" for i in range(48)]
    expected = {t: st_embedder.embed_documents([t])[0] for t in set(texts)}
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(emb.embed_query, texts))
    for t, v in zip(texts, results):
        np.testing.assert_allclose(v, expected[t], atol=1e-5)
    info = emb.cache_info()
    assert info.hits + info.misses == len(texts) and info.size <= 8


def test_loads_offline_from_a_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    emb = SentenceTransformerEmbedder(default_model_path(), batch_size=4)
    assert emb.embed_documents(["offline"]).shape == (1, 384)


def test_with_real_chroma(st_embedder: SentenceTransformerEmbedder, embedded_store: Any) -> None:
    texts = [
        "We deploy the API with Helm on Kubernetes",
        "Alice's cat is called Miso",
        "The quarterly budget spreadsheet is due Friday",
    ]
    records = [
        Record(id=f"m{i}", text=t, user_id="u1", session_id="s1", role="user", timestamp=float(i))
        for i, t in enumerate(texts)
    ]
    embedded_store.upsert("memories", records, st_embedder.embed_documents(texts))
    hits = embedded_store.query(
        "memories", st_embedder.embed_query("what is the name of the kitten?"), 3, {"user_id": "u1"}
    )
    assert hits[0].record.id == "m1"
    assert hits[0].similarity > hits[1].similarity


def test_bad_arguments(st_embedder: SentenceTransformerEmbedder, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        st_embedder.embed_documents("not a list")
    with pytest.raises(InvalidInputError, match="texts\\[1\\]"):
        st_embedder.embed_documents(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        st_embedder.embed_query(None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="batch_size"):
        SentenceTransformerEmbedder(st_embedder.model, batch_size=0)
    with pytest.raises(ConfigError, match="cache_size"):
        SentenceTransformerEmbedder(st_embedder.model, cache_size=-1)
    with pytest.raises(ConfigError, match="offline"):
        SentenceTransformerEmbedder(tmp_path / "no-such-model")
    with pytest.raises(ConfigError, match="model="):
        SentenceTransformerEmbedder(42)  # type: ignore[arg-type]


def test_import_guard_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ImportError, match=r"pip install 'chatrecall\[embeddings\]'"):
        SentenceTransformerEmbedder()


# -- TransformersTokenCounter (same Hugging Face stack, bundled MiniLM tokenizer) --------------


def test_transformers_counter_from_path() -> None:
    counter = TransformersTokenCounter(default_model_path())
    assert isinstance(counter, TokenCounter)
    assert counter.count("hello world") == 2  # no [CLS]/[SEP]
    assert counter.count("") == 0
    assert counter.count("word " * 1000) == 1000  # never truncated to the model's max length


def test_transformers_counter_from_tokenizer_objects() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    raw = tokenizers.Tokenizer.from_file(str(default_model_path() / "tokenizer.json"))
    assert raw.padding is not None  # MiniLM's tokenizer.json pads to 128...
    assert TransformersTokenCounter(raw).count("hello world") == 2  # ...which must not be counted
    assert raw.padding is not None  # and the caller's tokenizer is left alone
    transformers = pytest.importorskip("transformers")
    hf = transformers.AutoTokenizer.from_pretrained(str(default_model_path()), local_files_only=True)
    assert TransformersTokenCounter(hf).count("hello world") == 2
    with pytest.raises(InvalidInputError):
        TransformersTokenCounter(hf).count(b"bytes")  # type: ignore[arg-type]


def test_transformers_counter_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="offline"):
        TransformersTokenCounter(tmp_path / "missing")
    with pytest.raises(ConfigError, match="encode"):
        TransformersTokenCounter(object())
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ImportError, match=r"pip install 'chatrecall\[embeddings\]'"):
        TransformersTokenCounter(default_model_path())
