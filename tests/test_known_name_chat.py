"""helper-108's new-user chat shape (stop 34): a backend developer learning Portuguese for his partner's family, with an
on-call runbook among his documents. A general question naming a word memory knows ("how do I say 'good morning' in
Portuguese?") is widened from the corpus to both by the known-name rule, and then injected memories that matched only
"morning" (greetings, "staging went down again this morning"), none naming Portuguese (criterion C28). Real model,
embedded Chroma; written before the change.
"""

from __future__ import annotations

from typing import Any

from _chats import replay_fixture

USER = "tomas"
T0 = 1772438400.0  # 2026-03-02 08:00 UTC

DOCS = [
    {"title": "Payments team on-call runbook",
     "text": "On-call runbook, payments team. Escalation: page the on-call lead, then Marta Silva (engineering "
             "manager) on 07700 900123. Staging database host: pg-staging-02.internal, port 5432. Rollback: run "
             "deployctl rollback --service payments --to previous, then check the health dashboard. A deploy that "
             "fails its health check twice is rolled back automatically."},
    {"title": "Tenancy agreement, Flat 3, 41 Rua Nova Road",
     "text": "Tenancy agreement between Harbour Lettings and Tomás Costa for Flat 3, 41 Rua Nova Road. Rent: £1,150 "
             "per calendar month, due on the 1st. Deposit: £1,326, held in a government-backed scheme. Notice "
             "period: two months in writing. Pets: one dog allowed with written consent; professional cleaning at "
             "the end of the tenancy."},
]

SESSIONS = [
    (0.0, "s1", [
        ("morning!", "Morning! How's it going?"),
        ("I'm learning Portuguese so I can talk to Inês's family properly", "That's lovely - how far along are you?"),
        ("about a month in, mostly Duolingo", "A good start. Speaking practice helps a lot."),
        ("nice one", "Anything else?"),
    ]),
    (2.0, "s2", [
        ("morning", "Morning, Tomás!"),
        ("staging went down again this morning, the db host ran out of disk", "Ouch. Did the rollback work?"),
        ("yes, rolled back and cleared the logs", "Good. Worth adding a disk alert."),
        ("lol ok", ":)"),
    ]),
    (5.0, "s3", [
        ("hey", "Hey Tomás! What's up?"),
        ("Inês's mum is called Graça, she's lovely", "Graça - noted!"),
        ("how do I say 'good morning' in Portuguese?", "'Bom dia.'"),
    ]),
]

chat = replay_fixture("known_name", USER, T0, DOCS, SESSIONS)


def test_a_general_question_naming_a_known_word_keeps_only_memories_naming_it(chat: dict[str, Any]) -> None:
    res = chat["how do I say 'good morning' in Portuguese?"]
    memories = [i for i in res.items if i.source == "memory"]
    assert all("portuguese" in i.text.lower() for i in memories), res.explain()


def test_the_memory_naming_it_is_still_injected(chat: dict[str, Any]) -> None:
    res = chat["how do I say 'good morning' in Portuguese?"]
    assert any("learning Portuguese" in i.text for i in res.items if i.source == "memory"), res.explain()
    assert any("names none of" in i.why for i in res.rejected), res.explain()
