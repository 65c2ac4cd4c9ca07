"""A follow-up that points back is searched with the names of the question it follows.

nu51 (stop 46, turn 25): "and what's the venue for that one?" right after "when is the Okafor wedding?" (answered)
searched memory with the message alone; the stored question "what's the Harrisons' venue?" and its answer came first
and the Okafor venue never. Searching with the whole question before it (F1) brought that question's own answer
first; its names ("Okafor") bring the asked attribute of the same thing (F1b; docs/benchmarks.md, "F1b").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chatrecall import ChatRecall
from chatrecall.core._classifier import names_in, refers_back
from chatrecall.testing import ManualClock

DAY = 86400.0
FOLLOWED = "follow-up: memory searched with"


@pytest.mark.parametrize(("message", "expected"), [
    ("and what's the venue for that one?", True),
    ("where are they staying?", True),
    ("what time does it start?", True),
    ("ok and when's my dentist?", False),
    ("and what did I decide about the other laptop?", False),
])
def test_refers_back(message: str, expected: bool) -> None:
    assert refers_back(message) is expected


def test_names_in_skips_the_sentence_opener_and_the_possessive() -> None:
    assert names_in("When is the Okafor wedding? And Tom's party?") == ["Okafor", "Tom"]
    assert names_in("what's my dentist's number?") == []


pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")


@pytest.fixture
def weddings(embedded_store: Any, st_embedder: Any) -> Iterator[ChatRecall]:
    clock = ManualClock(1_780_000_000.0)
    cr = ChatRecall(store=embedded_store, embedder=st_embedder, clock=clock)

    def say(session: str, said: str, reply: str) -> None:
        cr.add(said, user_id="p", session_id=session)
        clock.advance(30)
        cr.add(reply, user_id="p", session_id=session, role="assistant")
        clock.advance(60)

    try:
        say("s1", "New booking: the Harrisons, Saturday 13 June, at Tyntesfield. I quoted them £2,400 for the full day.",
            "Congrats! Noted.")
        say("s1", "And the Patels, Priya and Dev, want the two-day package, I quoted £3,900. Their wedding is 22 "
            "August at Ashton Court.", "Great, Patels noted.")
        clock.advance(3 * DAY)
        say("s2", "The Okafor wedding is on 7 November at The Bath Assembly Rooms, Chidi and Grace.",
            "Noted: Okafors, 7 November.")
        say("s2", "what's the Harrisons' venue?", "The Harrisons are at Tyntesfield.")
        clock.advance(7 * DAY)
        say("s3", "when is the Okafor wedding?", "The Okafor wedding is on 7 November.")
        yield cr
    finally:
        cr.close()


def test_that_one_is_the_wedding_just_asked_about(weddings: ChatRecall) -> None:
    res = weddings.retrieve("and what's the venue for that one?", user_id="p", session_id="s3")
    assert res.memories and "Bath Assembly Rooms" in res.memories[0].text, res.explain()
    assert any(FOLLOWED in n and "Okafor" in n for n in res.notes), res.notes


def test_a_follow_up_naming_its_own_subject_is_searched_alone(weddings: ChatRecall) -> None:
    res = weddings.retrieve("and what's the Patels' venue?", user_id="p", session_id="s3")
    assert not any(FOLLOWED in n for n in res.notes), res.notes
    assert res.memories and "Ashton Court" in res.memories[0].text, res.explain()


def test_a_new_topic_is_searched_alone(weddings: ChatRecall) -> None:
    res = weddings.retrieve("ok and when's my dentist?", user_id="p", session_id="s3")
    assert not any(FOLLOWED in n for n in res.notes), res.notes


def test_a_follow_up_sent_nowhere_claims_no_memory_search(weddings: ChatRecall) -> None:
    # nu55 (stop 50): "ok, I'll ask Marta to cover it then." points back ("it") after a question naming the
    # wedding; the gate searched nothing, yet the explanation said memory was searched with the question's names
    res = weddings.retrieve("ok, I'll ask Marta to cover it then.", user_id="p", session_id="s3")
    assert res.route.value == "none" and not res.memories, res.explain()
    assert not any(FOLLOWED in n for n in res.notes), res.notes
