"""A question the chatbot answered is found through its answer: "and how did we fix it?" does not take the place of
"You cut the pool size from 50 to 20 per pod and put PgBouncer..." (criterion C36, stop 36).

helper-112's new-user chat (stop 36, written by a helper who saw no code): a week after the incident, "What was the
fix for the payments incident?" injected the user's own follow-up question "and how did we fix it?" first and
neither the fix the user stated nor the reply that repeated it. The issue asks for "a turn that answers beats a turn
that only repeats the query's words". Real model, embedded Chroma; written before the change. C36 (the reply stands for
a bare question it answers) made it pass but cost the held-out chatbot chats 18 and 10 facts of 90 (a fact asked about
in one breath read as a bare question): not shipped, so this is a known miss.
"""

from __future__ import annotations

from typing import Any

import pytest
from _chats import memory_texts, replay_fixture

USER = "omar"
T0 = 1762678800.0  # 2025-11-09 09:00 UTC

QUESTION = "and how did we fix it?"
SESSIONS = [
    (0.0, "o1", [
        ("Morning! Starting my on-call week today, coffee first.",
         "Good morning! Coffee first sounds wise. Good luck with the on-call week."),
        ("Quick context: I'm a backend dev on the payments team, on-call for all of November.",
         "Got it: backend developer on payments, on-call through November."),
        ("Our main service is payments-api, it runs on Postgres 16 with a Redis cache in front for idempotency keys "
         "and session lookups.",
         "Noted: payments-api on Postgres 16, with a Redis cache for idempotency keys and sessions."),
        ("We had an incident on Friday: payments-api started failing with 'FATAL: sorry, too many clients already' "
         "from Postgres around 14:10.",
         "Ouch. That error means Postgres ran out of connection slots. How did you resolve it?"),
        ("We fixed it by cutting the pool size from 50 to 20 per pod and putting PgBouncer in transaction mode in "
         "front of Postgres.",
         "Sensible fix: smaller per-pod pools plus PgBouncer transaction pooling keeps you well under 200 "
         "connections."),
        ("Thanks, that's all for now.", "Any time. Have a quiet shift!"),
    ]),
    (3.5, "o2", [
        ("Evening. Just got back from my Spanish class, it's every Thursday at 19:00 at the Cervantes Institute.",
         "Buenas noches! How was class?"),
        ("What was the error on payments last week?",
         "It was 'FATAL: sorry, too many clients already' from Postgres, around 14:10 on Friday."),
        (QUESTION,
         "You cut the pool size from 50 to 20 per pod and put PgBouncer in transaction mode in front of Postgres."),
        ("Night!", "Good night!"),
    ]),
    (18.0, "o5", [
        ("Morning, last on-call day of the week.", "Morning! Nearly there."),
        ("What was the fix for the payments incident?", "Pool size cut to 20 per pod, and PgBouncer."),
    ]),
]

chat = replay_fixture("answered_question", USER, T0, [], SESSIONS)


def test_the_follow_up_question_is_not_handed_back(chat: dict[str, Any]) -> None:
    # C40: "and how did we fix it?" opens with "and" but asks; it hands its share to the reply that answers it
    res = chat["What was the fix for the payments incident?"]
    assert QUESTION not in memory_texts(res), res.explain()


@pytest.mark.xfail(strict=True, reason="known miss (stop 36): the fix itself ranks 4th, behind the error reply and the "
                   "user's context; C36, which brought it in, cost held-out chatbot chats and was not shipped")
def test_the_fix_is_found(chat: dict[str, Any]) -> None:
    res = chat["What was the fix for the payments incident?"]
    assert any("PgBouncer" in t for t in memory_texts(res)), res.explain()
