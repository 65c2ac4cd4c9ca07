"""The LangChain examples run as scripts (real Chroma + model, and the fakes) and recall the right things."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langchain.agents")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_TIMEOUT_S = 300  # generous: the model load alone is slow on a busy CI box

MODES = [pytest.param("real", marks=pytest.mark.model), pytest.param("fake")]


def run_example(name: str, mode: str) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    env.pop("CHATRECALL_LLM", None)  # always the offline fake chat model here
    env.pop("CHATRECALL_FAKE", None)
    if mode == "fake":
        env["CHATRECALL_FAKE"] = "1"
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / name)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=EXAMPLE_TIMEOUT_S)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return proc.stdout


def blocks(out: str, start: str) -> list[str]:
    """The output cut into blocks, each beginning at a line that starts with ``start``."""
    found: list[list[str]] = []
    for line in out.splitlines():
        if line.startswith(start):
            found.append([])
        if found:
            found[-1].append(line)
    return ["\n".join(b) for b in found]


@pytest.mark.parametrize("mode", MODES)
def test_langchain_chain_example(mode: str) -> None:
    out = run_example("langchain_chain.py", mode)
    recalled = re.findall(r"^recalled: score=([\d.]+) route=(\w+) \[([^\]]*)\]", out, re.M)
    assert len(recalled) == 2 and all(route == "memory" for _, route, _ in recalled)
    assert float(recalled[0][0]) >= float(recalled[1][0]) and recalled[0][2]  # ranked, with a reason
    first_text = out.split("recalled:", 2)[1].splitlines()[1].strip()
    assert first_text == "For the billing service we settled on Postgres 16, not MySQL."
    assert "answer: From memory: For the billing service we settled on Postgres 16" in out
    assert "MongoDB" not in out  # the other user's memory never shows up
    assert re.search(r"""gated: "Thanks, that's all!" -> docs=0 \(route=none""", out)
    if mode == "real":
        assert re.search(r"route=memory Deploys go through Helm charts", out)


@pytest.mark.parametrize("mode", MODES)
def test_langchain_agent_example(mode: str) -> None:
    out = run_example("langchain_agent.py", mode)
    turns = blocks(out, "turn ")
    assert len(turns) == 4
    pin = "Always give distances in kilometres"
    assert "tool calls: ['pin_constraint']" in turns[0] and f"Pinned: '{pin}'" in turns[0]
    assert f"pins injected: ['{pin}']" in turns[1]  # present on the next turn
    assert "The team offsite is in Annecy" in turns[1].split("recalled:")[1]
    assert f"agent: From memory (applying: {pin}): The team offsite is in Annecy" in turns[1]
    assert "tool calls: ['unpin_constraint']" in turns[2]
    assert "pins injected: []" in turns[3] and "applying" not in turns[3]
    assert "agent: From memory: The team offsite is in Annecy" in turns[3]
    assert "pins now: []" in out
    assert "turns stored for session 'today': 8" in out  # user + answer of each of the 4 turns


@pytest.mark.parametrize("mode", MODES)
def test_pin_via_callback_example(mode: str) -> None:
    out = run_example("pin_via_callback.py", mode)
    turns = blocks(out, "user: ")
    assert [t.splitlines()[0] for t in turns] == [
        "user: I'm planning a weekend in Lyon with my sister.",
        "user: /pin Always answer in French",
        "user: What should we pack for the weekend?",
        "user: Any restaurant ideas near the old town?",
        "user: /unpin french",
        "user: And what about museums?",
    ]
    pinned = ["pins in prompt: ['Always answer in French']" in t for t in turns]
    assert pinned == [False, True, True, True, False, False]
    assert "[Pinned: 'Always answer in French']" in turns[1]
    assert "[Unpinned: 'Always answer in French']" in turns[4]
    assert "(following: Always answer in French)" in turns[2] and "following" not in turns[5]
    assert "pins now: []" in out and "turns stored: 8" in out
