"""LlamaIndex adapter: retriever, chat memory, memory block, node postprocessor, embeddings.

Real LlamaIndex classes throughout (only its own MockLLM / MockEmbedding /
mock function-calling LLM stand in for a model); fakes for the fast tests,
real Chroma + the real MiniLM for one test per component.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from _stores import DownStore  # noqa: E402
from llama_index.core import VectorStoreIndex  # noqa: E402
from llama_index.core.agent.workflow import FunctionAgent, ReActAgent  # noqa: E402
from llama_index.core.chat_engine import CondensePlusContextChatEngine, SimpleChatEngine  # noqa: E402
from llama_index.core.embeddings import MockEmbedding  # noqa: E402
from llama_index.core.llms import ChatMessage, MockLLM  # noqa: E402
from llama_index.core.llms.mock import (  # noqa: E402
    MockFunctionCallingLLMWithChatMemoryOfLastCall,
    MockLLMWithChatMemoryOfLastCall,
)
from llama_index.core.memory import Memory  # noqa: E402
from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402
from llama_index.core.schema import Document, MetadataMode, NodeWithScore, QueryBundle, TextNode  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402
from pydantic import Field  # noqa: E402

from chatrecall import ChatRecall, ConfigError, InvalidInputError, Turn  # noqa: E402
from chatrecall.adapters.llamaindex import (  # noqa: E402
    ChatRecallEmbedding,
    ChatRecallMemory,
    ChatRecallMemoryBlock,
    ChatRecallPostprocessor,
    ChatRecallRetriever,
    LlamaIndexEmbedder,
)
from chatrecall.testing import HashEmbedder, ManualClock  # noqa: E402

DAY = 86400.0
T0 = ManualClock.START

CHEESE = "I'm building the cheese project: a catalogue of French cheeses with tasting notes."
TABLE = "For the cheese project use a cheeses table with region, milk type and aging time."
POSTGRES = "We use Postgres, not SQLite, for the database."
ECONN = "The import script crashes with ECONNREFUSED when it talks to the database."
MARIE = "My sister Marie is visiting Lyon next month and wants cheese shop tips."
BOB = "Bob's secret: the cheese project codename is Roquefort-42."
PIN = "Always answer in French."


def _seed(cr: ChatRecall, now: float) -> None:
    base = now - 10 * DAY
    rows = [("s1", "user", CHEESE), ("s1", "assistant", TABLE), ("s1", "user", POSTGRES),
            ("s2", "user", ECONN), ("s3", "user", MARIE)]
    cr.add_many([Turn(text=t, user_id="alice", session_id=s, role=r, timestamp=base + i * 3600)
                 for i, (s, r, t) in enumerate(rows)])
    cr.add(BOB, user_id="bob", session_id="b1", timestamp=base)
    cr.pin(PIN, user_id="alice")


@pytest.fixture
def cr(engine: ChatRecall, clock: ManualClock) -> ChatRecall:
    """The conftest fake engine on a ManualClock at T0 (closed at teardown), seeded."""
    _seed(engine, clock.t)
    return engine


@pytest.fixture(scope="module")
def real_cr(tmp_path_factory: pytest.TempPathFactory, st_embedder: Any) -> Iterator[ChatRecall]:
    """Real embedded Chroma + the real MiniLM, seeded once for the module."""
    pytest.importorskip("chromadb")
    from chatrecall.adapters.chroma import ChromaStore

    store = ChromaStore(path=tmp_path_factory.mktemp("li-chroma"))
    engine = ChatRecall(store=store, embedder=st_embedder)
    _seed(engine, T0 + 10 * DAY)
    try:
        yield engine
    finally:
        engine.close()
        store.close()


def texts(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]


def system_text(messages: Any) -> str:
    return "\n".join(m.content or "" for m in messages if m.role.value == "system")


# ====================================================================== retriever
def test_search_mode_nodes(cr: ChatRecall) -> None:
    nodes = ChatRecallRetriever(cr, "alice", mode="search", k=3).retrieve("ECONNREFUSED import script")
    assert texts(nodes)[0] == ECONN
    top = nodes[0]
    assert isinstance(top.node, TextNode)
    assert top.node.node_id == cr.search("ECONNREFUSED import script", user_id="alice", k=3)[0].id
    md = top.node.metadata
    assert md["source"] == "memory" and md["user_id"] == "alice" and md["session_id"] == "s2"
    assert md["components"]["keyword"] > 0 and "keyword" in md["why"]
    assert top.score == pytest.approx(md["score"])
    scores = [n.score or 0.0 for n in nodes]
    assert scores == sorted(scores, reverse=True)
    assert len(nodes) <= 3


def test_retrieve_mode_is_gated_and_carries_pins(cr: ChatRecall) -> None:
    r = ChatRecallRetriever(cr, "alice")
    small_talk = r.retrieve("How are you?")
    assert texts(small_talk) == [PIN]  # the gate says none: pins only
    assert small_talk[0].node.metadata["source"] == "pin"
    assert small_talk[0].node.metadata["route"] == "none"

    nodes = r.retrieve("Remember that cheese project?")
    assert texts(nodes)[0] == PIN
    assert CHEESE in texts(nodes)
    mem = nodes[1].node.metadata
    assert mem["route"] == "memory"
    assert any(x.startswith("recall:") for x in mem["reasons"])
    assert "route=memory" in mem["gate"]
    assert ChatRecallRetriever(cr, "alice", include_pins=False).retrieve("Remember that cheese project?")[0] \
        .node.metadata["source"] == "memory"


def test_user_isolation(cr: ChatRecall) -> None:
    for mode in ("search", "retrieve"):
        bob = texts(ChatRecallRetriever(cr, "bob", mode=mode).retrieve("Remember the cheese project codename?"))
        assert BOB in bob
        assert not {CHEESE, TABLE, MARIE, PIN} & set(bob)
        alice = texts(ChatRecallRetriever(cr, "alice", mode=mode).retrieve("Remember the cheese project codename?"))
        assert BOB not in alice


def test_retrieve_mode_respects_budget(cr: ChatRecall) -> None:
    for budget in (20, 40, 400):
        nodes = ChatRecallRetriever(cr, "alice", budget_tokens=budget).retrieve("Remember the cheese project?")
        assert sum(n.node.metadata["tokens"] for n in nodes) <= budget
    assert len(ChatRecallRetriever(cr, "alice", budget_tokens=400).retrieve("Remember the cheese project?")) > len(
        ChatRecallRetriever(cr, "alice", budget_tokens=30).retrieve("Remember the cheese project?"))


def test_in_retriever_query_engine_with_mock_llm(cr: ChatRecall) -> None:
    retriever = ChatRecallRetriever(cr, "alice", mode="search", k=2)
    qe = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    resp = qe.query("What did I say about ECONNREFUSED?")
    assert texts(resp.source_nodes)[0] == ECONN
    assert [n.node.node_id for n in resp.source_nodes] == [n.node.node_id for n in retriever.retrieve(
        "What did I say about ECONNREFUSED?")]
    prompt = str(resp)  # MockLLM echoes its prompt
    assert ECONN in prompt
    assert "components" not in prompt and "why:" not in prompt  # diagnostics never reach the LLM


def test_async_retrieve_and_query(cr: ChatRecall) -> None:
    retriever = ChatRecallRetriever(cr, "alice")
    sync = [n.node.node_id for n in retriever.retrieve("Remember that cheese project?")]

    async def run() -> tuple[list[str], list[str]]:
        nodes = await retriever.aretrieve("Remember that cheese project?")
        resp = await RetrieverQueryEngine.from_args(retriever, llm=MockLLM()).aquery("Remember that cheese project?")
        return [n.node.node_id for n in nodes], [n.node.node_id for n in resp.source_nodes]

    got, via_engine = asyncio.run(run())
    assert got == sync and via_engine == sync


def test_the_memories_take_the_engine_first_as_the_retriever_does(cr: ChatRecall) -> None:
    # helper-122 (stop 41): the pydantic-based classes took the engine by keyword only
    from chatrecall.adapters.llamaindex import ChatRecallMemory, ChatRecallMemoryBlock

    assert ChatRecallMemoryBlock(cr, user_id="alice").engine is cr
    assert ChatRecallMemory(cr, user_id="alice", session_id="s1").engine is cr
    with pytest.raises(ConfigError, match="passed twice"):
        ChatRecallMemory(cr, engine=cr, user_id="alice", session_id="s1")
    # helper-124 (stop 42): from_defaults(cr, ...) met a bare "takes 1 positional argument"
    memory = ChatRecallMemory.from_defaults(cr, user_id="alice", session_id="s1")
    assert memory.engine is cr and memory.session_id == "s1"
    with pytest.raises(ConfigError, match="passed twice"):
        ChatRecallMemory.from_defaults(cr, engine=cr, user_id="alice", session_id="s1")
    with pytest.raises(ConfigError, match="engine='nope'"):
        ChatRecallMemory.from_defaults("nope", user_id="alice", session_id="s1")


@pytest.mark.parametrize(("build", "name"), [
    (lambda cr: ChatRecallRetriever(cr, "alice", as_context="yes"), "as_context"),
    (lambda cr: ChatRecallRetriever(cr, "alice", include_pins=1), "include_pins"),
    (lambda cr: ChatRecallMemory(cr, user_id="alice", session_id="s1", recall="no"), "recall"),
])
def test_a_flag_that_is_not_a_bool_fails_at_once_naming_it(cr: ChatRecall, build: Any, name: str) -> None:
    # helper-124 (stop 42): as_context="yes" was taken silently (and pydantic reads recall="no" as False)
    with pytest.raises(ConfigError, match=rf"{name}=.* is invalid \(a (str|int)\): pass True or False"):
        build(cr)


def test_retriever_bad_arguments(cr: ChatRecall) -> None:
    with pytest.raises(ConfigError, match="mode='fuzzy'"):
        ChatRecallRetriever(cr, "alice", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="engine="):
        ChatRecallRetriever(object(), "alice")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="user_id"):
        ChatRecallRetriever(cr, "").retrieve("Remember that cheese project?")


@pytest.mark.model
def test_retriever_real_chroma_and_model(real_cr: ChatRecall) -> None:
    # A paraphrase with no shared keyword: only the real model links "DB engine" to Postgres.
    nodes = ChatRecallRetriever(real_cr, "alice", mode="search", k=3).retrieve("Which DB engine did we pick?")
    assert texts(nodes)[0] == POSTGRES
    resp = RetrieverQueryEngine.from_args(ChatRecallRetriever(real_cr, "alice"), llm=MockLLM()).query(
        "Remember that cheese project?")
    got = texts(resp.source_nodes)
    assert got[0] == PIN and CHEESE in got and BOB not in got


# ====================================================================== ChatRecallMemory
def _memory(cr: ChatRecall, session: str = "new", **kw: Any) -> ChatRecallMemory:
    return ChatRecallMemory.from_defaults(engine=cr, user_id="alice", session_id=session, **kw)


def test_simple_chat_engine_gets_pins_and_gated_recall(cr: ChatRecall) -> None:
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=3)
    memory = _memory(cr)
    chat = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="You are helpful.")

    chat.chat("How are you?")
    system = system_text(llm.last_chat_messages)
    assert PIN in system and CHEESE not in system  # small talk: pins, no recall
    assert memory.last_result is not None and memory.last_result.route.value == "none"

    chat.chat("Remember that cheese project?")
    msgs = list(llm.last_chat_messages or [])
    system = system_text(msgs)
    assert PIN in system and CHEESE in system and BOB not in system
    assert [m.role.value for m in msgs][-3:] == ["user", "assistant", "user"]
    assert msgs[-1].content == "Remember that cheese project?"
    assert memory.last_result.route.value == "memory"


def test_put_stores_turns_and_later_sessions_recall_them(cr: ChatRecall) -> None:
    chat = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=3), memory=_memory(cr, "trip"))
    chat.chat("The staging cluster is called zephyr-7 and runs in Frankfurt.")
    assert cr.count("alice", "trip") == 2  # user message + assistant reply
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=3)
    later = SimpleChatEngine.from_defaults(llm=llm, memory=_memory(cr, "later"))
    later.chat("Remember what the staging cluster zephyr-7 is?")
    assert "zephyr-7 and runs in Frankfurt" in system_text(llm.last_chat_messages)


def test_history_window_and_no_duplicate_recall(cr: ChatRecall) -> None:
    memory = _memory(cr, "long", token_limit=60)
    for i in range(12):
        memory.put(ChatMessage(role="user", content=f"Turn {i}: the deploy uses chart version {i} on cluster kappa{i}"))
        memory.put(ChatMessage(role="assistant", content=f"Noted version {i}."))
    memory.put(ChatMessage(role="user", content="Remember the chart version on cluster kappa1?"))
    out = memory.get()
    history = [m for m in out if m.role.value != "system"]
    assert len(history) < 25 and history[0].role.value == "user"  # windowed, never starts mid-exchange
    assert sum(cr.token_counter.count(m.content or "") for m in history) <= 60
    assert history[-1].content == "Remember the chart version on cluster kappa1?"
    system = system_text(out)
    assert "cluster kappa1" in system  # out of the window: recalled
    shown = {m.content for m in history}
    assert not any(line[line.find("] ") + 2:] in shown for line in system.splitlines() if line.startswith("- ["))
    assert len(memory.get_all()) == 25
    # last_injected is what the system message holds; last_result also lists what the history already shows
    injected = memory.last_injected
    assert injected and all(it.text in system for it in injected)
    assert {it.id for it in injected} <= {it.id for it in memory.last_result.items}  # type: ignore[union-attr]
    assert not any(it.text in shown for it in injected)


def test_reset_forgets_the_session_only(cr: ChatRecall) -> None:
    memory = _memory(cr, "tmp")
    memory.put(ChatMessage(role="user", content="Temporary note about quokkas."))
    memory.get()  # stored once recalled for (helper-125), as a chat engine's put-then-get does
    assert cr.count("alice", "tmp") == 1
    memory.reset()
    assert memory.get_all() == [] and cr.count("alice", "tmp") == 0
    assert cr.count("alice", "s1") == 3
    memory.reset()  # nothing left: no error


def test_tool_messages_kept_exactly_but_not_stored(cr: ChatRecall) -> None:
    memory = _memory(cr, "tools")
    msgs = [ChatMessage(role="user", content="What's the weather in Lyon?"),
            ChatMessage(role="assistant", content=None, additional_kwargs={"tool_calls": [{"id": "1"}]}),
            ChatMessage(role="tool", content="Sunny, 24C", additional_kwargs={"tool_call_id": "1"}),
            ChatMessage(role="assistant", content="It is sunny in Lyon.")]
    memory.put_messages(msgs)
    assert memory.get_all() == msgs
    assert cr.count("alice", "tools") == 2
    got = [m for m in memory.get() if m.role.value != "system"]
    assert got == msgs


def test_condense_plus_context_chat_engine(cr: ChatRecall) -> None:
    memory = _memory(cr, "cpc")
    engine = CondensePlusContextChatEngine.from_defaults(
        retriever=ChatRecallRetriever(cr, "alice", mode="search", k=2), llm=MockLLM(), memory=memory,
        skip_condense=True)
    resp = engine.chat("Remember what broke with ECONNREFUSED?")
    assert texts(resp.source_nodes)[0] == ECONN
    prompt = str(resp)  # MockLLM echoes the messages it was given
    assert "Pinned constraints" in prompt and PIN in prompt and ECONN in prompt
    engine.chat("And which database do we use?")
    assert [m.role.value for m in memory.get_all()] == ["user", "assistant", "user", "assistant"]
    assert cr.count("alice", "cpc") >= 3


class _CountingLLM(MockLLM):
    """MockLLM that counts its completions (the condense step is one)."""

    calls: list[str] = Field(default_factory=list)

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        self.calls.append(prompt)
        return super().complete(prompt, formatted=formatted, **kwargs)


def _condense_plus_context(engine: ChatRecall, session: str) -> tuple[Any, _CountingLLM]:
    llm = _CountingLLM(max_tokens=3)  # short replies: the echoed prompt stays out of the history
    chat = CondensePlusContextChatEngine.from_defaults(
        retriever=ChatRecallRetriever(engine, "alice", session_id=session),
        memory=_memory(engine, session, recall=False), llm=llm)
    return chat, llm


@pytest.mark.parametrize("real", [False, True])
def test_condense_plus_context_with_the_retriever_and_a_history_only_memory(
        real: bool, request: pytest.FixtureRequest) -> None:
    # chat21: with a recalling memory beside the retriever, every prompt held the pin and the memories twice,
    # and the pins' system message made the engine condense even the first message
    engine = request.getfixturevalue("real_cr" if real else "cr")
    chat, llm = _condense_plus_context(engine, f"cpc-once-{real}")
    chat.chat("Remember what broke with ECONNREFUSED?")
    assert len(llm.calls) == 1, "nothing to condense on turn one: one call, the answer"
    assert llm.calls[0].count(PIN) == 1 and llm.calls[0].count(ECONN) == 1, llm.calls[0]
    chat.chat("And which database do we use for the import?")
    assert len(llm.calls) == 3  # a condense step (there is history now), then the answer
    assert llm.calls[-1].count(PIN) == 1, llm.calls[-1]
    memory = chat._memory
    assert [m.role.value for m in memory.get_all()] == ["user", "assistant", "user", "assistant"]
    assert all(m.role.value != "system" for m in memory.get())  # history only


@pytest.mark.parametrize("real", [False, True])
def test_condense_plus_context_answers_small_talk_with_the_llm(real: bool, request: pytest.FixtureRequest) -> None:
    # helper-88 (stop 31): with no pin, every greeting the gate skips gave the retriever no node, and LlamaIndex's
    # synthesizer answered "Empty Response" without calling the LLM. as_context=True returns the context as one
    # node, empty on such a turn, so the LLM is always called.
    engine = request.getfixturevalue("real_cr" if real else "cr")
    session = f"cpc-empty-{real}"
    llm = _CountingLLM(max_tokens=3)
    retriever = ChatRecallRetriever(engine, "bob", session_id=session, as_context=True)
    chat = CondensePlusContextChatEngine.from_defaults(
        retriever=retriever, llm=llm, skip_condense=True,  # the mock LLM would condense the question to noise
        memory=ChatRecallMemory.from_defaults(engine=engine, user_id="bob", session_id=session, recall=False))
    resp = chat.chat("thanks, that's great!")
    assert str(resp) != "Empty Response" and len(llm.calls) == 1, (str(resp), llm.calls)
    assert retriever.last_result is not None and retriever.last_result.route.value == "none"
    assert [n.node.get_content() for n in resp.source_nodes] == [""]
    chat.chat("what's the codename of my cheese project again?")
    assert retriever.last_result is not None and retriever.last_result.route.wants_memory, \
        retriever.last_result.explain()
    assert "Roquefort-42" in llm.calls[-1] and "dated, UTC" in llm.calls[-1], llm.calls[-1]
    # helper-124 (stop 42): last_result.context also holds the recent window, which never reaches this prompt
    # (the history sends those turns); last_context is the block that does
    context = retriever.last_context
    assert context and "Roquefort-42" in context and context in llm.calls[-1], (context, llm.calls[-1])
    assert "Recent conversation" in retriever.last_result.context and "Recent conversation" not in context
    assert ChatRecallRetriever(engine, "bob").last_context is None


@pytest.mark.parametrize("real", [False, True])
def test_the_retriever_leaves_out_what_the_history_shows(real: bool, request: pytest.FixtureRequest) -> None:
    # helper-90 (stop 31): beside a history-only memory, the context node repeated same-session turns the history
    # already sent (older than the engine's recent window of 6 turns, inside the memory's token window)
    engine = request.getfixturevalue("real_cr" if real else "cr")
    session = f"cpc-hist-{real}"
    memory = ChatRecallMemory.from_defaults(engine=engine, user_id="bob", session_id=session, recall=False)
    plain = ChatRecallRetriever(engine, "bob", session_id=session, as_context=True)
    paired = ChatRecallRetriever(engine, "bob", session_id=session, as_context=True, history=memory)
    chat = CondensePlusContextChatEngine.from_defaults(retriever=paired, memory=memory, llm=_CountingLLM(max_tokens=3),
                                                       skip_condense=True)
    chat.chat("My gym locker code is 4417, by the way.")
    for i in range(5):
        chat.chat(f"Small thing number {i}: the weather is grey again today.")
    question = "what's my gym locker code?"
    memory.get(input=question)  # what the engine sends as history for this turn
    assert any("4417" in (m.content or "") for m in memory.get_all())
    shown = plain.retrieve(question)[0].node.get_content()
    assert "4417" in shown, plain.last_result.explain()  # type: ignore[union-attr]  # found, and shown again
    assert "4417" not in paired.retrieve(question)[0].node.get_content()
    # left out of the search itself (core exclude_ids), so the turn still gets its k memories from the rest
    res = paired.last_result
    assert res is not None and not any("4417" in it.text for it in res.items), res.explain()
    assert any("left out: the caller shows them" in n for n in res.notes), res.notes
    with pytest.raises(ConfigError, match="history= needs mode='retrieve'"):
        ChatRecallRetriever(engine, "bob", mode="search", history=memory)
    with pytest.raises(ConfigError, match="history=str is invalid"):
        ChatRecallRetriever(engine, "bob", history="not a memory")  # type: ignore[arg-type]


def test_retriever_as_context_node_and_last_result(cr: ChatRecall) -> None:
    r = ChatRecallRetriever(cr, "alice", as_context=True)
    assert r.last_result is None
    nodes = r.retrieve("Remember what broke with ECONNREFUSED?")
    assert len(nodes) == 1
    node = nodes[0].node
    assert PIN in node.get_content() and ECONN in node.get_content()
    assert node.metadata["route"] == r.last_result.route.value  # type: ignore[union-attr]
    assert node.metadata["item_ids"] == [it.id for it in r.last_result.items]  # type: ignore[union-attr]
    hidden = node.get_content(metadata_mode=MetadataMode.LLM)
    assert "item_ids" not in hidden and "route" not in hidden
    search = ChatRecallRetriever(cr, "alice", mode="search")
    search.retrieve("database")
    assert search.last_result is None
    with pytest.raises(ConfigError, match="as_context=True needs mode='retrieve'"):
        ChatRecallRetriever(cr, "alice", mode="search", as_context=True)


def test_function_agent_uses_memory(cr: ChatRecall) -> None:
    def lookup_weather(city: str = "Lyon") -> str:
        """Weather of a city."""
        return f"Sunny in {city}"

    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(lookup_weather)], llm=llm, system_prompt="Be brief.")
    memory = _memory(cr, "agent")
    before = cr.stats()["counters"].get("routes.gate.memory", 0)

    async def run() -> Any:
        return await agent.run("Remember that cheese project? Also check the weather.", memory=memory)

    result = asyncio.run(run())
    assert str(result) == "Tool calls complete."
    last = list(llm.last_chat_messages or [])
    assert PIN in system_text(last) and CHEESE in system_text(last)
    assert [m.role.value for m in last][-2:] == ["assistant", "tool"] and last[-1].content == "Sunny in Lyon"
    assert [m.role.value for m in memory.get_all()] == ["user", "assistant", "tool", "assistant"]
    assert cr.count("alice", "agent") == 2  # the question and the final answer; no tool chatter
    assert cr.stats()["counters"]["routes.gate.memory"] - before == 1  # one recall per user turn, not per step


def test_react_agent_with_user_insert(cr: ChatRecall) -> None:
    def gen(messages: Any, **kw: Any) -> ChatMessage:
        return ChatMessage(role="assistant", content="Thought: I can answer without tools.\nAnswer: Oui, le fromage.")

    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall(response_generator=gen)  # type: ignore[call-arg]
    memory = _memory(cr, "react", insert="user")

    async def run() -> Any:
        return await ReActAgent(tools=[], llm=llm).run("Remember that cheese project?", memory=memory)

    result = asyncio.run(run())
    assert "Oui, le fromage." in str(result)
    user = [m for m in llm.last_chat_messages or [] if m.role.value == "user"][-1].content or ""
    assert PIN in user and CHEESE in user and user.endswith("Remember that cheese project?")
    assert memory.get_all()[0].content == "Remember that cheese project?"  # stored message untouched


def test_memory_from_defaults_and_errors(cr: ChatRecall) -> None:
    seeded = _memory(cr, "seeded", chat_history=[ChatMessage(role="user", content="Seeded fact about narwhals.")])
    assert cr.count("alice", "seeded") == 1 and len(seeded.get_all()) == 1
    with pytest.raises(ConfigError, match="session_id"):
        ChatRecallMemory.from_defaults(engine=cr, user_id="alice")
    with pytest.raises(ConfigError, match="token_limit=0"):
        _memory(cr, token_limit=0)
    with pytest.raises(ConfigError, match="insert='middle'"):
        _memory(cr, insert="middle")
    with pytest.raises(ConfigError, match="engine="):
        ChatRecallMemory(engine="not an engine", user_id="alice", session_id="s")
    with pytest.raises(ConfigError, match="engine="):
        ChatRecallMemoryBlock(engine=None, user_id="alice")


def test_memory_async(cr: ChatRecall) -> None:
    memory = _memory(cr, "async")

    async def run() -> list[ChatMessage]:
        await memory.aput(ChatMessage(role="user", content="Remember that cheese project?"))
        return await memory.aget()

    out = asyncio.run(run())
    assert CHEESE in system_text(out) and out[-1].content == "Remember that cheese project?"


@pytest.mark.model
def test_memory_real_chroma_and_model(real_cr: ChatRecall) -> None:
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=3)
    chat = SimpleChatEngine.from_defaults(llm=llm, memory=ChatRecallMemory.from_defaults(
        engine=real_cr, user_id="alice", session_id="real-mem"))
    chat.chat("Do you remember what my sister is planning?")
    system = system_text(llm.last_chat_messages)
    assert MARIE in system and PIN in system and BOB not in system


def test_chat_turn_keeps_its_messages_while_the_store_is_down(clock: ManualClock,
                                                              closing: Callable[[Any], Any]) -> None:
    # the chat engine puts the user's message before calling the LLM: it raised StoreUnavailableError there
    store = DownStore()
    cr = closing(ChatRecall(store=store, embedder=HashEmbedder(), clock=clock))
    _seed(cr, clock.t)
    memory = _memory(cr, "trip")
    chat = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)  # MockLLM echoes: distinct replies
    chat.chat("We fly to Lisbon on the 14th of March.")
    store.down = True
    clock.advance(60)
    assert "Memmo Alfama" in str(chat.chat("The hotel is the Memmo Alfama."))
    assert cr.pending_turns("alice") == 2
    assert memory.last_result is not None and memory.last_result.degraded
    block = ChatRecallMemoryBlock(engine=cr, user_id="alice", session_id="trip")
    asyncio.run(block._aput([ChatMessage(role="user", content="Block message during the outage.")]))
    assert cr.pending_turns("alice") == 3
    store.down = False
    clock.advance(60)
    chat.chat("Which hotel did I book?")
    assert cr.pending_turns("alice") == 0
    users = [r.text for r in cr.history("alice", "trip") if r.role == "user"]
    assert users == ["We fly to Lisbon on the 14th of March.", "The hotel is the Memmo Alfama.",
                     "Block message during the outage.", "Which hotel did I book?"]


# ====================================================================== memory block for Memory
def test_memory_block_recalls_into_memory(cr: ChatRecall) -> None:
    block = ChatRecallMemoryBlock(engine=cr, user_id="alice")
    memory = Memory.from_defaults(session_id="blk", memory_blocks=[block])
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=3)
    chat = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    chat.chat("Remember that cheese project?")
    system = system_text(llm.last_chat_messages)
    assert "<chatrecall>" in system and PIN in system and CHEESE in system and BOB not in system
    assert block.last_result is not None and block.last_result.route.value == "memory"
    chat.chat("How are you?")
    system = system_text(llm.last_chat_messages)
    assert PIN in system and CHEESE not in system


def test_memory_block_stores_flushed_messages(cr: ChatRecall) -> None:
    block = ChatRecallMemoryBlock(engine=cr, user_id="alice")
    memory = Memory.from_defaults(session_id="fifo", memory_blocks=[block], token_limit=120,
                                  chat_history_token_ratio=0.5, token_flush_size=30)
    chat = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=3), memory=memory)
    for i in range(8):
        chat.chat(f"Note {i}: the backup bucket for region r{i} is called vault-{i}-store.")
    assert cr.count("alice", "fifo") > 0
    active = [m for m in memory.get() if m.role.value != "system"]
    assert len(active) < 16  # the FIFO let go of some
    recalled = [r.text for r in cr.search("backup bucket vault-0-store", user_id="alice", session_id="fifo")]
    assert any("vault-0-store" in t for t in recalled)


def test_memory_block_async_get(cr: ChatRecall) -> None:
    block = ChatRecallMemoryBlock(engine=cr, user_id="alice", session_id="s2")

    async def run() -> str:
        return await block.aget([ChatMessage(role="user", content="What did I say about ECONNREFUSED?")])

    text = asyncio.run(run())
    assert ECONN in text or "ECONNREFUSED" in text
    assert asyncio.run(block.aget([])) .startswith("## Pinned constraints")


@pytest.mark.model
def test_memory_block_real_chroma_and_model(real_cr: ChatRecall) -> None:
    block = ChatRecallMemoryBlock(engine=real_cr, user_id="alice")
    memory = Memory.from_defaults(session_id="real-blk", memory_blocks=[block])
    memory.put(ChatMessage(role="user", content="Remember the error the import script hit?"))
    system = system_text(memory.get())
    assert ECONN in system and PIN in system


# ====================================================================== postprocessor
def _nodes(*pairs: tuple[str, str], score: float = 0.5) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(id_=i, text=t), score=score) for i, t in pairs]


def test_postprocessor_reorders_by_keyword_and_entity_and_drops_duplicates() -> None:
    nodes = _nodes(
        ("weather", "The weather in Lyon was sunny all week."),
        ("dup1", "The import script crashes with ECONNREFUSED when it talks to the database."),
        ("dup2", "The import script crashes with ECONNREFUSED when it talks to the database!"),
        ("cheese", "Comté and Beaufort are mountain cheeses."),
    )
    before = [n.node.metadata.copy() for n in nodes]
    out = ChatRecallPostprocessor().postprocess_nodes(nodes, query_str="why did the import script hit ECONNREFUSED?")
    assert [n.node.node_id for n in out][0] == "dup1"
    assert "dup2" not in [n.node.node_id for n in out]
    info = out[0].node.metadata["chatrecall"]
    assert info["components"]["keyword"] == pytest.approx(1.0) and info["components"]["entity"] > 0
    assert info["upstream_score"] == 0.5 and out[0].score == pytest.approx(info["score"])
    assert "chatrecall" not in out[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert [n.node.metadata for n in nodes] == before  # inputs untouched


def test_postprocessor_budget_top_n_and_recency() -> None:
    now = time.time()  # the postprocessor ages nodes against the wall clock
    nodes = [NodeWithScore(node=TextNode(id_=f"n{i}", text=f"release notes {i}: " + "change " * 10,
                                         metadata={"timestamp": now - i * DAY}), score=0.5) for i in range(6)]
    out = ChatRecallPostprocessor(budget_tokens=30).postprocess_nodes(nodes, query_str="release notes")
    assert out and sum(n.node.metadata["chatrecall"]["tokens"] for n in out) <= 30
    assert len(ChatRecallPostprocessor(top_n=2, diversity_threshold=1.0).postprocess_nodes(
        nodes, query_str="release notes")) == 2
    newest = ChatRecallPostprocessor(weights={"recency": 1.0}, diversity_threshold=1.0).postprocess_nodes(
        list(reversed(nodes)), query_str="release notes")
    assert [n.node.node_id for n in newest] == [f"n{i}" for i in range(6)]


def test_postprocessor_ages_nodes_on_the_clock_it_is_given() -> None:
    """A new user dated their sessions with a ManualClock: the postprocessor aged nodes against the wall clock
    (every recency about 3e-7). ``clock=`` takes the engine's clock."""
    clock = ManualClock(1_780_000_000.0)
    nodes = [NodeWithScore(node=TextNode(id_=f"n{i}", text=f"hive notes {i}", metadata={"timestamp": clock.t - i * DAY}),
                           score=0.5) for i in range(3)]
    pp = ChatRecallPostprocessor(weights={"recency": 1.0}, diversity_threshold=1.0, clock=clock)
    rec = [n.node.metadata["chatrecall"]["components"]["recency"] for n in pp.postprocess_nodes(nodes, query_str="hive")]
    assert rec[0] == pytest.approx(1.0) and rec[1] == pytest.approx(0.5 ** (1 / 7), rel=1e-3)
    wall = ChatRecallPostprocessor(weights={"recency": 1.0}, diversity_threshold=1.0)
    assert max(n.node.metadata["chatrecall"]["components"]["recency"]
               for n in wall.postprocess_nodes(nodes, query_str="hive")) < 0.01  # without it: the system clock
    with pytest.raises(ConfigError, match="clock=3 is invalid"):
        ChatRecallPostprocessor(clock=3)


