"""Configuration mistakes fail at construction, naming the value and the fix.

Fast tests run on the fakes; ``connect()`` tests use embedded Chroma and the
bundled model directory (the model itself is never loaded unless a test embeds).
"""

from __future__ import annotations

import inspect
import os
import pydoc
import re
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import chatrecall
from chatrecall import (
    BudgetConfig,
    ChatRecall,
    ConfigError,
    GateConfig,
    InvalidInputError,
    PinConfig,
    RetrievalConfig,
    StoreLimits,
    StoreUnavailableError,
)
from chatrecall.core import as_token_counter
from chatrecall.testing import HashEmbedder, InMemoryStore, fake_engine

ROOT = Path(__file__).resolve().parent.parent


def engine(**kw: Any) -> ChatRecall:
    return ChatRecall(store=InMemoryStore(), embedder=HashEmbedder(), **kw)


# ------------------------------------------------------------------ config objects as dicts


def test_dicts_become_config_objects() -> None:
    cr = engine(retrieval={"top_k": 3}, budget={"mode": "tiers", "max_tokens": 900}, pins={"max_pins": 2},
                limits={"max_text_chars": 1000}, gate={"memory_threshold": 0.7})
    assert cr.retrieval_config == RetrievalConfig(top_k=3)
    assert cr.budget_config == BudgetConfig(mode="tiers", max_tokens=900)
    assert cr.pin_config == PinConfig(max_pins=2)
    assert cr.limits == StoreLimits(max_text_chars=1000)
    assert cr.gate.config.memory_threshold == 0.7
    # and they take effect
    cr.add("We use Postgres for billing.", user_id="u", session_id="s")
    with pytest.raises(InvalidInputError, match="1,000"):
        cr.add("x" * 1001, user_id="u", session_id="s")
    cr.pin("one", user_id="u")
    cr.pin("two", user_id="u")
    with pytest.raises(chatrecall.PinLimitError):
        cr.pin("three", user_id="u")


@pytest.mark.parametrize(("kw", "needles"), [
    ({"retrieval": {"topk": 3}}, ["retrieval=", "'topk'", "did you mean 'top_k'", "known fields"]),
    ({"budget": {"max_token": 10}}, ["budget=", "'max_token'", "'max_tokens'"]),
    ({"budget": "big"}, ["budget='big'", "BudgetConfig", "dict"]),
    ({"pins": 5}, ["pins=5", "PinConfig(max_pins=5)"]),
    ({"retrieval": 3}, ["retrieval=3", "RetrievalConfig"]),
    ({"gate": "strict"}, ["gate='strict'", "GateConfig"]),
    ({"limits": [1]}, ["limits=[1]", "StoreLimits"]),
    ({"budget": {"max_tokens": 0}}, ["max_tokens=0", ">= 1"]),
    ({"max_cached_users": True}, ["max_cached_users=True"]),
    ({"max_cached_users": 0}, ["max_cached_users=0"]),
    ({"sync_interval_s": -1}, ["sync_interval_s=-1"]),
    ({"sync_interval_s": "5"}, ["sync_interval_s='5'"]),
    ({"clock": 5}, ["clock=5", "callable"]),
    ({"entity_extractor": "regex"}, ["entity_extractor='regex'", "extract(text)"]),
    ({"token_counter": 42}, ["token_counter=42", "'gpt-4'", "callable"]),
    ({"token_counter": lambda text: 0}, ["counted 0 tokens", "budget"]),
    ({"token_counter": lambda text: 1 / 0}, ["failed on a sample sentence", "ZeroDivisionError"]),
])
def test_bad_engine_arguments_name_the_value_and_the_fix(kw: dict[str, Any], needles: list[str]) -> None:
    with pytest.raises(ConfigError) as err:
        engine(**kw)
    for needle in needles:
        assert needle in str(err.value), (needle, str(err.value))


