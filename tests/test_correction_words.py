"""Which messages the gate reads as a correction ("no, I meant..."): a correction forces a memory pass and is
searched with the question it corrects, so a question that only says "am I meant to" must not be one. Written in
stop 28 before the pattern change, from a question ("...am i meant to cut it?") the gate read as a correction."""

from __future__ import annotations

import pytest

from chatrecall.core import Gate

CORRECTIONS = [
    "no, I meant the other hive",
    "I meant the staging one",
    "sorry I meant Tuesday",
    "i meant the blue one not the red",
    "no no, I meant Priya's flight",
    "oops, I meant the kitchen, not the bathroom",
]
NOT_CORRECTIONS = [
    "what am I meant to bring to the first lesson?",
    "how often am I meant to water it?",
    "was I meant to sign the form?",
    "are we meant to tip in Japan?",
    "am i meant to feel sore after the first session?",
]


@pytest.fixture(scope="module")
def gate() -> Gate:
    return Gate()


@pytest.mark.parametrize("message", CORRECTIONS)
def test_a_correction_is_read_as_one(gate: Gate, message: str) -> None:
    assert gate.decide(message).correction


@pytest.mark.parametrize("message", NOT_CORRECTIONS)
def test_am_i_meant_to_is_a_question_not_a_correction(gate: Gate, message: str) -> None:
    assert not gate.decide(message).correction, gate.decide(message).explain()