def test_postprocessor_in_vector_index_query_engine() -> None:
    docs = [Document(text=t, id_=i) for i, t in [
        ("w", "The weather in Lyon was sunny."), ("db", "Billing data lives in Postgres."),
        ("c", "Comté is a cheese from Jura."), ("e", "ECONNREFUSED means nothing listens on the port.")]]
    index = VectorStoreIndex.from_documents(docs, embed_model=MockEmbedding(embed_dim=8))
    # MockEmbedding scores every node the same: the order below comes from chatrecall's evidence.
    qe = index.as_query_engine(llm=MockLLM(), similarity_top_k=4, node_postprocessors=[ChatRecallPostprocessor(top_n=2)])
    resp = qe.query("where does billing data live?")
    assert len(resp.source_nodes) == 2
    assert resp.source_nodes[0].node.ref_doc_id == "db"
    assert "Billing data lives in Postgres." in str(resp)

    async def run() -> list[NodeWithScore]:
        nodes = await index.as_retriever(similarity_top_k=4).aretrieve("what does ECONNREFUSED mean?")
        return await ChatRecallPostprocessor(top_n=1).apostprocess_nodes(
            nodes, query_bundle=QueryBundle("what does ECONNREFUSED mean?"))

    assert asyncio.run(run())[0].node.ref_doc_id == "e"


