"""An update that names only the day ("Actually the move is now the 14th") should reach the memories of "when do I
move?" (helper-92's new-user chat, stop 32: three memories said 19 December, the update ranked 9th with no time fit).
Real model, embedded Chroma. Written before criterion C14 (clock times and ordinal days count as times): with it the
update rose from 6th to 5th here, under the stale fact, the bot's reply repeating it and the user's own earlier
question; C14 was not shipped and the case was a strict xfail until stop 42, when the change lift in a chatbot's store
(C66, tests/test_update_lift.py) brought the update in. A clock time in a memory answers "what time..." (held).
"""

from __future__ import annotations

from typing import Any

from _chats import replay_fixture

USER = "rhi"
T0 = 1794384000.0  # 2026-11-13 08:00 UTC

SESSIONS = [
    (0.0, "s1", [
        ("morning!", "Morning!"),
        ("The move is booked for Saturday 19 December with Avon Removals.", "Great, that's sorted then."),
        ("when do I move again?", "Saturday 19 December, with Avon Removals."),
        ("and the van comes at what time?", "Avon's quote says an 8:00 start on the 19th."),
        ("what's a good way to pack plates?", "Wrap each in paper and stand them on edge in a small box."),
        ("My late shift on Thursday starts at 12:00.", "Noted."),
    ]),
    (7.0, "s2", [
        ("hey, rough week", "Sorry to hear that."),
        ("Actually the move is now the 14th, Avon had a cancellation.", "Even sooner, great!"),
        ("haha finally some good news", "Ha, about time!"),
    ]),
    (14.0, "s3", [
        ("evening!", "Evening! How's the packing going?"),
        ("when do I move?", "ok"),
        ("what time does my Thursday shift start?", "ok"),
    ]),
]

chat = replay_fixture("move_date", USER, T0, [], SESSIONS)


def _memories(res: Any) -> list[str]:
    return [i.text for i in res.items if i.source == "memory"]


def test_the_update_that_names_only_the_day_is_among_the_memories(chat: dict[str, Any]) -> None:
    res = chat["when do I move?"]
    assert any("now the 14th" in t for t in _memories(res)), res.explain()


def test_a_clock_time_answers_what_time(chat: dict[str, Any]) -> None:
    res = chat["what time does my Thursday shift start?"]
    assert any("starts at 12:00" in t for t in _memories(res)), res.explain()
