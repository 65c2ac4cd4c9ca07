"""A later question about what a dispute ruled out does not get the dispute's answer (criterion C50, stop 38).

helper-117's new-user chat: "what time is Thursday's appointment?" -> the bot answered with mum's appointment -> "no,
I meant the vet appointment, not mum's" -> "Sorry! Pasha's vet appointment is at 6:15pm". Weeks later "when's mum's
appointment?" put that vet reply first (0.797: the old question's share, handed on through the dispute, +0.43). The
dispute rules mum out of what the old question meant, so a query about mum gets no share through it (neither the old
question's, handed on, nor the dispute's own). Real model, embedded Chroma; written before the change (the first test
fails on 7616f43). C50 as first written also asked for the newer appointment among the memories: still 4th (xfail).
"""

from __future__ import annotations

from typing import Any

import pytest
from _chats import memory_texts, replay_fixture

USER = "dmitri"
T0 = 1772438400.0  # 2026-03-02
VET_REPLY = "Sorry! Pasha's vet appointment is at 6:15pm at Forest Vets."
SESSIONS = [
    (0.0, "s1", [
        ("Mum's got a cardiology appointment at Whipps Cross on Thursday 12 March at 10:40 and I'm taking her.",
         "That's kind of you. Noted: Thursday 12 March, 10:40."),
        ("Pasha's booster is at Forest Vets on Thursday 12 March at 6:15pm, after mum's appointment.",
         "Vet on Thursday at 6:15pm, noted."),
    ]),
    (7.0, "s2", [
        ("what time is Thursday's appointment?", "Your mum's cardiology appointment is at 10:40 at Whipps Cross."),
        ("no, I meant the vet appointment, not mum's", VET_REPLY),
    ]),
    (14.0, "s3", [
        ("Mum's cardiologist wants a follow-up echo, booked for Thursday 26 March at 9:15.",
         "Good that it's booked. 26 March, 9:15."),
    ]),
    (19.0, "s4", [
        ("when's mum's appointment?", "Thursday 26 March at 9:15, the follow-up echo."),
        ("and when was the vet appointment?", "Thursday 12 March at 6:15pm."),
    ]),
]

chat = replay_fixture("dispute_ruled_out", USER, T0, [], SESSIONS)


def test_a_question_about_what_the_dispute_ruled_out_does_not_get_its_answer(chat: dict[str, Any]) -> None:
    res = chat["when's mum's appointment?"]
    memories = memory_texts(res)
    assert memories and memories[0] != VET_REPLY, res.explain()
    assert VET_REPLY not in memories, res.explain()


@pytest.mark.xfail(strict=True, reason="known miss (C50 as first written asked for it): the newer echo ranks 4th, "
                                       "behind mum's older appointment, the old question and the vet booster")
def test_the_newer_appointment_is_among_the_memories(chat: dict[str, Any]) -> None:
    res = chat["when's mum's appointment?"]
    assert any("follow-up echo" in t for t in memory_texts(res)), res.explain()


def test_the_question_the_dispute_meant_still_gets_it(chat: dict[str, Any]) -> None:
    res = chat["and when was the vet appointment?"]
    memories = memory_texts(res)
    assert any("6:15pm" in t for t in memories), res.explain()