def test_postprocessor_errors() -> None:
    pp = ChatRecallPostprocessor()
    with pytest.raises(InvalidInputError, match="query"):
        pp.postprocess_nodes(_nodes(("a", "x")))
    assert pp.postprocess_nodes([], query_str="q") == []
    with pytest.raises(ConfigError, match="unknown component"):
        ChatRecallPostprocessor(weights={"vibes": 1.0})
    with pytest.raises(InvalidInputError, match="top_n=0"):
        ChatRecallPostprocessor(top_n=0)
    with pytest.raises(ConfigError, match="embedder="):
        ChatRecallPostprocessor(embedder="minilm")
    bad = [NodeWithScore(node=TextNode(id_="a", text="x", metadata={"timestamp": "yesterday"}), score=1.0)]
    with pytest.raises(InvalidInputError, match="'a'.*timestamp"):
        pp.postprocess_nodes(bad, query_str="q")
    iso = [NodeWithScore(node=TextNode(id_="a", text="x", metadata={"timestamp": "2024-01-02T03:04:05"}), score=1.0)]
    assert pp.postprocess_nodes(iso, query_str="x")[0].node.metadata["chatrecall"]["components"]["recency"] >= 0


@pytest.mark.model
def test_postprocessor_real_model_over_real_index(st_embedder: Any, real_cr: ChatRecall) -> None:
    docs = [Document(text=t, id_=i) for i, t in [
        ("w", "It was sunny in Lyon all week."), ("db", "We run PostgreSQL in production, not SQLite."),
        ("c", "Comté pairs well with a dry white wine."), ("k", "Kubernetes schedules the billing pods.")]]
    index = VectorStoreIndex.from_documents(docs, embed_model=ChatRecallEmbedding(embedder=st_embedder))
    nodes = index.as_retriever(similarity_top_k=4).retrieve("Which database engine do we use?")
    assert nodes[0].node.ref_doc_id == "db"  # the wrapped real model drives LlamaIndex's own index
    shuffled = [NodeWithScore(node=n.node, score=0.5) for n in reversed(nodes)]
    out = ChatRecallPostprocessor(embedder=st_embedder, top_n=2).postprocess_nodes(
        shuffled, query_str="Which database engine do we use?")
    assert out[0].node.ref_doc_id == "db" and out[0].node.metadata["chatrecall"]["components"]["relevance"] > 0.3
    # Nodes from chatrecall's own retriever over real Chroma, re-ranked with a budget.
    got = ChatRecallRetriever(real_cr, "alice", mode="search", k=5).retrieve("cheese project table")
    kept = ChatRecallPostprocessor(embedder=st_embedder, budget_tokens=25).postprocess_nodes(
        got, query_str="cheese project table")
    assert kept and sum(n.node.metadata["chatrecall"]["tokens"] for n in kept) <= 25
    assert texts(kept)[0] in (TABLE, CHEESE)


