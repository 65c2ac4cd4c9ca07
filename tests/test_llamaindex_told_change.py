"""A change the user told earlier in the chat reaches the LlamaIndex memory's system message, above the old fact.

nu52: after "Mrs Okafor is paying £110 per visit now" (said earlier in the same session, so in the history
``ChatRecallMemory.get`` returns), "How much is Mrs Okafor paying per visit?" got a system message whose memories held
only the old "£90 per visit". The memory passes the stored turns its history shows to the engine as ``exclude_ids``;
the engine leaves them out of the search but brings a change among them back, just above the older memory it changes
(its ``why`` says "said in this conversation", tests/test_told_change.py). The memory then dropped every returned
item its history showed, that change too. It now keeps what the engine returns for the ids it passed: the engine
decides what of the shown history goes with the memories.

Real LlamaIndex messages, the real model and embedded Chroma.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

from llama_index.core.llms import ChatMessage  # noqa: E402

from chatrecall import ChatRecall  # noqa: E402
from chatrecall.adapters.llamaindex import ChatRecallMemory  # noqa: E402
from chatrecall.testing import ManualClock  # noqa: E402

DAY = 86400.0
USER = "nu52"
OLD = "I clean for Mrs Okafor on Mondays, she pays £90 per visit."
CHANGE = "Mrs Okafor is paying £110 per visit now."
QUESTION = "How much is Mrs Okafor paying per visit?"


def _chat(memory: ChatRecallMemory, clock: ManualClock, turns: list[tuple[str, str]]) -> None:
    """Each turn as SimpleChatEngine runs it: put the user's message, get the prompt, put the reply."""
    for said, reply in turns:
        memory.put(ChatMessage(role="user", content=said))
        clock.advance(20)
        memory.get()
        clock.advance(10)
        memory.put(ChatMessage(role="assistant", content=reply))
        clock.advance(60)


@pytest.fixture
def okafor(embedded_store: Any, st_embedder: Any) -> Iterator[tuple[ChatRecall, ManualClock]]:
    """An engine on the real model and embedded Chroma holding last week's session with the old rate."""
    clock = ManualClock(1_780_000_000.0)
    cr = ChatRecall(store=embedded_store, embedder=st_embedder, clock=clock)
    try:
        last_week = ChatRecallMemory.from_defaults(engine=cr, user_id=USER, session_id="s1")
        _chat(last_week, clock, [(OLD, "Noted, Mrs Okafor on Mondays."),
                                 ("My van is booked in for its MOT on the 3rd.", "Got it, MOT on the 3rd.")])
        clock.advance(6 * DAY)
        yield cr, clock
    finally:
        cr.close()


@pytest.mark.model
def test_a_change_told_in_this_chat_is_in_the_memories_above_the_old_value(
        okafor: tuple[ChatRecall, ManualClock]) -> None:
    cr, clock = okafor
    memory = ChatRecallMemory.from_defaults(engine=cr, user_id=USER, session_id="s2")
    _chat(memory, clock, [(CHANGE, "Great, £110 per visit for Mrs Okafor."),
                          ("I also picked up a new client on Fridays.", "Nice, a new Friday client.")])
    memory.put(ChatMessage(role="user", content=QUESTION))
    out = memory.get()
    res = memory.last_result
    assert res is not None
    assert [m.content for m in out[1:]][:1] == [CHANGE]  # the history shows the change ...
    assert out[0].role.value == "system", res.explain()
    system = out[0].content or ""
    memories = [line for line in system.splitlines() if line.startswith("- [")]
    # ... and the memories hold it too, above the old rate (before: the old rate alone)
    at_change = next((i for i, line in enumerate(memories) if line.endswith(CHANGE)), None)
    at_old = next((i for i, line in enumerate(memories) if line.endswith(OLD)), None)
    assert at_change is not None and at_old is not None, (system, res.explain())
    assert at_change < at_old, (system, res.explain())
    change = next(it for it in memory.last_injected if it.text == CHANGE)
    assert "said in this conversation" in change.why, res.explain()
    assert change.id in memory.shown_ids  # passed to the engine as shown: it decided to bring it back


@pytest.mark.model
def test_other_turns_the_history_shows_stay_out_of_the_memories(okafor: tuple[ChatRecall, ManualClock]) -> None:
    """Only the engine's told change comes back: the rest of the shown history is not repeated."""
    cr, clock = okafor
    memory = ChatRecallMemory.from_defaults(engine=cr, user_id=USER, session_id="s2")
    _chat(memory, clock, [("Mrs Okafor asked me to do her windows too next time.", "Noted, windows for Mrs Okafor."),
                          ("I also picked up a new client on Fridays.", "Nice, a new Friday client.")])
    memory.put(ChatMessage(role="user", content=QUESTION))
    out = memory.get()
    res = memory.last_result
    assert res is not None
    shown = {m.content for m in out if m.role.value != "system"}
    assert not any(it.text in shown for it in memory.last_injected), res.explain()
    assert any(it.text == OLD for it in memory.last_injected), res.explain()
