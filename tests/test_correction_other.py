"""C64 (stop 41): "no, I meant the other client" rules out the one the corrected question named.

helper-122's new-user chat: after "what's the Kestrel deadline again?", "no, I meant the other client" was searched
with the question it corrects and brought the Kestrel deadline back, first (the user wanted Harlow's). A correction
that asks for "the other <thing>" and names nothing new rules out the names of the question it corrects, as "..., not
Kestrel" would: they leave the search text, and a memory naming one stays only when it also names what the
correction asks for ("clients"). Written before the change (fails on e53fd2f).
"""

from __future__ import annotations

from typing import Any

import pytest
from _chats import chat_turn, seeded_engine

from chatrecall.core._classifier import other_than


@pytest.mark.parametrize(("message", "before", "ruled"), [
    ("no, I meant the other client", "what's the Kestrel deadline again?", {"kestrel"}),
    ("sorry, the other one", "When does Anna's flight from Lyon land?", {"anna", "lyon"}),
    ("no, I meant the other hive", "what colour is the queen marked?", set()),  # nothing named: nothing ruled out
    ("no, I meant Harlow", "what's the Kestrel deadline again?", set()),  # names its own: drop_negated's business
    ("no, I meant the Kestrel one", "when is the Harlow site due?", set()),  # no "other"
])
def test_what_the_other_rules_out(message: str, before: str, ruled: set[str]) -> None:
    assert set(other_than(message, before)) == ruled


@pytest.fixture
def sam(embedded_store: Any, st_embedder: Any) -> Any:
    turns = [("My two clients right now are Harlow Bakery and Kestrel Physio.", "Got it."),
             ("The Harlow Bakery site is due on the 28th of February.", "Noted: 28 February."),
             ("Kestrel Physio want their booking system live by the end of April.", "Okay, end of April."),
             ("I ride a Canyon Endurace with 28mm tyres.", "Nice bike.")]
    with seeded_engine(embedded_store, st_embedder, 1_770_019_200.0, "sam", turns,  # 2026-02-02 08:00 UTC
                       days_later=2) as engine:
        yield engine


def test_the_other_client_is_not_the_one_just_asked_about(sam: Any) -> None:
    cr, clock = sam
    chat_turn(cr, clock, "sam", "s2", "what's the Kestrel deadline again?",
              "Kestrel Physio's booking system is due by the end of April.", ask=False)
    res = cr.retrieve("no, I meant the other client", user_id="sam", session_id="s2")
    assert res.gate.correction, res.explain()
    assert any("Harlow Bakery site is due" in m.text for m in res.memories), res.explain()
    assert not any(m.text.startswith("Kestrel Physio want") for m in res.memories), res.explain()
