"""The public surface: curated __all__, private modules, import guards, core purity."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import chatrecall
import chatrecall.core

ROOT = Path(chatrecall.__file__).parent

EXPECTED_TOP = {
    "BudgetConfig", "ChatRecall", "ChatRecallError", "ClosedError", "ConfigError", "Entity", "ForgetReport", "Gate",
    "GateConfig", "GateDecision", "GatePattern", "GateReason", "InvalidArgumentError", "InvalidInputError", "NotFoundError", "Pin",
    "PinConfig", "PinLimitError", "QueryType", "Record", "RetrievalConfig", "RetrievalResult", "Route",
    "ScoredItem", "StoreError", "StoreLimits", "StoreUnavailableError", "Strategy", "Turn", "__version__",
    "connect",
}


def test_top_level_all_is_curated_and_importable() -> None:
    assert set(chatrecall.__all__) == EXPECTED_TOP
    assert sorted(chatrecall.__all__) == list(chatrecall.__all__), "keep __all__ sorted"
    for name in chatrecall.__all__:
        assert getattr(chatrecall, name) is not None


#: Names the adapters and the MCP server import from ``chatrecall.core`` (never its private modules;
#: see tests/test_layering.py). Removing one from ``chatrecall.core.__all__`` breaks an adapter.
ADAPTER_NEEDS = {
    "Batch", "Candidate", "ChatRecall", "ChatRecallError", "ConfigError", "Embedder", "GateDecision", "InvalidInputError",
    "NotFoundError", "Pin", "PinCommand", "PinCommandResult", "Record", "RegexEntityExtractor", "RetrievalResult",
    "Scalar", "ScoredItem", "StoreError", "StoreHit", "StoreUnavailableError", "Strategy", "Turn", "Where",
    "apply_pin_command", "canonical_role", "check_id", "check_k", "check_keywords", "check_pin_scope", "check_strategy", "check_text",
    "closest_name", "budget_for", "format_context", "keywords_checked", "parse_pin_command", "rerank",
}


def test_core_all_covers_what_adapters_need() -> None:
    missing = ADAPTER_NEEDS - set(chatrecall.core.__all__)
    assert not missing, missing


def test_core_all_exports_exist_and_modules_are_private() -> None:
    for name in chatrecall.core.__all__:
        assert hasattr(chatrecall.core, name), name
    mods = [p.stem for p in (ROOT / "core").glob("*.py") if p.stem != "__init__"]
    assert mods and all(m.startswith("_") for m in mods), mods


def test_public_names_have_docstrings() -> None:
    for name in chatrecall.core.__all__:
        obj = getattr(chatrecall.core, name)
        if typing.get_origin(obj) is not None:
            continue  # a type alias (Scalar, Where): documented where it is defined
        if callable(obj) and not isinstance(obj, type(Path)):
            assert obj.__doc__, f"{name} has no docstring"


def test_core_imports_only_numpy_and_stdlib() -> None:
    allowed = set(sys.stdlib_module_names) | {"numpy", "chatrecall"}
    for path in (ROOT / "core").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for n in names:
                assert n.split(".")[0] in allowed, f"{path.name} imports {n}"


def test_importing_core_loads_no_framework() -> None:
    # An engine with the default (offline) token counter loads no tokenizer either: core/_tokens.py
    # imports the tiktoken adapter only when a tiktoken name is asked for.
    code = ("import sys, chatrecall, chatrecall.core, chatrecall.testing; chatrecall.testing.fake_engine(); "
            "bad = [m for m in ('torch','chromadb','langchain_core','llama_index','sentence_transformers',"
            "'tiktoken','transformers','chatrecall.adapters.tiktoken') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_testing_all_is_curated_and_documented() -> None:
    import chatrecall.testing as testing

    assert set(testing.__all__) == {"ExactVectorIndex", "ExactVectorIndexFactory", "HashEmbedder", "InMemoryStore",
                                   "ManualClock", "fake_engine"}
    for name in testing.__all__:
        assert getattr(testing, name).__doc__, f"chatrecall.testing.{name} has no docstring"


def test_manual_clock_moves_only_when_told() -> None:
    from chatrecall.testing import ManualClock, fake_engine

    clock = ManualClock()
    assert clock() == ManualClock.START == 1_700_000_000.0
    cr = fake_engine(clock=clock)
    try:
        cr.add("first", user_id="u", session_id="s")
        assert clock.advance(60.0) == ManualClock.START + 60.0
        clock.t = 2_000_000_000.0
        cr.add("second", user_id="u", session_id="s")
        assert [r.timestamp for r in cr.history("u", "s")] == pytest.approx([ManualClock.START, 2_000_000_000.0])
    finally:
        cr.close()


@pytest.mark.parametrize(("module", "dep", "extra"), [
    ("chatrecall.adapters.langchain", "langchain_core", "langchain"),
    ("chatrecall.adapters.llamaindex", "llama_index.core", "llamaindex"),
])
def test_adapter_without_its_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch, module: str, dep: str,
                                                   extra: str) -> None:
    monkeypatch.setitem(sys.modules, dep, None)
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(ImportError, match=rf"chatrecall\[{extra}\]"):
        importlib.import_module(module)


def test_bench_without_its_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from chatrecall.cli import main

    monkeypatch.setitem(sys.modules, "bm25s", None)
    # Refused before the data is read: the file does not even exist.
    rc = main(["bench", "locomo", str(tmp_path / "missing.json"), "--out", str(tmp_path / "out.json"),
               "--systems", "chatrecall,bm25_only", "--embedder", "hash", "--store", "memory"])
    assert rc == 2
    assert 'pip install "chatrecall[bench]"' in capsys.readouterr().err


def test_bench_names_the_extra_for_a_late_import() -> None:
    from chatrecall._bench._common import bench_dependency_message

    msg = bench_dependency_message(ModuleNotFoundError("No module named 'langchain_chroma'", name="langchain_chroma"))
    assert msg is not None and "langchain-chroma" in msg and 'pip install "chatrecall[bench]"' in msg
    assert bench_dependency_message(ModuleNotFoundError("No module named 'nope'", name="nope")) is None


def test_chroma_store_without_chromadb_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from chatrecall.adapters.chroma import ChromaStore  # imports chromadb lazily, on construction

    monkeypatch.setitem(sys.modules, "chromadb", None)
    with pytest.raises(ImportError, match=r"chatrecall\[chroma\]"):
        ChromaStore(path=tmp_path)
