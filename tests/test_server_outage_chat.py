"""A real ``chroma run`` server that dies mid-chat, under LangChain's ``create_agent`` and LlamaIndex's chat engine.

The chat turn returns the model's answer (already paid for) while the server is down; the turns are kept in
the process (``ChatRecall.pending_turns``), served from the cached index, and written in order by the first
turn after the server is back (same data directory, same port). nu45's ``bad_inputs.py`` case 8b found
``agent.invoke`` raising ``StoreUnavailableError ... (upsert into 'memories')`` from the middleware's
``after_agent``.

Reading the chat history during the outage (LangChain's ``RunnableWithMessageHistory`` reading
``ChatRecallChatMessageHistory``, a LlamaIndex memory's ``get`` before the conversation's first message) is served
from the process's cached index of the user; a process that never read the user still raises.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

import pytest

pytest.importorskip("chromadb")

from chatrecall import ChatRecall, Gate, RetrievalConfig, StoreUnavailableError  # noqa: E402
from chatrecall.adapters.chroma import ChromaStore  # noqa: E402
from chatrecall.testing import HashEmbedder, ManualClock  # noqa: E402

pytestmark = pytest.mark.server

TIMEOUT_S = 1.0


def _engine(closing: Callable[[Any], Any], url: str, **kwargs: Any) -> ChatRecall:
    store = closing(ChromaStore(url=url, timeout_s=TIMEOUT_S))
    return closing(ChatRecall(store=store, embedder=HashEmbedder(dim=64), gate=Gate(),
                              retrieval=RetrievalConfig(phase1_timeout_ms=250.0), **kwargs))


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


def _served_from_cache(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "served from this process's cache" in r.getMessage()]


def test_langchain_chat_history_is_read_from_the_cached_index_while_the_server_is_down(
        chroma_server_factory: Any, closing: Callable[[Any], Any], caplog: pytest.LogCaptureFixture) -> None:
    """First-hour finding: RunnableWithMessageHistory's read of ChatRecallChatMessageHistory raised
    StoreUnavailableError (get from 'memories') while the server was down, though the turns were kept."""
    pytest.importorskip("langchain_core")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import BaseMessage
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables.history import RunnableWithMessageHistory
    from pydantic import Field

    from chatrecall.adapters.langchain import ChatRecallChatMessageHistory

    class Model(GenericFakeChatModel):
        calls: list[list[BaseMessage]] = Field(default_factory=list)

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
            self.calls.append(list(messages))
            return super()._generate(messages, *args, **kwargs)

    server = chroma_server_factory()
    cr = _engine(closing, server.url)
    llm = Model(messages=iter(["Noted: a Rational iCombi.", "Foster FSL400, noted.", "Valentine EVO, noted.",
                               "Your fridge is a Foster FSL400."]))
    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{question}")])
    chain = RunnableWithMessageHistory(
        prompt | llm, lambda sid: ChatRecallChatMessageHistory(cr, user_id="u1", session_id=sid),
        input_messages_key="question", history_messages_key="history")
    cfg: Any = {"configurable": {"session_id": "kitchen"}}
    said = [("human", "My oven is a Rational iCombi."), ("ai", "Noted: a Rational iCombi.")]
    assert chain.invoke({"question": said[0][1]}, cfg).content == said[1][1]

    server.kill()
    with caplog.at_level(logging.WARNING, logger="chatrecall"):
        assert chain.invoke({"question": "The walk-in fridge is a Foster FSL400."}, cfg).content == \
            "Foster FSL400, noted."
        assert [(m.type, m.text) for m in llm.calls[-1][:-1]] == said  # the history the model saw
        said += [("human", "The walk-in fridge is a Foster FSL400."), ("ai", "Foster FSL400, noted.")]
        # the async read (aget_messages), with the turns kept in the process among the history
        out = asyncio.run(chain.ainvoke({"question": "Our fryer is a Valentine EVO 2200."}, cfg))
        assert out.content == "Valentine EVO, noted."
        assert [(m.type, m.text) for m in llm.calls[-1][:-1]] == said
        said += [("human", "Our fryer is a Valentine EVO 2200."), ("ai", "Valentine EVO, noted.")]
        history = ChatRecallChatMessageHistory(cr, user_id="u1", session_id="kitchen")
        assert [(m.type, m.text) for m in history.messages] == said
    assert cr.pending_turns("u1") == 4
    warned = [m for m in _served_from_cache(caplog) if "session 'kitchen'" in m]
    assert warned and "unavailable" in warned[0] and "'u1'" in warned[0], warned
    # a process that never read the user has nothing to serve: our error, naming the server
    cold = ChatRecallChatMessageHistory(_engine(closing, server.url), user_id="u1", session_id="kitchen")
    with pytest.raises(StoreUnavailableError, match=server.url):
        _ = cold.messages
    with pytest.raises(StoreUnavailableError, match=server.url):
        asyncio.run(cold.aget_messages())

    server.start()  # same path, same port
    assert chain.invoke({"question": "Which fridge do we have?"}, cfg).content == "Your fridge is a Foster FSL400."
    assert cr.pending_turns() == 0
    said += [("human", "Which fridge do we have?"), ("ai", "Your fridge is a Foster FSL400.")]
    assert _history(cr, "kitchen") == [({"human": "user", "ai": "assistant"}[t], x) for t, x in said]
    assert [(m.type, m.text) for m in cold.messages] == said  # read from the server again


def test_llamaindex_memory_read_before_a_first_message_uses_the_cached_pins_while_the_server_is_down(
        chroma_server_factory: Any, closing: Callable[[Any], Any], caplog: pytest.LogCaptureFixture) -> None:
    """A LlamaIndex memory read with no user message yet (a new conversation's ChatRecallMemory.get, Memory.get
    with a ChatRecallMemoryBlock) reads the user's pins: it raised StoreUnavailableError (get from 'pins') while
    the server was down, though retrieve serves the same pins from the cache."""
    pytest.importorskip("llama_index.core")
    from llama_index.core.chat_engine import SimpleChatEngine
    from llama_index.core.llms import MockLLM
    from llama_index.core.memory import Memory

    from chatrecall.adapters.llamaindex import ChatRecallMemory, ChatRecallMemoryBlock

    server = chroma_server_factory()
    clock = ManualClock()
    cr = _engine(closing, server.url, clock=clock)
    cr.pin("Answer in metric units.", user_id="u1")
    memory = ChatRecallMemory.from_defaults(engine=cr, user_id="u1", session_id="trip")
    SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory).chat("We fly to Lisbon on the 14th of March.")

    server.kill()
    clock.advance(60.0)  # the pins read a minute ago are read from the store again, which does not answer
    with caplog.at_level(logging.WARNING, logger="chatrecall"):
        fresh = ChatRecallMemory.from_defaults(engine=cr, user_id="u1", session_id="trip-2")  # a new conversation
        got = fresh.get()
        assert len(got) == 1 and "Answer in metric units." in str(got[0].content), got
        assert fresh.get_all() == []
        block = Memory.from_defaults(session_id="trip-3", memory_blocks=[ChatRecallMemoryBlock(engine=cr,
                                                                                                user_id="u1")])
        assert "Answer in metric units." in str(block.get()), block.get()
        answer = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=fresh).chat("The hotel is the Memmo Alfama.")
        assert "Memmo Alfama" in str(answer)
    warned = [m for m in _served_from_cache(caplog) if "pins of user 'u1'" in m]
    assert warned and "unavailable" in warned[0], warned
    cold = ChatRecallMemory.from_defaults(engine=_engine(closing, server.url), user_id="u1", session_id="trip-2")
    with pytest.raises(StoreUnavailableError, match=server.url):
        cold.get()

    server.start()
    assert "Answer in metric units." in str(cold.get()[0].content)
    SimpleChatEngine.from_defaults(llm=MockLLM(), memory=fresh).chat("Which hotel did I book?")
    assert cr.pending_turns() == 0
    assert [t for role, t in _history(cr, "trip-2") if role == "user"] == ["The hotel is the Memmo Alfama.",
                                                                            "Which hotel did I book?"]