def test_store_and_embedder_errors_point_to_existing_functions() -> None:
    with pytest.raises(ConfigError, match=r"chatrecall\.connect\(\)") as err:
        ChatRecall(store=None, embedder=HashEmbedder())  # type: ignore[arg-type]
    assert "ChromaStore" in str(err.value)
    with pytest.raises(ConfigError, match="SentenceTransformerEmbedder"):
        ChatRecall(store=InMemoryStore(), embedder="minilm")  # type: ignore[arg-type]


def test_no_message_suggests_a_function_that_does_not_exist() -> None:
    for f in (ROOT / "chatrecall").rglob("*.py"):
        assert "chatrecall.open(" not in f.read_text(encoding="utf-8"), f


# ------------------------------------------------------------------ token counters


def test_token_counter_by_tiktoken_name_or_model() -> None:
    pytest.importorskip("tiktoken")
    for name in ("gpt-4", "cl100k_base", "gpt-3.5-turbo"):
        counter = as_token_counter(name)
        assert counter.count("hello world") == 2, name
    cr = engine(token_counter="gpt-4", budget={"max_tokens": 50, "min_tokens": 10})
    cr.add_many([{"text": f"We deploy service {i} with Helm chart number {i}.", "user_id": "u", "session_id": "s"}
                 for i in range(12)])
    res = cr.retrieve("Remember how we deploy?", user_id="u", session_id="s2")
    assert 0 < res.tokens_used <= 50  # the budget is applied with real counts


def test_unknown_token_counter_names_are_refused() -> None:
    pytest.importorskip("tiktoken")
    with pytest.raises(ConfigError, match="token_counter='not-a-model'.*encoding.*model name"):
        as_token_counter("not-a-model")
    with pytest.raises(ConfigError, match="token_counter=''"):
        as_token_counter("")


def test_token_counter_str_without_tiktoken_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(ConfigError, match=r"chatrecall\[tiktoken\]"):
        as_token_counter("gpt-4")


def test_callables_and_encoders_still_work() -> None:
    assert as_token_counter(str.split).count("a b c") == 3
    assert as_token_counter(lambda s: len(s)).count("abcd") == 4

    class Enc:
        def encode(self, text: str) -> list[int]:
            return [0] * len(text.split())

    assert as_token_counter(Enc()).count("a b") == 2


# ------------------------------------------------------------------ add_many input


def test_add_many_accepts_content_as_text() -> None:
    cr = fake_engine()
    ids = cr.add_many([{"content": "We use Postgres.", "user_id": "u", "session_id": "s", "role": "assistant"},
                       {"text": "And Redis for caching.", "user_id": "u", "session_id": "s"}])
    assert len(ids) == 2 and cr.count("u") == 2
    assert [r.text for r in cr.history("u", "s")] == ["We use Postgres.", "And Redis for caching."]


@pytest.mark.parametrize(("turn", "needles"), [
    ({"text": "a", "content": "b", "user_id": "u", "session_id": "s"}, ["both 'text' and 'content'"]),
    ({"txt": "a", "user_id": "u", "session_id": "s"}, ["unknown field", "'txt'", "known:", "content"]),
    ({"text": "a", "user_id": "u"}, ["missing 'session_id'"]),
    ({"text": "", "user_id": "u", "session_id": "s"}, ["text must not be empty"]),
    ("just text", ["Turn or a mapping", "str"]),
])
def test_bad_turns_are_named(turn: Any, needles: list[str]) -> None:
    cr = fake_engine()
    with pytest.raises(InvalidInputError) as err:
        cr.add_many([turn])
    for needle in needles:
        assert needle in str(err.value), (needle, str(err.value))
    assert cr.count("u") == 0


# ------------------------------------------------------------------ reprs and help stay short


def test_gate_config_repr_and_help_are_short() -> None:
    r = repr(GateConfig())
    assert len(r) < 400 and "(?" not in r and "\\b" not in r, r
    assert "GateConfig(" in r and "patterns" in r
    doc = pydoc.plain(pydoc.render_doc(GateConfig))
    assert len(doc) < 12_000, len(doc)


# ------------------------------------------------------------------ connect()


