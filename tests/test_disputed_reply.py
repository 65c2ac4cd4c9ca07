"""A chatbot reply the user disputes right away ("that's wrong, it's Thursday", "no, I meant the race") is not handed
back later, and the reply that answers the dispute takes its place (criterion C35, stop 36).

helper-110's new-user chat (stop 35): after "no, I meant the race, not sports day" the bot's wrong sports-day reply
kept ranking first. A probe on 7753692: "what day is the dentist again?" ranked the disputed "Tuesday at 3pm" reply
first (0.867) and left the stored "Thursday at 4pm" out of the three memories; "when's the race?" brought the
disputed sports-day reply and not the race. Written before the change.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _chats import memory_texts, replay_fixture

from chatrecall.core import Record, UserIndex

USER = "ravi"
T0 = 1778000000.0  # 2026-05-05

RACE = "I've entered the Wharfedale Wheeler sportive, it's on Sunday 7 June"
WRONG_EVENT = "Sports day is on Friday 19 June."
WRONG_DENTIST = "Your dentist appointment is on Tuesday at 3pm."
SESSIONS = [
    (0.0, "s1", [
        (RACE, "Great, good luck with the training!"),
        ("Dentist booked for Thursday at 4pm", "Noted."),
        ("Sports day at school is Friday 19 June this year, and I'm running the whole thing.",
         "Big job! Friday 19 June it is."),
    ]),
    (6.0, "s2", [
        ("when's the big event?", WRONG_EVENT),
        ("no, I meant the race, not sports day", "Sorry! The Wharfedale Wheeler is on Sunday 7 June."),
    ]),
    (9.0, "s3", [
        ("when's my dentist appointment?", WRONG_DENTIST),
        ("that's wrong, it's Thursday at 4pm", "Sorry! Thursday at 4pm it is."),
    ]),
    (12.0, "s4", [
        ("what day is the dentist again?", "Thursday at 4pm."),
        ("when's the race?", "Sunday 7 June."),
    ]),
]

chat = replay_fixture("disputed_reply", USER, T0, [], SESSIONS)


def test_a_disputed_reply_is_not_handed_back(chat: dict[str, Any]) -> None:
    res = chat["what day is the dentist again?"]
    memories = memory_texts(res)
    assert WRONG_DENTIST not in memories, res.explain()
    assert memories and "Thursday" in memories[0], res.explain()


def test_the_answer_to_the_dispute_is_found(chat: dict[str, Any]) -> None:
    res = chat["when's the race?"]
    memories = memory_texts(res)
    assert WRONG_EVENT not in memories, res.explain()
    assert any("Wharfedale" in t for t in memories), res.explain()


# ---- which replies count as disputed (the index's view; fast, no model)
def _index(turns: list[tuple[str, str]]) -> UserIndex:
    idx = UserIndex(dim=4)
    vecs = np.eye(len(turns), 4, dtype=np.float32) + 0.1
    idx.add([Record(id=f"r{i}", text=text, user_id="u", session_id="s", role=role, timestamp=1000.0 + 60 * i, seq=i)
             for i, (role, text) in enumerate(turns)], vecs / np.linalg.norm(vecs, axis=1, keepdims=True))
    return idx


@pytest.mark.parametrize("reply, answer, disputes", [
    (WRONG_DENTIST, "that's wrong, it's Thursday at 4pm", True),
    (WRONG_EVENT, "no, I meant the race, not sports day", True),
    ("You need 250g of flour.", "No, it was 300g", True),
    ("The capital of Australia is Sydney.", "nope, that's not right", True),
    ("Your class is on Monday.", "I said Tuesday, not Monday", True),
    ("Her name is Keely.", "I didn't say that", True),
    ("The Patel wedding is on the 13th.", "That's not correct - it moved to the 20th", True),
    ("Sure, the blue one then.", "sorry, I meant the green one", True),
    # not disputes: a "no" answering a reply that asked, thanks and reactions, "I meant to ..."
    ("Want me to set a reminder?", "no thanks", False),
    ("Is staging back up?", "no, still down", False),
    ("Sorry about that!", "no worries", False),
    ("Good luck with the race!", "thanks!", False),
    ("The pitch fee is £30.", "no problem, I'll pay it", False),
    ("Noted: dentist on Thursday.", "I meant to ask, is it going to rain tomorrow?", False),
    ("Noted.", "No idea why, but the cat hates it", False),
])
def test_which_replies_a_user_disputes(reply: str, answer: str, disputes: bool) -> None:
    idx = _index([("user", "a question"), ("assistant", reply), ("user", answer)])
    assert idx.disputed(np.arange(3)).tolist() == [False, disputes, False]


def test_only_a_chatbots_reply_is_disputed() -> None:
    # between two people (LoCoMo) a "no, ..." is part of the talk, and a user turn is never "disputed"
    people = _index([("Caroline", "It's on Friday."), ("Melanie", "no, I meant the other party")])
    assert not people.disputed(np.arange(2)).any()
    two_users = _index([("user", "It's on Friday."), ("user", "no, it's Saturday")])
    assert not two_users.disputed(np.arange(2)).any()


def test_a_change_to_what_a_dispute_rules_out_rebuilds_snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    # a dispute's ruled-out words are left out of its index terms: a snapshot of other ruled-out words is stale
    import re

    from chatrecall.core import _classifier
    from chatrecall.core import _snapshot as snap

    snap.code_fingerprint.cache_clear()
    before = snap.code_fingerprint()
    monkeypatch.setattr(_classifier, "_NEGATED", re.compile(r"\bnot\s+(\w+)"))
    snap.code_fingerprint.cache_clear()
    try:
        assert snap.code_fingerprint() != before
    finally:
        monkeypatch.undo()
        snap.code_fingerprint.cache_clear()
