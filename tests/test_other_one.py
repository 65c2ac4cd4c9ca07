"""A message asking for "the other one" right after an answer leaves out the memory that answer drew on.

Stop 47's O1 (left from stop 45's D3 and nu51): "no, I meant the other plot" after "You put forty cloves of Germidour
garlic into bed 1 on plot 14B." searched with the question it corrects and got the plot 14B turn first again. The
user's stored turn nearest the answer (and the assistant turn right after it) is now left out of the memory search,
which looks for a turn like it instead (docs/benchmarks.md, "O1").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _chats import chat_turn

from chatrecall import ChatRecall
from chatrecall.core._classifier import asks_other, ruled_out
from chatrecall.testing import ManualClock

DAY = 86400.0
LEFT_OUT = "asks for another one: the memory the last answer drew on is left out"


@pytest.mark.parametrize("message", [
    "not that card, the other one",
    "no, not this bike",
    "not that project, the other one",
])
def test_not_that_thing_points_back_and_rules_out_no_word(message: str) -> None:
    assert asks_other(message)
    assert ruled_out(message) == (frozenset(), frozenset())


@pytest.mark.parametrize("message", ["it's not that hard", "no, I meant the kitchen, not the bathroom"])
def test_other_readings_are_unchanged(message: str) -> None:
    assert not asks_other(message)


def test_a_named_negation_still_rules_out_its_word() -> None:
    assert ruled_out("the other one, Kirkstall, not Hartley's") == (frozenset({"hartley"}), frozenset({"kirkstall"}))


pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

CORSA = "The Corsa's clutch is slipping, the garage on Mill Road wants £650 to replace it."
YARIS = "Jess's Yaris needs two new front tyres before its MOT on the 3rd."


@pytest.fixture
def cars(embedded_store: Any, st_embedder: Any) -> Iterator[tuple[ChatRecall, ManualClock]]:
    clock = ManualClock(1_780_000_000.0)
    cr = ChatRecall(store=embedded_store, embedder=st_embedder, clock=clock)
    try:
        for session, said, reply in [
            ("s1", "Morning! Any ideas for a quick lunch I can take to work?", "Wraps, a grain salad or leftovers."),
            ("s1", CORSA, "£650 is about right for a clutch. Worth asking if the flywheel is included."),
            ("s1", "Thanks, I'll ask them.", "Good luck!"),
            ("s2", "What's a good podcast for a long drive?", "Try 'No Such Thing As A Fish'."),
            ("s2", YARIS, "Front tyres before the MOT, noted. Check the tread on the rears while it's in."),
        ]:
            if session == "s2" and said.startswith("What's a good podcast"):
                clock.advance(3 * DAY)
            chat_turn(cr, clock, "c", session, said, reply, ask=False)
        clock.advance(4 * DAY)
        # the question is asked (the session's state records what it got), then stored with its answer
        chat_turn(cr, clock, "c", "s3", "what needs doing on the car?",
                  "The Corsa's clutch is slipping; the garage on Mill Road quoted £650 to replace it.")
        yield cr, clock
    finally:
        cr.close()


def test_the_other_car_is_not_the_one_just_given(cars: tuple[ChatRecall, ManualClock]) -> None:
    cr, _ = cars
    res = cr.retrieve("no, I meant the other car", user_id="c", session_id="s3")
    texts = [m.text for m in res.memories]
    assert texts and texts[0] == YARIS, res.explain()
    assert CORSA not in texts, res.explain()
    assert any(LEFT_OUT in n and "Corsa" in n for n in res.notes), res.notes


def test_a_follow_up_on_the_same_car_keeps_its_memory(cars: tuple[ChatRecall, ManualClock]) -> None:
    cr, _ = cars
    res = cr.retrieve("and which garage was that?", user_id="c", session_id="s3")
    assert not any(LEFT_OUT in n for n in res.notes), res.notes
    assert any(m.text == CORSA for m in res.memories) or any(
        r.record is not None and r.record.text.startswith("The Corsa's clutch") for r in res.recent), res.explain()
