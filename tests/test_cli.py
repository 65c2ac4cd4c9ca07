"""The command line on the real parts: demo, ingest, ask, pins, stats."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

pytestmark = pytest.mark.model


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"CHATRECALL_HOME": str(home), "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "chatrecall", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_demo_runs_on_embedded_default(tmp_path: Path) -> None:
    out = run("demo", home=tmp_path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for msg in ["How are you?", "Remember that cheese project?", "What does TriBridConfig do?",
                "That is cool", "what about that function?"]:
        assert msg in text
    assert "recall:'Remember'" in text
    assert "context block" in text and "We use Postgres, not SQLite." in text
    assert "tri-bridge" in text
    assert (tmp_path / "chroma").exists(), "the demo uses the embedded default under CHATRECALL_HOME"


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, st_embedder: Any) -> Callable[..., tuple[int, str]]:
    """Run the CLI in-process on real Chroma, sharing the session's loaded model."""
    from chatrecall import ChatRecall, _connect
    from chatrecall import cli as cli_mod
    from chatrecall.adapters.chroma import ChromaStore

    def connect(*, path: Any = None, url: Any = None, namespace: str = "chatrecall", **kw: Any) -> ChatRecall:
        return ChatRecall(store=ChromaStore(path=path, url=url, namespace=namespace), embedder=st_embedder, **kw)

    monkeypatch.setattr(_connect, "connect", connect)
    monkeypatch.setattr(cli_mod.console, "width", 250)

    def call(*args: str) -> tuple[int, str]:
        with cli_mod.console.capture() as cap:
            code = cli_mod.main(list(args))
        return code, cap.get()

    return call


def test_ingest_ask_pins_stats(tmp_path: Path, cli: Callable[..., tuple[int, str]],
                               capsys: pytest.CaptureFixture[str]) -> None:
    turns = tmp_path / "turns.jsonl"
    turns.write_text("\n".join(json.dumps(t) for t in [
        {"text": "Our staging cluster runs on Hetzner in Falkenstein.", "session_id": "s1"},
        {"text": "The nightly backup job is called pg_nightly_dump.", "session_id": "s1"},
        {"role": "assistant", "content": "Noted, pg_nightly_dump runs at 02:00 UTC.", "session_id": "s1"},
    ]))
    home = str(tmp_path / "home")
    code, out = cli("--path", home, "ingest", str(turns), "--user", "u1")
    assert code == 0 and "ingested 3 turns" in out

    code, _ = cli("--path", home, "ask", "remember the pg_nightly_dump job?", "--user", "u1", "--json")
    printed = capsys.readouterr().out
    res = json.loads(printed[printed.index("{"):])
    assert code == 0 and res["route"] == "memory"
    assert "pg_nightly_dump" in res["items"][0]["text"]
    assert res["gate"]["reasons"]

    code, out = cli("--path", home, "ask", "what about the staging cluster, remember?", "--user", "u1")
    assert code == 0 and "Hetzner" in out and "context block" in out

    code, out = cli("--path", home, "pins", "--user", "u1", "--add", "Never restart staging on Fridays.")
    assert code == 0 and "pinned" in out and "Never restart staging on Fridays." in out
    pin_id = out.split("pinned")[1].split()[0]
    code, out = cli("--path", home, "pins", "--user", "u1", "--remove", pin_id)
    assert code == 0 and "Never restart staging" not in out.split("unpinned")[1]

    code, out = cli("--path", home, "stats", "--user", "u1")
    assert code == 0 and "3 memories" in out
    assert "routes.gate.memory" in out  # metrics saved by the last `ask`


def test_cli_errors_are_clear(tmp_path: Path, cli: Callable[..., tuple[int, str]]) -> None:
    code, out = cli("--path", str(tmp_path), "ingest", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "file not found" in out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": ""}\n')
    code, out = cli("--path", str(tmp_path), "ingest", str(bad))
    assert code == 2 and "empty" in out