def test_connect_refuses_unknown_and_conflicting_arguments(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"retreival=.*chatrecall\.connect\(\).*did you mean 'retrieval'"):
        chatrecall.connect(path=tmp_path / "x", retreival={"top_k": 3})
    assert not (tmp_path / "x").exists(), "nothing is opened before the arguments are checked"
    with pytest.raises(ConfigError, match="both given"):
        chatrecall.connect(path=tmp_path, url="http://localhost:8000")
    with pytest.raises(ConfigError, match="path=42"):
        chatrecall.connect(path=42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="server_process=True and url="):
        chatrecall.connect(url="http://localhost:8000", server_process=True)
    with pytest.raises(ConfigError, match="server_process='yes'"):
        chatrecall.connect(path=tmp_path / "y", server_process="yes")  # type: ignore[arg-type]
    assert not (tmp_path / "y").exists()
    with pytest.raises(ConfigError, match="warm='no'"):
        chatrecall.connect(path=tmp_path / "z", warm="no")  # type: ignore[arg-type]
    assert not (tmp_path / "z").exists()


def test_connect_to_a_file_path_fails_at_once_naming_it_and_that_it_must_be_a_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # nu45 bad 7c: connect(path="/etc/hostname") raised StoreError "open failed: FileExistsError"
    pytest.importorskip("chromadb")
    afile = tmp_path / "hostname"
    afile.write_text("box\n")
    for path, server_process in ((afile, False), (afile / "sub", False), (afile, True)):
        with pytest.raises(ConfigError, match=rf"path={re.escape(repr(str(path)))}.*must be a directory.*"
                                              rf"{re.escape(repr(str(afile)))} is a file"):
            chatrecall.connect(path=path, server_process=server_process, warm=False)
    assert afile.read_text() == "box\n" and sorted(p.name for p in tmp_path.iterdir()) == ["hostname"]
    monkeypatch.setenv("CHATRECALL_HOME", str(afile))  # the default path under a file: named by where it came from
    with pytest.raises(ConfigError, match=rf"CHATRECALL_HOME={re.escape(repr(str(afile)))}.*must be a directory"):
        chatrecall.connect(warm=False)
    assert afile.read_text() == "box\n"


def test_connect_warms_the_gate_in_the_background(tmp_path: Path) -> None:
    # a new process's first messages paid ~280 ms of gate building and regex compiling (chat18, chat19)
    import threading

    cr = chatrecall.connect(path=tmp_path / "w")
    try:
        warming = [t for t in threading.enumerate() if t.name == "chatrecall-warm"]
        for t in warming:
            t.join(30)
        assert cr.gate.warm() == 0, "every regex was compiled already"
        assert cr.embedder.loaded, "the model was loaded too"  # type: ignore[attr-defined]
        assert cr.retrieve("hi there!", user_id="u").route.value == "none"
    finally:
        cr.close()
    cold = chatrecall.connect(path=tmp_path / "c", warm=False)
    try:
        assert not cold.embedder.loaded  # type: ignore[attr-defined]  # opening a store to list loads nothing
    finally:
        cr.close()


