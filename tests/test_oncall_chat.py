"""A day or a time in an unrelated memory does not answer "which day...?" (stop 32, criterion C13; helper-92's
new-user chat: "which day am I on call over Christmas?" skipped the rota because "Your Thursday late starts at 12:00."
scored as useful on its time match alone). Real model, embedded Chroma; written before the change (fails on d6e3a36).

The second case, "what's the plug gap on the bonnie?" asked first in its session, was a known miss until stop 33: a
memory that names what "the bonnie" is counted as useful, and the documents were not searched; the corpus probe, on by
default since (criterion C20e), keeps the service notes: "plug" and "gap" are words the conversation never used.
"""

from __future__ import annotations

from typing import Any

from _chats import passages_hold, replay_fixture

USER = "rhi"
T0 = 1796112000.0  # 2026-12-01 08:00 UTC

DOCS = [
    {"title": "Riverside Vets December on-call rota",
     "text": "Riverside Vets - nurses' on-call rota, December 2026. Rhi: on call Thursday 24 December and Sunday "
             "27 December. Tom: on call Christmas Day and Boxing Day. Priya: on call 31 December. On-call nurses "
             "must be within 20 minutes of the practice."},
    {"title": "Bonneville T100 service notes",
     "text": "Triumph Bonneville T100 (carburettor models): spark plug NGK DPR8EA-9, gap 0.8 to 0.9 mm. Change the "
             "oil every 6,000 miles with 3.8 litres of 10W-40."},
]

SESSIONS = [
    (0.0, "s1", [
        ("hey! long day", "Hope you get to put your feet up tonight."),
        ("My late shifts start at 12:00 on Thursdays, so I get the mornings in the garage.",
         "Nice, mornings in the garage sound like a good way to start a late shift."),
        ("I'm restoring a 1968 Bonneville at the moment.", "A '68 Bonnie is a lovely bike to restore."),
        ("thanks!", "Any time!"),
    ]),
    (3.0, "s1b", [
        ("New rota's out, I'm on lates Wednesday and Thursday next week, 12 till 10.",
         "Long days. Take snacks!"),
        ("ugh", "Hang in there."),
        ("what time does my Wednesday shift start?", "Your Wednesday late starts at 12:00."),
    ]),
    (6.0, "s2", [
        ("morning", "Morning!"),
        ("what's the plug gap on the bonnie?", "It's in the service notes."),
        ("which day am I on call over Christmas?", "Let me check the rota."),
    ]),
]

chat = replay_fixture("oncall", USER, T0, DOCS, SESSIONS)


def test_a_day_question_reaches_the_rota_past_an_unrelated_time(chat: dict[str, Any]) -> None:
    res = chat["which day am I on call over Christmas?"]
    assert passages_hold(res, "Thursday 24 December"), res.explain()


def test_a_memory_naming_the_referent_does_not_keep_the_documents_out(chat: dict[str, Any]) -> None:
    res = chat["what's the plug gap on the bonnie?"]
    assert passages_hold(res, "0.8 to 0.9 mm"), res.explain()
