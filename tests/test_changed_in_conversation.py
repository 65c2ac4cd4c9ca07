"""A memory that a turn of this conversation changed is left out.

nu50 (stop 45, a dog walker's chatbot on LlamaIndex): "The Hendersons have moved Biscuit to Wednesdays from now on."
then, three turns later in the same conversation, "Which day am I walking Biscuit now?". The change is in the recent
window (or the caller's history), which the search never returns, so the only memories given were the old Tuesday and
Thursday ones, under "Relevant memories". Since stop 45 a found memory that such a turn changed (the update lift's
"about the same thing") is left out, with a why naming the change; memories it did not change stay.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

import chatrecall  # noqa: E402
from chatrecall.testing import ManualClock  # noqa: E402

OLD = "I walk Biscuit on Tuesdays and Thursdays at 11."
VET = "Biscuit's vet is Oakfield Vets on Mill Road."
CHANGE = "The Hendersons have moved Biscuit to Wednesdays from now on."


@pytest.fixture
def cr() -> Iterator[tuple[chatrecall.ChatRecall, ManualClock]]:
    with tempfile.TemporaryDirectory() as d:
        clock = ManualClock(1_780_000_000.0)
        engine = chatrecall.connect(path=d, clock=clock)
        try:
            for role, text in [("user", OLD), ("assistant", "Got it, Biscuit on Tuesdays and Thursdays at 11."),
                               ("user", VET), ("assistant", "Noted: Oakfield Vets on Mill Road."),
                               ("user", "Pepper is the springer spaniel, she's 4."), ("assistant", "Lovely!")]:
                engine.add(text, user_id="maya", session_id="s1", role=role)
                clock.advance(60)
            clock.advance(3 * 86400)
            for role, text in [("user", CHANGE), ("assistant", "Okay, Wednesdays for Biscuit then."),
                               ("user", "It's pouring down today."), ("assistant", "Take a towel for the dogs!")]:
                engine.add(text, user_id="maya", session_id="s2", role=role)
                clock.advance(60)
            yield engine, clock
        finally:
            engine.close()


def test_the_old_day_is_left_out_after_the_change_in_this_conversation(
        cr: tuple[chatrecall.ChatRecall, ManualClock]) -> None:
    engine, _ = cr
    res = engine.retrieve("Which day am I walking Biscuit now?", user_id="maya", session_id="s2")
    assert not any("Tuesdays and Thursdays" in m.text for m in res.memories), res.explain()
    assert any(r.text == OLD and "changed in this conversation" in r.why for r in res.rejected), res.explain()
    assert any(r.text == CHANGE for r in res.recent), "the change is shown in the recent window"


def test_a_memory_the_change_did_not_change_stays(cr: tuple[chatrecall.ChatRecall, ManualClock]) -> None:
    engine, _ = cr
    res = engine.retrieve("What's Biscuit's vet called?", user_id="maya", session_id="s2")
    assert any(m.text == VET for m in res.memories), res.explain()


def test_in_another_conversation_the_old_day_is_still_found(cr: tuple[chatrecall.ChatRecall, ManualClock]) -> None:
    engine, _ = cr
    res = engine.retrieve("Which day am I walking Biscuit now?", user_id="maya", session_id="s3")
    texts = [m.text for m in res.memories]
    assert CHANGE in texts, res.explain()  # no turn of s3 changed anything: the lift orders them, nothing is dropped
    assert not any("changed in this conversation" in r.why for r in res.rejected), res.explain()
