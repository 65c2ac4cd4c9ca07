"""A change the user made in this conversation goes with the memories, just above the old fact it changes.

nu50 (stop 45): "Which day am I walking Biscuit now?" three turns after "The Hendersons have moved Biscuit to
Wednesdays from now on." got only the Tuesday / Thursday memories. The change was in the recent window (or the
caller's own history, ``exclude_ids``), which the search leaves out, so the change lift never saw it, and the memory
block showed the old day alone. Stop 45's U1b left the old memory out instead and lost memories stating two facts;
stop 46's U2 keeps it and brings the change above it (docs/benchmarks.md, "U2").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chatrecall import ChatRecall
from chatrecall.testing import ManualClock

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

DAY = 86400.0
OLD = [("I walk Biscuit for the Hendersons on Tuesdays and Thursdays, 10 till 11.",
        "Got it, Biscuit on Tuesdays and Thursdays."),
       ("Biscuit's vet is Oakfield Vets on Mill Lane.", "Noted, Oakfield Vets.")]
NOW = [("The Hendersons have moved Biscuit to Wednesdays from now on.", "Thanks, Wednesdays it is."),
       ("Also bought a new lead for Pepper.", "Nice.")]
QUESTION = "Which day am I walking Biscuit now?"


def _chat(cr: ChatRecall, clock: ManualClock, session: str, turns: list[tuple[str, str]], *,
          assistant: bool = True) -> list[str]:
    ids = []
    for said, reply in turns:
        ids.append(cr.add(said, user_id="w", session_id=session))
        clock.advance(30)
        if assistant:
            cr.add(reply, user_id="w", session_id=session, role="assistant")
        clock.advance(60)
    return ids


@pytest.fixture
def walker(embedded_store: Any, st_embedder: Any) -> Iterator[tuple[ChatRecall, ManualClock]]:
    clock = ManualClock(1_780_000_000.0)
    cr = ChatRecall(store=embedded_store, embedder=st_embedder, clock=clock)
    try:
        _chat(cr, clock, "s1", OLD)
        clock.advance(5 * DAY)
        yield cr, clock
    finally:
        cr.close()


def test_the_change_in_the_recent_window_comes_above_the_old_day(walker: tuple[ChatRecall, ManualClock]) -> None:
    cr, clock = walker
    _chat(cr, clock, "now", NOW)
    res = cr.retrieve(QUESTION, user_id="w", session_id="now")
    texts = [m.text for m in res.memories]
    assert any("Wednesdays" in t for t in (r.text for r in res.recent)), res.explain()  # shown there too
    at_new = next(i for i, t in enumerate(texts) if "moved Biscuit to Wednesdays" in t)
    at_old = next(i for i, t in enumerate(texts) if "Tuesdays and Thursdays, 10 till 11" in t)  # kept, not dropped
    assert at_new < at_old, res.explain()
    assert "said in this conversation" in res.memories[at_new].why, res.explain()
    assert "a later change to it is ranked above" in res.memories[at_old].why, res.explain()
    assert len(res.memories) <= 4 or res.route.value != "memory"  # k is honoured


def test_the_callers_own_history_counts_as_told(walker: tuple[ChatRecall, ManualClock]) -> None:
    """LlamaIndex / LangChain callers show their history themselves and pass its ids as ``exclude_ids``."""
    cr, clock = walker
    ids = _chat(cr, clock, "now", NOW)
    res = cr.retrieve(QUESTION, user_id="w", session_id="other", exclude_ids=ids)
    texts = [m.text for m in res.memories]
    assert texts and "moved Biscuit to Wednesdays" in texts[0], res.explain()


def test_an_unrelated_change_stays_out(walker: tuple[ChatRecall, ManualClock]) -> None:
    cr, clock = walker
    _chat(cr, clock, "now", [("Swapped my Saturday shift at the cafe with Dana, so I'm on at 7 instead.", "Noted."),
                             ("Also bought a new lead for Pepper.", "Nice.")])
    res = cr.retrieve(QUESTION, user_id="w", session_id="now")
    assert not any("Saturday shift" in m.text for m in res.memories), res.explain()
    assert any("Tuesdays and Thursdays" in m.text for m in res.memories), res.explain()


def test_before_the_change_as_of_shows_the_old_day(walker: tuple[ChatRecall, ManualClock]) -> None:
    cr, clock = walker
    before = clock()
    clock.advance(60)
    _chat(cr, clock, "now", NOW)
    res = cr.retrieve(QUESTION, user_id="w", session_id="now", as_of=before)
    assert not any("Wednesdays" in m.text for m in res.memories), res.explain()


def test_a_store_without_assistant_turns_brings_nothing(embedded_store: Any, st_embedder: Any) -> None:
    """Only a chatbot's store, as with every change lift (two people narrating: "now" is rarely an update)."""
    clock = ManualClock(1_780_000_000.0)
    cr = ChatRecall(store=embedded_store, embedder=st_embedder, clock=clock)
    try:
        _chat(cr, clock, "s1", OLD, assistant=False)
        clock.advance(5 * DAY)
        _chat(cr, clock, "now", NOW, assistant=False)
        res = cr.retrieve(QUESTION, user_id="w", session_id="now")
        assert not any("Wednesdays" in m.text for m in res.memories), res.explain()
    finally:
        cr.close()
