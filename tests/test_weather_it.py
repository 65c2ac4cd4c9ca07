"""C62 (stop 41): the weather's "it" is not a reference back to the conversation.

helper-122's new-user chat: "if it rains on Sunday can I still do the club ride?", two turns after a correction,
fired the continuity pattern on "it", so the engine took it as continuing the correction (memory pass forced, a
full search: seven memories, five scoring under 0.2). Written before the pattern change (fails on 3401f8a).
"""

from __future__ import annotations

import pytest

from chatrecall.core import Gate

WEATHER = [
    "if it rains on Sunday can I still do the club ride?",
    "if it's still raining this afternoon, can I still do my long ride?",
    "is it still raining?",
    "it snowed all night",
    "what if it pours during the race?",
]
#: "it" that does point back stays a continuity signal
BACK = ["does it work?", "what time does it leave?", "can you make it shorter?", "is it still on for Friday?"]


@pytest.fixture(scope="module")
def gate() -> Gate:
    return Gate()


@pytest.mark.parametrize("message", WEATHER)
def test_the_weathers_it_points_back_to_nothing(gate: Gate, message: str) -> None:
    d = gate.decide(message)
    assert not any(r.category == "continuity" and r.match.lower() == "it" for r in d.reasons), d.reasons


@pytest.mark.parametrize("message", BACK)
def test_an_it_that_points_back_still_does(gate: Gate, message: str) -> None:
    d = gate.decide(message)
    assert any(r.category == "continuity" and r.match.lower() == "it" for r in d.reasons), d.reasons
