"""A real ``chroma run`` server that dies mid-chat, under LangChain's ``create_agent`` and LlamaIndex's chat engine.

The chat turn returns the model's answer (already paid for) while the server is down; the turns are kept in
the process (``ChatRecall.pending_turns``), served from the cached index, and written in order by the first
turn after the server is back (same data directory, same port). nu45's ``bad_inputs.py`` case 8b found
``agent.invoke`` raising ``StoreUnavailableError ... (upsert into 'memories')`` from the middleware's
``after_agent``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import pytest

pytest.importorskip("chromadb")

from chatrecall import ChatRecall, Gate, RetrievalConfig  # noqa: E402
from chatrecall.adapters.chroma import ChromaStore  # noqa: E402
from chatrecall.testing import HashEmbedder  # noqa: E402

pytestmark = pytest.mark.server

TIMEOUT_S = 1.0


def _engine(closing: Callable[[Any], Any], url: str) -> ChatRecall:
    store = closing(ChromaStore(url=url, timeout_s=TIMEOUT_S))
    return closing(ChatRecall(store=store, embedder=HashEmbedder(dim=64), gate=Gate(),
                              retrieval=RetrievalConfig(phase1_timeout_ms=250.0)))


def _history(cr: ChatRecall, session: str) -> list[tuple[str, str]]:
    return [(r.role, r.text) for r in cr.history("u1", session)]


def test_langchain_agent_turn_survives_a_killed_server_and_the_next_turn_writes_it(
        chroma_server_factory: Any, closing: Callable[[Any], Any], caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from chatrecall.adapters.langchain import ChatRecallMiddleware

    class Model(GenericFakeChatModel):
        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Model:
            return self

    server = chroma_server_factory()
    cr = _engine(closing, server.url)
    replies = ["Noted: a Rational iCombi.", "Foster FSL400, noted.", "Valentine EVO, noted.",
               "Your fridge is a Foster FSL400."]
    mw = ChatRecallMiddleware(cr, user_id="u1", session_id="kitchen")
    agent = create_agent(Model(messages=iter(AIMessage(r) for r in replies)), middleware=[mw])

    def say(text: str) -> dict[str, Any]:
        return agent.invoke({"messages": [{"role": "user", "content": text}]})  # type: ignore[no-any-return]

    out = say("My oven is a Rational iCombi.")
    assert len(out["chatrecall"]["stored"]) == 2

    server.kill()
    with caplog.at_level(logging.WARNING, logger="chatrecall"):
        out = say("The walk-in fridge is a Foster FSL400.")
    assert out["messages"][-1].content == "Foster FSL400, noted."  # the answer comes back
    state = out["chatrecall"]
    assert state["pending"] == 2 and len(state["stored"]) == 2, state
    assert any(n.startswith("degraded") and "2 turns" in n for n in state["notes"]), state["notes"]
    assert any("unavailable" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)

    out = say("Our fryer is a Valentine EVO 2200.")  # still down: the earlier turn is in the recent window
    assert out["messages"][-1].content == "Valentine EVO, noted."
    assert out["chatrecall"]["pending"] == 4
    assert mw.last_result is not None and mw.last_result.degraded
    assert any("2 turns" in n and "wait" in n for n in mw.last_result.notes), mw.last_result.notes
    assert "The walk-in fridge is a Foster FSL400." in [i.text for i in mw.last_result.recent]

    server.start()  # same path, same port
    out = say("Which fridge do we have?")
    assert out["messages"][-1].content == "Your fridge is a Foster FSL400."
    assert out["chatrecall"]["pending"] == 0
    assert mw.last_result is not None and not mw.last_result.degraded, mw.last_result.notes
    assert any("4 turns" in n and "written" in n for n in mw.last_result.notes), mw.last_result.notes
    assert cr.pending_turns() == 0
    assert _history(cr, "kitchen") == [
        ("user", "My oven is a Rational iCombi."), ("assistant", "Noted: a Rational iCombi."),
        ("user", "The walk-in fridge is a Foster FSL400."), ("assistant", "Foster FSL400, noted."),
        ("user", "Our fryer is a Valentine EVO 2200."), ("assistant", "Valentine EVO, noted."),
        ("user", "Which fridge do we have?"), ("assistant", "Your fridge is a Foster FSL400.")]
    assert cr.count("u1") == 8
    # a new engine (another process) finds what was said during the outage
    other = _engine(closing, server.url)
    assert any("Foster" in i.text for i in other.search("walk-in fridge Foster FSL400", user_id="u1"))


def test_llamaindex_chat_turn_survives_a_killed_server_and_the_next_turn_writes_it(
        chroma_server_factory: Any, closing: Callable[[Any], Any]) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.chat_engine import SimpleChatEngine
    from llama_index.core.llms import MockLLM

    from chatrecall.adapters.llamaindex import ChatRecallMemory

    server = chroma_server_factory()
    cr = _engine(closing, server.url)
    memory = ChatRecallMemory.from_defaults(engine=cr, user_id="u1", session_id="trip")
    chat = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)  # echoes: a distinct reply each turn
    chat.chat("We fly to Lisbon on the 14th of March.")

    server.kill()
    answer = chat.chat("The hotel is the Memmo Alfama.")  # the user's message is stored before the LLM call
    assert "Memmo Alfama" in str(answer)  # (MockLLM echoes the prompt)
    assert cr.pending_turns("u1") == 2

    server.start()
    chat.chat("Which hotel did I book?")
    assert cr.pending_turns("u1") == 0
    texts = [t for role, t in _history(cr, "trip") if role == "user"]
    assert texts == ["We fly to Lisbon on the 14th of March.", "The hotel is the Memmo Alfama.",
                     "Which hotel did I book?"]
    assert [role for role, _ in _history(cr, "trip")] == ["user", "assistant"] * 3
