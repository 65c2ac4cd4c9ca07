"""``RetrievalResult.timings_ms`` labels the wait for the gate's first build as ``warmup``, not as the gate's decision.

helper-109 (stop 35): the first message after ``connect()`` reported ``'gate': 2973`` ms (it waited for the background
warm-up to build the gate) where the README says the gate decides in about 20 µs.
"""

from __future__ import annotations

from typing import Any

from chatrecall import GateConfig


def test_the_first_turn_reports_the_gate_build_as_warmup(make_engine: Any) -> None:
    eng = make_engine(gate=GateConfig(learned=False))  # not the process's shared default gate: built on first use
    first = eng.retrieve("what was the error on staging?", user_id="u", session_id="s")
    assert "warmup" in first.timings_ms and "gate" in first.timings_ms, first.timings_ms
    assert first.timings_ms["warmup"] > first.timings_ms["gate"], first.timings_ms
    later = eng.retrieve("what was the error on staging?", user_id="u", session_id="s")
    assert "warmup" not in later.timings_ms and "gate" in later.timings_ms, later.timings_ms
