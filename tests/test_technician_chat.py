"""A memory that shares no word with the question is not useful by its score alone (stop 32, criterion C15;
helper-94's new-user chat: "Which days is Sunita not in?" got "Thursdays, 15:45 to 17:30." as a useful memory,
keyword 0 and entity 0, riding on the support of the question it answered, and the technician rota was skipped).
Real model, embedded Chroma; written before the change.
"""

from __future__ import annotations

from typing import Any

from _chats import passages_hold, replay_fixture

USER = "dana"
T0 = 1772697600.0  # 2026-03-05 08:00 UTC

DOCS = [
    {"title": "Science department technician rota, spring term",
     "content": "Science technicians, spring term. Sunita Rao: Monday, Tuesday and Wednesday, 8:00 to 15:30; not in "
                "on Thursdays or Fridays. Mark Ellis: Wednesday to Friday, 9:00 to 16:30. Practical requests must "
                "reach the prep room 48 hours before the lesson."},
    {"title": "Rockface climbing wall booking confirmation",
     "content": "Rockface Climbing Centre - booking confirmed for Hillside School climbing club: Saturday 21 March, "
                "10:00 to 12:00, 14 climbers, 2 instructors. Arrive 15 minutes early for the safety briefing."},
]

SESSIONS = [
    (0.0, "s1", [
        ("hi! long week", "Hope the weekend is close."),
        ("I run the climbing club at school, we use the school wall after lessons.",
         "That sounds like a great club to run."),
        ("when is climbing club?", "Thursdays, 15:45 to 17:30."),
        ("thanks", "Any time."),
    ]),
    (3.0, "s2", [
        ("morning", "Morning!"),
        ("Which days is Sunita not in?", "ok"),
    ]),
]

chat = replay_fixture("technician", USER, T0, DOCS, SESSIONS)


def test_a_day_question_about_a_document_reaches_it_past_a_memory_of_days(chat: dict[str, Any]) -> None:
    res = chat["Which days is Sunita not in?"]
    assert passages_hold(res, "not in on Thursdays or Fridays"), res.explain()
