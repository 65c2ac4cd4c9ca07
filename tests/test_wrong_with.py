""""What's wrong with X" asks about a fault; "that's wrong" corrects (criterion C33, stop 35).

helper-110: "what did the physio say is wrong with my knee?" was read as a correction ("is wrong"), which forced a
memory pass searched together with the previous, unrelated question. The labelled sets hold seven such questions
("what did the mechanic say was wrong with the car"), all plain memory questions.
"""

from __future__ import annotations

import pytest

from chatrecall import Gate, GateConfig

GATES = [Gate(GateConfig()), Gate(GateConfig(learned=False))]


@pytest.mark.parametrize("gate", GATES, ids=["learned", "patterns"])
@pytest.mark.parametrize(("message", "corrects"), [
    ("what did the physio say is wrong with my knee?", False),
    ("what did the mechanic say was wrong with the car", False),
    ("remind me what was wrong with the boiler", False),
    ("that date is wrong, it's the 14th", True),
    ("the total was wrong, it's 1450", True),
    ("no, that's wrong, the flight is at 7pm", True),
])
def test_a_fault_question_is_no_correction_and_a_correction_is_one(gate: Gate, message: str, corrects: bool) -> None:
    d = gate.decide(message)
    assert d.correction is corrects, d.explain()
    assert d.route.wants_memory, d.explain()  # a fault question about the user's things still searches memory
