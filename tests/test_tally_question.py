"""A question that tallies ("how many weddings have I been to this year?") needs one memory from each session that
mentions one, not the five best turns of the session that talked longest about one of them (stop 33, criterion C18;
LongMemEval's multi-session questions lost their last session's evidence at ranks 12-15 behind a third and fourth
turn of the first session). Real model, embedded Chroma; written before the change (fails on 3320e3d).

A known miss: C18 (a tally's n-th turn of one session gives way to other sessions' best) was searched by
benchmarks/tune_ranking.py like every knob and kept at 0 on every fold, so it did not ship.
"""

from __future__ import annotations

from typing import Any

import pytest
from _chats import memory_texts, replay_fixture

USER = "mo"
T0 = 1780300800.0  # 2026-06-01 08:00 UTC

SESSIONS = [
    (0.0, "jun", [
        ("hi", "Hi! How was your weekend?"),
        ("I went to my cousin Leila's wedding in Porto on Saturday, it was beautiful.",
         "How lovely! Porto is a gorgeous place for a wedding."),
        ("The ceremony was in a chapel by the river and the reception went on until 3am.",
         "That sounds like a wonderful celebration."),
        ("Leila's wedding cake had five tiers, with orange blossom.",
         "Five tiers! Orange blossom sounds delicious."),
        ("I danced so much at the wedding that my feet still hurt.", "Ha, the sign of a good party."),
        ("My speech at the wedding got a few laughs too.", "Well done, speeches are nerve-racking."),
        ("thanks!", "Any time!"),
    ]),
    (9.0, "jun2", [
        ("morning", "Morning!"),
        ("Can you suggest a stretch for tight calves? I've started running again.",
         "Try a wall calf stretch: 30 seconds each side, twice a day."),
        ("Also, my old flatmate Tom got married last weekend in a barn in Devon, I was an usher.",
         "Congratulations to Tom! Being an usher is an honour."),
        ("cool", "Anything else today?"),
    ]),
    (30.0, "jul", [
        ("hey", "Hey! What's up?"),
        ("I need to renew my passport before August, how long does it take?",
         "Standard renewal is usually about three weeks; apply early."),
        ("Yesterday I was at my colleague Priya's wedding at the registry office, short and sweet.",
         "Registry office weddings can be lovely and relaxed."),
        ("ok thanks", "You're welcome!"),
    ]),
    (45.0, "aug", [
        ("hello again", "Hello! Good to see you."),
        ("How many weddings have I been to this year?", "Let me count them."),
    ]),
]

chat = replay_fixture("tally", USER, T0, [], SESSIONS)


@pytest.mark.xfail(strict=True, reason="known miss (stop 33): Tom's wedding ('got married') ranks below a second and "
                                       "third turn of the first session; C18's session spread was kept at 0 by CV")
def test_a_tally_question_brings_back_every_session_that_mentions_one(chat: dict[str, Any]) -> None:
    res = chat["How many weddings have I been to this year?"]
    texts = memory_texts(res)
    assert any("Leila" in t for t in texts), res.explain()
    assert any("Tom got married" in t for t in texts), res.explain()
    assert any("Priya's wedding" in t for t in texts), res.explain()
