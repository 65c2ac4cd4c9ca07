"""The LlamaIndex example runs as a script (real Chroma + model, and the fakes) and recalls the right things."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "llamaindex_query_engine.py"
EXAMPLE_TIMEOUT_S = 300  # generous: the model load alone is slow on a busy CI box


def run_example(mode: str) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    env.pop("CHATRECALL_LLM", None)  # always LlamaIndex's MockLLM here
    env.pop("CHATRECALL_FAKE", None)
    if mode == "fake":
        env["CHATRECALL_FAKE"] = "1"
    proc = subprocess.run([sys.executable, str(EXAMPLE)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=EXAMPLE_TIMEOUT_S)
    assert proc.returncode == 0, f"example failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return proc.stdout


def answers(out: str) -> dict[str, str]:
    """The output cut into one block per question, keyed by the question."""
    found: dict[str, str] = {}
    for block in out.split("Q: ")[1:]:
        question, _, rest = block.partition("\n")
        found[question] = rest
    return found


def recalled(block: str) -> list[tuple[str, float, str]]:
    """(source, score, text) of every recalled node, in order."""
    return [(src, float(score), text.strip())
            for src, score, text in re.findall(r"^  recalled: \[(\w+)\] score=([\d.]+).*\n    (.*)$", block, re.M)]


@pytest.mark.parametrize("mode", [pytest.param("real", marks=pytest.mark.model), "fake"])
def test_llamaindex_query_engine_example(mode: str) -> None:
    out = run_example(mode)
    blocks = answers(out)
    assert len(blocks) == 3

    db = blocks["Remember which database we picked for the cheese catalogue?"]
    assert "route=memory" in db and "recall:'Remember'" in db
    nodes = recalled(db)
    assert nodes[0] == ("pin", 1.0, "Answer in one short paragraph.")
    assert nodes[1][0] == "memory"
    assert nodes[1][2] == "We use Postgres, not SQLite, for the cheese catalogue database."
    assert [s for _, s, _ in nodes[1:]] == sorted((s for _, s, _ in nodes[1:]), reverse=True)
    assert re.search(r"relevance=[\d.]+ keyword=[\d.]+ .*why=vector #1", db)
    assert "answer: Context information is below." in db and "We use Postgres" in db.split("answer:")[1]

    tribrid = blocks["What does TriBridConfig do?"]
    assert "route=corpus" in tribrid
    assert recalled(tribrid)[1][:1] == ("corpus",)
    assert recalled(tribrid)[1][2].startswith("TriBridConfig configures the tri-bridge network layer")
    assert "anchor match" in tribrid

    bye = blocks["Thanks, that's all!"]
    assert "route=none" in bye and "smalltalk" in bye
    assert [src for src, _, _ in recalled(bye)] == ["pin"]  # the gate searched nothing; pins always apply

    assert "MongoDB" not in out  # another user's memory never shows up