@pytest.mark.server
def test_connect_server_process_serves_an_embedded_store_from_a_child(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    from chatrecall.adapters.chroma import ChromaStore
    from chatrecall.core import ChatRecall
    from chatrecall.testing import HashEmbedder

    cr = chatrecall.connect(path=tmp_path / "db", server_process=True)
    store = cr.store
    try:
        assert isinstance(store, ChromaStore) and store._child is not None, "the store must run in a child process"
        eng = ChatRecall(store=store, embedder=HashEmbedder())  # the wiring, without loading the model
        eng.add("my cat is called Miso", user_id="u1", session_id="s1")
        assert [h.text for h in eng.search("cat called", user_id="u1", k=1)] == ["my cat is called Miso"]
    finally:
        store.close()
    with ChromaStore(path=tmp_path / "db") as embedded:  # the child wrote the embedded store's own files
        assert embedded.get("memories", ids=None, where={"user_id": "u1"}).records[0].text == "my cat is called Miso"


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connect_to_a_server_that_does_not_answer_raises_naming_the_url() -> None:
    pytest.importorskip("chromadb")
    pytest.importorskip("sentence_transformers")
    url = f"http://127.0.0.1:{_dead_port()}"
    t0 = time.monotonic()
    with pytest.raises(StoreUnavailableError) as err:
        chatrecall.connect(url=url, timeout_s=2.0)
    assert time.monotonic() - t0 < 30
    assert url in str(err.value) and "lazy=True" in str(err.value) and "chroma run" in str(err.value)
    cr = chatrecall.connect(url=url, lazy=True, timeout_s=1.0)  # the server may come up later
    assert cr.retrieve("remember the database?", user_id="u").degraded
    cr.close()


def test_connect_checks_configs_on_embedded_chroma_without_loading_the_model(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    pytest.importorskip("sentence_transformers")
    for kw, needle in (({"budget": "big"}, "budget='big'"), ({"retrieval": {"top_k": 0}}, "top_k=0"),
                       ({"token_counter": lambda t: 0}, "counted 0 tokens")):
        with pytest.raises(ConfigError, match=needle):
            chatrecall.connect(path=tmp_path / "bad", **kw)
    cr = chatrecall.connect(path=tmp_path / "ok", retrieval={"top_k": 3}, pins={"max_pins": 4},
                            token_counter="gpt-4", warm=False)  # warm=True would load it in the background
    assert cr.retrieval_config.top_k == 3 and cr.pin_config.max_pins == 4
    assert cr.token_counter.count("hello world") == 2
    assert cr.embedder.dim == 384 and cr.embedder.loaded is False  # type: ignore[attr-defined]
    assert cr.count("u1") == 0 and cr.pins("u1") == []
    assert cr.embedder.loaded is False, "counting and listing pins do not load the model"  # type: ignore[attr-defined]
    cr.close()


@pytest.mark.model
def test_lazy_model_loads_on_first_embedding_without_progress_bars(tmp_path: Path,
                                                                   capfd: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sentence_transformers")
    from chatrecall.adapters.sentence_transformers import SentenceTransformerEmbedder

    kw: dict[str, Any] = {"backend": "torch"} if "backend" in inspect.signature(SentenceTransformerEmbedder).parameters else {}
    emb = SentenceTransformerEmbedder(**kw)  # the PyTorch model: loaded on the first embedding
    assert emb.loaded is False and emb.dim == 384
    vec = emb.embed_query("hello")
    assert vec.shape == (384,) and emb.loaded is True
    assert "Loading weights" not in capfd.readouterr().err


@pytest.mark.model
def test_a_script_that_exits_while_the_model_loads_exits_cleanly(tmp_path: Path) -> None:
    # a daemon warm-up thread killed inside ONNX Runtime / PyTorch native code aborted the process
    # ("terminate called without an active exception", exit code 134; 1 run in 4 of such a script)
    import subprocess

    script = ("import sys, chatrecall\n"
              "cr = chatrecall.connect(path=sys.argv[1])\n"
              "print(cr.retrieve('hey', user_id='u').route.value)\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "ANONYMIZED_TELEMETRY": "False"}
    for n in range(3):
        p = subprocess.run([sys.executable, "-c", script, str(tmp_path / f"db{n}")], capture_output=True,
                           text=True, env=env, timeout=300)
        assert p.returncode == 0 and "terminate called" not in p.stderr, (p.returncode, p.stderr[-500:])
        assert p.stdout.strip() == "none"


@pytest.mark.parametrize(("kwargs", "hint"), [({"mode": "tier"}, "'tiers'"), ({"mode": "Fixed"}, "'fixed'"),
                                              ({"mix": "alternating"}, "'alternate'")])
def test_a_near_miss_of_a_budget_option_names_it(kwargs: dict, hint: str) -> None:
    # helper-108 (stop 34): BudgetConfig(mode='tier') listed the options but, unlike a misspelt field, named none
    from chatrecall.core import BudgetConfig

    with pytest.raises(ConfigError, match=f"did you mean {hint}"):
        BudgetConfig(**kwargs)
