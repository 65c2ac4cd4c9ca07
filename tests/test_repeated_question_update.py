"""A question asked again after the user changed its answer: the change comes before the chatbot's old answer
(criterion C41, stop 37).

Two new-user chats (stop 36 and 37, helpers who saw no code) asked a question twice with a change in between ("How
many kids are coming on the trip?" with "so it's 30 kids now" between; "when is my committee meeting?" with "moved it
to Thursday 16 April" between): the chatbot's first answer took the repeated question's share of the score and came
first, the change below it or not at all. A later remark that changes nothing must not push the old answer out.
Real model, embedded Chroma, the full retrieve; written before the change.
"""

from __future__ import annotations

from typing import Any

import pytest
from _chats import replay_fixture

from chatrecall import RetrievalResult

USER = "priya"
T0 = 1772352000.0  # 2026-03-01 08:00 UTC

COMMITTEE = "when is my committee meeting?"
KIDS = "How many kids are coming on the trip?"
DENTIST = "when's my dentist appointment?"
SESSIONS = [
    (0.0, "s1", [
        ("Morning! Big week ahead.", "Morning! Good luck with it."),
        ("My thesis committee meeting is on Thursday 9 April, in the marine lab seminar room.",
         "Noted: committee meeting on Thursday 9 April in the seminar room."),
        ("For the museum trip we're taking 28 pupils and 4 adults including me.",
         "Got it: 28 pupils and 4 adults, you included."),
        ("Also booked the dentist for 20 March at 8:30.", "Dentist on 20 March at 8:30, noted."),
        ("what's a good stretch for tight calves?",
         "A wall calf stretch: hands on the wall, one leg back, heel down, hold 30 seconds each side."),
    ]),
    (5.0, "s2", [
        (COMMITTEE, "Your thesis committee meeting is on Thursday 9 April."),
        (KIDS, "28 pupils are coming, plus 4 adults."),
        (DENTIST, "Your dentist appointment is on 20 March at 8:30."),
        ("thanks!", "Any time!"),
    ]),
    (10.0, "s3", [
        ("ugh, long day.", "Sorry to hear that. Feet up tonight?"),
        ("The committee moved the meeting to Thursday 16 April, one more week to prepare.",
         "A week more is a gift: use it for the chapter 2 figures."),
        ("Two more pupils joined the class, so it's 30 kids now.", "Noted!"),
        ("So nervous about the dentist appointment, I hate the drill.",
         "Very common. Tell them at the start: they can agree a stop signal with you."),
    ]),
    (15.0, "s4", [(q, "ok") for q in (COMMITTEE, KIDS, DENTIST)]),
]

chat = replay_fixture("repeated_question_update", USER, T0, [], SESSIONS)


def _position(res: RetrievalResult, needed: str) -> int | None:
    return next((i for i, item in enumerate(res.items) if item.source == "memory" and needed in item.text), None)


def _last_result(chat: dict[str, Any], question: str) -> RetrievalResult:
    # the question is asked twice; the replay keeps the later asking's result
    return chat[question]


@pytest.mark.parametrize(("question", "new", "old"), [
    (COMMITTEE, "16 April", "9 April"),
    (KIDS, "30 kids", "28 pupils"),
])
def test_the_change_comes_before_the_old_answer(chat: dict[str, Any], question: str, new: str, old: str) -> None:
    res = _last_result(chat, question)
    at_new, at_old = _position(res, new), _position(res, old)
    assert at_new is not None, res.explain()
    assert at_old is None or at_new < at_old, res.explain()


def test_a_remark_that_changes_nothing_keeps_the_answer(chat: dict[str, Any]) -> None:
    res = _last_result(chat, DENTIST)
    assert _position(res, "20 March") is not None, res.explain()