# ====================================================================== embeddings
def test_chatrecall_embedding_in_vector_index() -> None:
    emb = ChatRecallEmbedding(embedder=HashEmbedder(dim=64))
    docs = [Document(text="helm chart deploy notes", id_="helm"), Document(text="cheese tasting notes", id_="cheese")]
    index = VectorStoreIndex.from_documents(docs, embed_model=emb)
    assert index.as_retriever(similarity_top_k=1).retrieve("helm chart")[0].node.ref_doc_id == "helm"
    assert asyncio.run(emb.aget_query_embedding("x")) == emb.get_query_embedding("x")
    with pytest.raises(ConfigError, match="embedder="):
        ChatRecallEmbedding(embedder="nope")


def test_llamaindex_embedder_as_chatrecall_embedder(make_engine: Callable[..., ChatRecall]) -> None:
    emb = LlamaIndexEmbedder(MockEmbedding(embed_dim=8))
    assert emb.dim == 8
    mat = emb.embed_documents(["a", "b"])
    assert mat.shape == (2, 8) and abs(float((mat**2).sum(axis=1)[0]) - 1.0) < 1e-5
    engine = make_engine(embedder=emb)
    engine.add("stored through a LlamaIndex embedding", user_id="u", session_id="s")
    assert engine.search("stored", user_id="u")[0].text == "stored through a LlamaIndex embedding"
    with pytest.raises(ConfigError, match="embedding="):
        LlamaIndexEmbedder("nope")  # type: ignore[arg-type]


