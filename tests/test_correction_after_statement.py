"""helper-108's new-user chat (stop 34), session 3: "Actually Luna's recheck is now on Monday" right after a statement
about a staging outage was searched together with that statement and injected staging memories (326 tokens) instead
of the recheck it updates. A correction is searched with the turn before it only when that turn asked something
(criterion C30, stop 35). Real model, embedded Chroma; written before the change.
"""

from __future__ import annotations

from typing import Any

from _chats import replay_fixture

USER = "tomas"
T0 = 1772438400.0  # 2026-03-02 08:00 UTC

SESSIONS = [
    (0.0, "s1", [
        ("morning!", "Morning! How's it going?"),
        ("Luna's got her vet recheck for the ear infection on Thursday the 12th at 5pm",
         "Noted: Luna's recheck, Thursday 12th at 5pm."),
        ("she's on meloxicam until then", "Hope she feels better soon."),
        ("staging went down this morning, a migration locked the users table", "Ouch. Is it back up?"),
        ("yep, rolled back", "Good."),
    ]),
    (7.0, "s3", [
        ("hey", "Hey Tomás!"),
        ("Signed the tenancy for the new flat! We're moving on the 15th.", "Congrats on the new flat!"),
        ("staging went down again today, someone restarted the db host in the middle of a deploy",
         "Two outages in a week, might be worth a postmortem."),
        ("Actually Luna's recheck is now on Monday", "Got it, Luna's recheck moved to Monday."),
    ]),
]
UPDATE = "Actually Luna's recheck is now on Monday"

chat = replay_fixture("correction_after_statement", USER, T0, [], SESSIONS)


def test_the_update_brings_the_fact_it_changes(chat: dict[str, Any]) -> None:
    res = chat[UPDATE]
    memories = [i.text for i in res.items if i.source == "memory"]
    assert any("recheck" in t and "Thursday" in t for t in memories), res.explain()


def test_it_is_not_searched_with_the_statement_before_it(chat: dict[str, Any]) -> None:
    res = chat[UPDATE]
    memories = [i.text for i in res.items if i.source == "memory"]
    assert not any("staging" in t.lower() or "migration" in t.lower() for t in memories), res.explain()
    assert not any(n.startswith("correction: searched with the turn it corrects") for n in res.notes), res.notes