def test_import_guard_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_index.core", None)
    monkeypatch.delitem(sys.modules, "chatrecall.adapters.llamaindex")
    try:
        with pytest.raises(ImportError, match=r"pip install 'chatrecall\[llamaindex\]'"):
            importlib.import_module("chatrecall.adapters.llamaindex")
    finally:
        monkeypatch.undo()
        importlib.import_module("chatrecall.adapters.llamaindex")



@pytest.mark.model
def test_a_message_put_before_get_does_not_route_its_own_words_to_memory(real_engine: ChatRecall) -> None:
    """A new user's chat: LlamaIndex puts the user's message, then gets the prompt. "what's the capital of
    Slovenia?" was routed to memory too ("query names 'slovenia' from memory"): the only memory naming Slovenia
    was the message itself, just stored. The message's own stored copy no longer counts."""
    cr = real_engine
    cr.add_documents([{"id": "winter", "text": "Feed a 2:1 sugar syrup in autumn so the colony can store it "
                                               "before the cold sets in."}])
    memory = ChatRecallMemory.from_defaults(engine=cr, user_id="priya", session_id="s2")
    memory.put(ChatMessage(role="user", content="I started beekeeping this spring, two hives on my allotment."))
    memory.put(ChatMessage(role="assistant", content="Welcome to beekeeping!"))
    memory.put(ChatMessage(role="user", content="what's the capital of Slovenia?"))
    memory.get()
    res = memory.last_result
    assert res is not None
    assert not any("from memory: searching memory too" in n for n in res.notes), res.explain()
    assert not res.route.wants_memory, res.explain()
    # a name the user's older memories hold still brings memory in (the rule is kept, only the message is left out)
    memory2 = ChatRecallMemory.from_defaults(engine=cr, user_id="priya", session_id="s3")
    memory2.put(ChatMessage(role="user", content="what's the capital of Slovenia?"))
    memory2.get()
    res2 = memory2.last_result
    assert res2 is not None and any("from memory: searching memory too" in n for n in res2.notes), res2.explain()
