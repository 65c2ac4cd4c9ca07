"""LangChain adapter: retriever, classic memory, agent middleware, chat history, pins.

Real LangChain classes throughout (no mocks of the framework); the engine runs
on the fakes for speed, and each component also has a test on real Chroma and
the real embedding model (marked ``model``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain.agents")
pytest.importorskip("langchain_classic")

from _stores import DownStore  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain_classic.chains import ConversationChain  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder, PromptTemplate  # noqa: E402
from langchain_core.runnables import RunnablePassthrough  # noqa: E402
from langchain_core.runnables.history import RunnableWithMessageHistory  # noqa: E402
from pydantic import Field  # noqa: E402

from chatrecall import ChatRecall, ConfigError, InvalidInputError, NotFoundError, PinConfig  # noqa: E402
from chatrecall.adapters.langchain import (  # noqa: E402
    ChatRecallChatMessageHistory,
    ChatRecallMemory,
    ChatRecallMiddleware,
    ChatRecallRetriever,
    PinCallbackHandler,
    make_pin_tools,
    message_to_turn,
    record_to_message,
)
from chatrecall.core import apply_pin_command, parse_pin_command  # noqa: E402
from chatrecall.testing import fake_engine  # noqa: E402

BILLING_Q = "Remember which database we use for billing?"


# ====================================================================== helpers
class RecordingChatModel(GenericFakeChatModel):
    """GenericFakeChatModel that records every prompt and accepts tools (for create_agent)."""

    calls: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        self.calls.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kw)

    def system_of(self, call: int) -> str:
        first = self.calls[call][0]
        return first.text if isinstance(first, SystemMessage) else ""


def model(*replies: AIMessage | str) -> RecordingChatModel:
    return RecordingChatModel(messages=iter(replies))


def pin_call(text: str, call_id: str = "c1") -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "pin_constraint", "args": {"text": text}, "id": call_id}])


def unpin_call(pin: str, call_id: str = "c2") -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "unpin_constraint", "args": {"pin": pin}, "id": call_id}])


def user(text: str) -> Any:
    return {"messages": [{"role": "user", "content": text}]}


def seed(cr: ChatRecall) -> None:
    cr.add_many([
        {"text": "We use Postgres for the billing service", "user_id": "u1", "session_id": "old"},
        {"text": "Noted: billing runs on Postgres.", "user_id": "u1", "session_id": "old", "role": "assistant"},
        {"text": "The frontend is written in Svelte", "user_id": "u1", "session_id": "old"},
        {"text": "My cat is called Miso", "user_id": "u1", "session_id": "old"},
        {"text": "Deploys go through Helm charts", "user_id": "u1", "session_id": "old"},
        {"text": "We use MongoDB for the billing service", "user_id": "u2", "session_id": "other"},
    ])


@pytest.fixture
def cr() -> ChatRecall:
    engine = fake_engine()
    seed(engine)
    return engine


@pytest.fixture
def real_cr(embedded_store: Any, st_embedder: Any) -> Iterator[ChatRecall]:
    engine = ChatRecall(store=embedded_store, embedder=st_embedder)
    seed(engine)
    try:
        yield engine
    finally:
        engine.close()


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.custom: list[tuple[str, Any]] = []
        self.prompts: list[list[BaseMessage]] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.custom.append((name, data))

    def on_chat_model_start(self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.prompts.extend(messages)


# ====================================================================== retriever
def test_retriever_returns_documents_with_scores_and_why(cr: ChatRecall) -> None:
    docs = ChatRecallRetriever(engine=cr, user_id="u1", k=3).invoke("which database for billing?")
    assert len(docs) == 3 and all(isinstance(d, Document) for d in docs)
    assert "Postgres" in docs[0].page_content
    md = docs[0].metadata
    assert md["id"] == docs[0].id and md["source"] == "memory" and md["route"] == "memory"
    assert md["user_id"] == "u1" and md["session_id"] == "old"
    assert set(md["components"]) >= {"relevance", "keyword"} and md["why"]
    assert md["score"] >= docs[1].metadata["score"] >= docs[2].metadata["score"]
    expected = [i.id for i in cr.search("which database for billing?", user_id="u1", k=3)]
    assert [d.id for d in docs] == expected  # the adapter converts, never re-ranks


def test_retriever_never_returns_another_users_memory(cr: ChatRecall) -> None:
    docs = ChatRecallRetriever(engine=cr, user_id="u1", k=10).invoke("We use MongoDB for the billing service")
    assert docs and all(d.metadata["user_id"] == "u1" for d in docs)
    assert not any("MongoDB" in d.page_content for d in docs)
    other = ChatRecallRetriever(engine=cr, user_id="u2", k=10).invoke("billing database")
    assert [d.page_content for d in other] == ["We use MongoDB for the billing service"]


def test_retriever_k_at_construction_and_per_call(cr: ChatRecall) -> None:
    retriever = ChatRecallRetriever(engine=cr, user_id="u1", k=2)
    assert len(retriever.invoke("billing")) == 2
    assert len(retriever.invoke("billing", k=1)) == 1
    assert len(retriever.invoke("billing", k=4)) == 4
    assert len(retriever.batch(["billing", "svelte"], k=1)) == 2


def test_retriever_session_filter(cr: ChatRecall) -> None:
    cr.add("Billing invoices are due on the 5th", user_id="u1", session_id="new")
    docs = ChatRecallRetriever(engine=cr, user_id="u1", session_id="new", k=4).invoke("billing")
    assert [d.page_content for d in docs] == ["Billing invoices are due on the 5th"]


def test_retriever_retrieve_mode_is_gated_and_includes_corpus(cr: ChatRecall) -> None:
    retriever = ChatRecallRetriever(engine=cr, user_id="u1", mode="retrieve", k=3)
    assert retriever.invoke("thanks, that's all") == []  # the gate says no lookup
    docs = retriever.invoke(BILLING_Q)
    assert docs and "Postgres" in docs[0].page_content
    assert docs[0].metadata["route"] == "memory" and docs[0].metadata["reasons"]
    cr.add_documents([{"text": "The refund policy allows returns within 30 days of purchase.", "title": "Refunds"}])
    docs = retriever.invoke("According to the docs, what is the refund policy?")
    # the passage is among the documents (on the hash embedder the title, searched since stop 43's T1, moves it
    # under two memories; what this test checks is that retrieve mode brings the corpus)
    passages = [d for d in docs if d.metadata["source"] == "corpus"]
    assert passages and passages[0].metadata["title"] == "Refunds"
    assert passages[0].metadata["route"] in ("corpus", "both")


def test_retriever_async_matches_sync(cr: ChatRecall) -> None:
    retriever = ChatRecallRetriever(engine=cr, user_id="u1", k=3)
    sync = retriever.invoke("billing database")
    docs = asyncio.run(retriever.ainvoke("billing database", k=2))
    assert [d.id for d in docs] == [d.id for d in sync[:2]]


def test_retriever_in_an_lcel_chain(cr: ChatRecall) -> None:
    retriever = ChatRecallRetriever(engine=cr, user_id="u1", k=2)
    prompt = ChatPromptTemplate.from_messages([("system", "Context:\n{context}"), ("human", "{question}")])
    llm = model("Postgres.")

    def format_docs(docs: list[Document]) -> str:
        return "\n".join(d.page_content for d in docs)

    chain = {"context": retriever | format_docs, "question": RunnablePassthrough()} | prompt | llm | StrOutputParser()
    assert chain.invoke("which database for billing?") == "Postgres."
    assert "We use Postgres for the billing service" in llm.system_of(0)
    assert "MongoDB" not in llm.system_of(0)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"user_id": ""}, "user_id"),
        ({"user_id": 7}, "user_id"),
        ({}, r"needs user_id: whose memories"),
        ({"user_id": "u1", "k": 0}, "k=0"),
        ({"user_id": "u1", "k": "3"}, "k='3'"),
        ({"user_id": "u1", "k": None}, "k=None"),
        ({"user_id": "u1", "mode": "magic"}, "mode='magic'"),
        ({"user_id": "u1", "strategy": "psychic"}, "psychic"),
        ({"user_id": "u1", "session_id": ""}, "session_id"),
        ({"user_id": "u1", "budget_tokens": -1}, "budget_tokens"),
    ],
)
def test_retriever_bad_construction_raises_chatrecall_errors(cr: ChatRecall, kwargs: dict[str, Any],
                                                             fragment: str) -> None:
    with pytest.raises(InvalidInputError, match=fragment):
        ChatRecallRetriever(engine=cr, **kwargs)


def test_the_engine_may_come_first_as_in_the_middleware(cr: ChatRecall) -> None:
    # helper-122 (stop 41): ChatRecallRetriever(cr, user_id=...) met pydantic's bare "takes 1 positional argument"
    seed(cr)
    retriever = ChatRecallRetriever(cr, user_id="u1", k=2)
    assert retriever.engine is cr and retriever.k == 2
    assert retriever.invoke("billing") == ChatRecallRetriever(engine=cr, user_id="u1", k=2).invoke("billing")
    assert ChatRecallMemory(cr, user_id="u1", session_id="s1").engine is cr
    with pytest.raises(ConfigError, match="passed twice"):
        ChatRecallRetriever(cr, engine=cr, user_id="u1")
    with pytest.raises(ConfigError, match="engine='nope'"):
        ChatRecallRetriever("nope", user_id="u1")


def test_a_flag_that_is_not_a_bool_fails_at_once_naming_it(cr: ChatRecall) -> None:
    # helper-124 (stop 42): a string flag was read as true whatever it said
    from chatrecall.adapters.langchain import ChatRecallMiddleware, PinCallbackHandler

    with pytest.raises(ConfigError, match=r"store_turns='no' is invalid \(a str\): pass True or False"):
        ChatRecallMiddleware(cr, user_id="u1", store_turns="no")
    with pytest.raises(ConfigError, match=r"raise_error=1 is invalid \(a int\): pass True or False"):
        PinCallbackHandler(cr, user_id="u1", raise_error=1)


def test_retriever_bad_calls_raise_chatrecall_errors(cr: ChatRecall) -> None:
    with pytest.raises(ConfigError, match="engine='not an engine'"):
        ChatRecallRetriever(engine="not an engine", user_id="u1")
    retriever = ChatRecallRetriever(engine=cr, user_id="u1")
    with pytest.raises(InvalidInputError, match="k=0"):
        retriever.invoke("billing", k=0)
    with pytest.raises(InvalidInputError, match="unknown argument"):
        retriever.invoke("billing", top_k=2)
    with pytest.raises(InvalidInputError, match="query"):
        retriever.invoke("   ")


@pytest.mark.model
def test_retriever_real_chroma_and_model_recall_paraphrase_and_isolation(real_cr: ChatRecall) -> None:
    docs = ChatRecallRetriever(engine=real_cr, user_id="u1", k=2).invoke("what did we say about our payments datastore?")
    assert "Postgres" in docs[0].page_content or "Postgres" in docs[1].page_content
    assert all(d.metadata["user_id"] == "u1" for d in docs)
    many = ChatRecallRetriever(engine=real_cr, user_id="u1", k=20).invoke("MongoDB billing")
    assert not any("MongoDB" in d.page_content for d in many)
    docs = asyncio.run(ChatRecallRetriever(engine=real_cr, user_id="u1", k=1).ainvoke("pet name"))
    assert docs[0].page_content == "My cat is called Miso"


# ====================================================================== classic memory
def test_memory_loads_recall_and_saves_both_turns(cr: ChatRecall) -> None:
    memory = ChatRecallMemory(engine=cr, user_id="u1", session_id="s1", route_key="route")
    assert memory.memory_variables == ["history", "route"]
    out = memory.load_memory_variables({"input": BILLING_Q})
    assert "We use Postgres for the billing service" in out["history"] and out["route"] == "memory"
    assert "MongoDB" not in out["history"]
    assert memory.last_result is not None and memory.last_result.memories
    memory.save_context({"input": "We also use Redis for sessions"}, {"response": AIMessage("Noted, Redis.")})
    records = ChatRecallChatMessageHistory(cr, user_id="u1", session_id="s1").records()
    assert [(r.role, r.text) for r in records] == [("user", "We also use Redis for sessions"),
                                                   ("assistant", "Noted, Redis.")]
    assert "We also use Redis for sessions" in memory.load_memory_variables({"input": "ok"})["history"]


def test_memory_in_conversation_chain_injects_memory_and_pins(cr: ChatRecall) -> None:
    cr.pin("Answer in one sentence", user_id="u1")
    memory = ChatRecallMemory(engine=cr, user_id="u1", session_id="s1")
    prompt = PromptTemplate.from_template("Context:\n{history}\n\nUser: {input}\nAI:")
    events = Events()
    chain = ConversationChain(llm=model("Postgres.", "Svelte."), memory=memory, prompt=prompt)
    out = chain.invoke({"input": BILLING_Q}, config={"callbacks": [events]})
    assert out["response"] == "Postgres."
    sent = events.prompts[0][0].text
    assert "Answer in one sentence" in sent and "We use Postgres for the billing service" in sent
    chain.invoke({"input": "And which framework is the frontend in, remember?"}, config={"callbacks": [events]})
    second = events.prompts[1][0].text
    assert f"user: {BILLING_Q}" in second and "assistant: Postgres." in second  # recent window
    assert cr.count("u1", "s1") == 4


def test_memory_clear_forgets_only_its_session(cr: ChatRecall) -> None:
    memory = ChatRecallMemory(engine=cr, user_id="u1", session_id="s1")
    memory.clear()  # nothing stored yet: no error
    memory.save_context({"input": "hello there"}, {"output": "hi!"})
    assert cr.count("u1", "s1") == 2
    memory.clear()
    assert cr.count("u1", "s1") == 0 and cr.count("u1", "old") == 5


def test_memory_bad_input_raises_chatrecall_errors(cr: ChatRecall) -> None:
    with pytest.raises(InvalidInputError, match="session_id"):
        ChatRecallMemory(engine=cr, user_id="u1", session_id="")
    memory = ChatRecallMemory(engine=cr, user_id="u1", session_id="s1")
    with pytest.raises(InvalidInputError, match="input_key"):
        memory.load_memory_variables({"a": "x", "b": "y"})
    with pytest.raises(InvalidInputError, match="int"):
        memory.load_memory_variables({"input": 3})
    with pytest.raises(InvalidInputError, match="output_key"):
        memory.save_context({"input": "x"}, {"a": "1", "b": "2"})
    keyed = ChatRecallMemory(engine=cr, user_id="u1", session_id="s1", input_key="q", output_key="a")
    with pytest.raises(InvalidInputError, match="input_key='q'"):
        keyed.load_memory_variables({"input": "x"})
    assert cr.count("u1", "s1") == 0


@pytest.mark.model
def test_memory_real_chroma_and_model(real_cr: ChatRecall) -> None:
    memory = ChatRecallMemory(engine=real_cr, user_id="u1", session_id="s1")
    out = memory.load_memory_variables({"input": "Remind me, what did we pick for the billing database?"})
    assert "Postgres" in out["history"] and "MongoDB" not in out["history"]
    memory.save_context({"input": "Our staging cluster is called Orion"}, {"output": "Orion, noted."})
    assert real_cr.count("u1", "s1") == 2


# ====================================================================== agent middleware
def test_middleware_injects_recall_and_stores_turns_after_answer(cr: ChatRecall) -> None:
    llm = model("You use Postgres.")
    events = Events()
    agent = create_agent(llm, middleware=[ChatRecallMiddleware(cr, user_id="u1", session_id="s1")],
                         system_prompt="You are terse.")
    out = agent.invoke(user(BILLING_Q), config={"callbacks": [events]})
    system = llm.system_of(0)
    assert system.startswith("You are terse.") and "We use Postgres for the billing service" in system
    assert "MongoDB" not in system
    assert [m.type for m in llm.calls[0]] == ["system", "human"]  # history untouched, one system message
    state = out["chatrecall"]
    assert state["route"] == "memory" and state["reasons"]
    # the reasons read as the result's own explain() shows them (helper-109 saw two wordings)
    assert all(r in cr.retrieve(BILLING_Q, user_id="u1", session_id="s1").gate.explain() for r in state["reasons"])
    assert state["confidence"] == round(state["confidence"], 4), state["confidence"]
    assert any("Postgres" in i["text"] for i in state["items"])
    assert [(r.role, r.text) for r in ChatRecallChatMessageHistory(cr, user_id="u1", session_id="s1").records()] == [
        ("user", BILLING_Q), ("assistant", "You use Postgres.")]
    assert state["stored"] and len(state["stored"]) == 2
    names = [n for n, _ in events.custom]
    assert names == ["chatrecall_injected"] and events.custom[0][1]["items"] == state["items"]


def test_middleware_pin_tool_pin_present_next_call_and_next_turn_then_gone(cr: ChatRecall) -> None:
    llm = model(pin_call("Always answer in metric units"), "Pinned.", "It is 5 km.",
                unpin_call("metric"), "Unpinned.", "It is 3 miles.")
    agent = create_agent(llm, tools=make_pin_tools(cr, "u1"),
                         middleware=[ChatRecallMiddleware(cr, user_id="u1", session_id="s1")])
    out = agent.invoke(user("Please always use metric units from now on"))
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    assert "Pinned: 'Always answer in metric units'" in out["messages"][2].text
    assert "Always answer in metric units" not in llm.system_of(0)
    assert "Always answer in metric units" in llm.system_of(1)  # right after the tool call
    out = agent.invoke(user("How far is the station?"))
    assert "## Pinned constraints" in llm.system_of(2) and "Always answer in metric units" in llm.system_of(2)
    assert out["chatrecall"]["pins"][0]["text"] == "Always answer in metric units"
    agent.invoke(user("Forget the metric rule"))
    agent.invoke(user("How far is the lake?"))
    assert "## Pinned constraints" not in llm.system_of(5) and "Always answer in metric units" not in llm.system_of(5)
    assert cr.pins("u1") == []
    stored = [r.text for r in ChatRecallChatMessageHistory(cr, user_id="u1", session_id="s1").records()]
    assert "Pinned." in stored and "" not in stored  # tool-call-only AI messages are not stored


def test_pin_tools_act_for_the_runs_user(cr: ChatRecall) -> None:
    # helper-91 (stop 31): the README's agent served every user through the run's context, but its pin tools were
    # built for "u1", so Bob's pin was stored as u1's. Unbound tools follow the run's user, like the middleware.
    llm = model(pin_call("Always answer in metric units"), "Pinned.", pin_call("Reply in French", "c3"), "Oui.")
    agent = create_agent(llm, tools=make_pin_tools(cr), middleware=[ChatRecallMiddleware(cr)])
    out = agent.invoke(user("Please always use metric units"), context={"user_id": "bob", "session_id": "b1"})
    assert "Pinned: 'Always answer in metric units'" in out["messages"][2].text
    assert [p.text for p in cr.pins("bob")] == ["Always answer in metric units"] and cr.pins("u1") == []
    agent.invoke(user("Reply in French from now on"), config={"configurable": {"user_id": "carol", "thread_id": "c"}})
    assert [p.text for p in cr.pins("carol")] == ["Reply in French"]
    assert [p.text for p in cr.pins("bob")] == ["Always answer in metric units"]


def _pin_in_one_thread_unpin_in_another(engine: ChatRecall) -> RecordingChatModel:
    from langgraph.checkpoint.memory import InMemorySaver

    llm = model(pin_call("Always answer in metric units"), "Pinned.", "About 3 km.",
                unpin_call("metric"), "Done.", "About 2 miles.")
    agent = create_agent(llm, tools=make_pin_tools(engine), middleware=[ChatRecallMiddleware(engine)],
                         checkpointer=InMemorySaver())
    agent.invoke(user("can you always answer in metric please"), {"configurable": {"user_id": "jo", "thread_id": "s2"}})
    agent.invoke(user("how far is the station?"), {"configurable": {"user_id": "jo", "thread_id": "s3"}})
    agent.invoke(user("you can drop the metric thing now"), {"configurable": {"user_id": "jo", "thread_id": "s4"}})
    agent.invoke(user("how far is the lake?"), {"configurable": {"user_id": "jo", "thread_id": "s4"}})
    return llm


def test_a_pin_made_by_the_tool_applies_in_every_thread_and_unpins_from_any(cr: ChatRecall) -> None:
    # helper-96 (stop 33): the README's agent with a checkpointer pinned "always answer in metric" under the
    # thread it was said in; the next conversation had no pin, and its unpin said "current pins: none".
    llm = _pin_in_one_thread_unpin_in_another(cr)
    assert "Always answer in metric units" in llm.system_of(2)  # another thread, the pin applies
    assert "Unpinned: 'Always answer in metric units'" in llm.calls[4][-1].text
    assert cr.pins("jo") == [] and "Always answer in metric units" not in llm.system_of(5)


def test_pin_tools_scoped_to_the_session_on_request(cr: ChatRecall) -> None:
    llm = model(pin_call("Reply in French"), "D'accord.", unpin_call("french"), "Done.")
    agent = create_agent(llm, tools=make_pin_tools(cr, scope="session"), middleware=[ChatRecallMiddleware(cr)])
    agent.invoke(user("reply in french in this chat"), {"configurable": {"user_id": "jo", "thread_id": "t1"}})
    assert [(p.text, p.session_id) for p in cr.pins("jo")] == [("Reply in French", "t1")]
    assert cr.pins("jo", "t2") == []
    out = agent.invoke(user("stop the french"), {"configurable": {"user_id": "jo", "thread_id": "t2"}})
    assert "Unpinned: 'Reply in French'" in out["messages"][-2].text and cr.pins("jo") == []
    with pytest.raises(InvalidInputError, match="scope='thread'"):
        make_pin_tools(cr, scope="thread")


def test_unpin_names_pins_of_other_sessions_when_nothing_matches(cr: ChatRecall) -> None:
    cr.pin("Use metric units", user_id="u9", session_id="a")
    with pytest.raises(NotFoundError, match=r"'Use metric units' \(session 'a'\)"):
        apply_pin_command(cr, parse_pin_command("/unpin french"), user_id="u9", session_id="b")
    assert apply_pin_command(cr, parse_pin_command("/unpin metric"), user_id="u9", session_id="b").message == \
        "Unpinned: 'Use metric units'"


@pytest.mark.model
def test_a_pin_made_by_the_tool_applies_in_every_thread_real_chroma_and_model(real_cr: ChatRecall) -> None:
    llm = _pin_in_one_thread_unpin_in_another(real_cr)
    assert "Always answer in metric units" in llm.system_of(2)
    assert real_cr.pins("jo") == [] and "Always answer in metric units" not in llm.system_of(5)


KM_ASK = "From now on, always give distances in kilometres and temperatures in Celsius."
KM_PIN = "Always give distances in kilometres and temperatures in Celsius."


@pytest.mark.model
def test_the_turn_that_asked_for_a_pin_is_not_a_memory_while_the_pin_is_shown_real_chroma_and_model(
        embedded_store: Any, st_embedder: Any) -> None:
    # nu45 section 6: the user turn that asked for the pin came back as the top memory under the pin itself
    engine = ChatRecall(store=embedded_store, embedder=st_embedder)
    try:
        llm = model("A cortado is equal parts espresso and milk; a flat white has more, silkier milk.",
                    pin_call(KM_PIN), "Done: I'll use kilometres and Celsius from now on.",
                    "Around 60-65 °C.", "Around 60-65 °C.")
        agent = create_agent(llm, tools=make_pin_tools(engine, "tom"),
                             middleware=[ChatRecallMiddleware(engine, user_id="tom")])
        agent.invoke(user("Quick one: what's the difference between a flat white and a cortado?"),
                     context={"session_id": "s2"})
        agent.invoke(user(KM_ASK), context={"session_id": "s2"})
        engine.add_many([
            {"text": "Also, I use whole milk from Mossgiel and oat milk for vegans.", "user_id": "tom",
             "session_id": "s2"},
            {"text": "The cart's steam wand is on the left. It takes about 10 minutes to warm up in the morning, "
                     "and I always give it a long purge after each milk.", "user_id": "tom", "session_id": "s2"},
        ])
        question = "What temperature should I steam the milk to?"
        out = agent.invoke(user(question), context={"session_id": "s3"})["chatrecall"]
        assert [p["text"] for p in out["pins"]] == [KM_PIN] and KM_PIN in llm.system_of(3)
        texts = [i["text"] for i in out["items"] if i["source"] == "memory"]
        assert texts and KM_ASK not in texts, texts  # the pin shows it once
        assert KM_ASK not in llm.system_of(3)
        assert any("repeat" in n and "pin" in n for n in out["notes"]), out["notes"]
        # while the pin is active only: unpinned, the turn is a memory like any other
        engine.unpin(engine.pins("tom")[0])
        again = engine.retrieve(question, user_id="tom", session_id="s4", k=8)
        assert KM_ASK in [i.text for i in again.memories], again.explain()
        # a turn that holds the pin among much else is still returned
        engine.pin(KM_PIN, user_id="tom")
        engine.add(f"{KM_ASK} Also my steam wand needs about 10 minutes to warm up, the pitcher is 600 ml and "
                   "I steam oat milk a little cooler.", user_id="tom", session_id="s5")
        last = engine.retrieve(question, user_id="tom", session_id="s6", k=8)
        assert any(i.text.startswith(KM_ASK + " Also") for i in last.memories), last.explain()
        assert KM_ASK not in [i.text for i in last.memories]
    finally:
        engine.close()


@pytest.mark.model
def test_a_reply_that_only_hands_over_is_not_returned_as_a_memory_real_chroma_and_model(
        embedded_store: Any, st_embedder: Any) -> None:
    # nu45 section 5: "Here you go." took the share of the question before it and came first, above the fact
    engine = ChatRecall(store=embedded_store, embedder=st_embedder)
    try:
        fillers = ["Here you go.", "Here's what I have.", "Sure, here you go!"]
        llm = model("Sounds like a good split.", "Nice, that's a great grinder.", "Good luck with the permit!",
                    *fillers, "Aiko.")
        agent = create_agent(llm, middleware=[ChatRecallMiddleware(engine, user_id="tom")])
        for message, session in (("My partner Aiko handles the bookings and the Instagram.", "s1"),
                                 ("I use a Eureka Mignon Specialita grinder on the cart.", "s1"),
                                 ("The council permit for the cart runs out in June.", "s1"),
                                 ("What's my partner's name?", "s2"),
                                 ("Which grinder do I use?", "s2"),
                                 ("Who handles the bookings?", "s2")):
            agent.invoke(user(message), context={"session_id": session})
        out = agent.invoke(user("what's my partner called?"), context={"session_id": "s3"})["chatrecall"]
        memories = [i["text"] for i in out["items"] if i["source"] == "memory"]
        assert memories and not set(fillers) & set(memories), memories
        assert "My partner Aiko handles the bookings and the Instagram." in memories[:2], memories
        grinder = engine.retrieve("Which grinder am I bringing?", user_id="tom", session_id="s4", k=8)
        assert grinder.memories and not set(fillers) & {i.text for i in grinder.memories}, grinder.explain()
        assert grinder.memories[0].text.startswith("I use a Eureka"), grinder.explain()
        # a reply with content is returned as before
        engine.add_many([{"text": "What's my van's registration?", "user_id": "tom", "session_id": "s5"},
                         {"text": "Here you go: SK19 XYZ.", "user_id": "tom", "session_id": "s5",
                          "role": "assistant"}])
        van = engine.retrieve("what's the van's registration again?", user_id="tom", session_id="s6")
        assert "Here you go: SK19 XYZ." in [i.text for i in van.memories], van.explain()
    finally:
        engine.close()


def test_pin_tools_made_for_one_user_refuse_a_run_for_another(cr: ChatRecall) -> None:
    llm = model(pin_call("Always answer in metric units"), "Sorry.")
    agent = create_agent(llm, tools=make_pin_tools(cr, "u1"), middleware=[ChatRecallMiddleware(cr)])
    out = agent.invoke(user("Please always use metric units"), context={"user_id": "bob", "session_id": "b1"})
    tool_msg = out["messages"][2]
    assert tool_msg.type == "tool" and tool_msg.text.startswith("Error") and "user_id='bob'" in tool_msg.text
    assert cr.pins("u1") == [] and cr.pins("bob") == []
    unbound = make_pin_tools(cr)[2]
    assert unbound.invoke({}).startswith("Error") and "no user_id" in unbound.invoke({})


def test_middleware_ids_from_runtime_context_and_configurable(cr: ChatRecall) -> None:
    llm = model("a", "b")
    agent = create_agent(llm, middleware=[ChatRecallMiddleware(cr)])
    out = agent.invoke(user(BILLING_Q), context={"user_id": "u2", "session_id": "x"})
    assert "MongoDB" in llm.system_of(0) and "Postgres" not in llm.system_of(0)
    assert cr.count("u2", "x") == 2 and out["chatrecall"]["stored"]
    agent.invoke(user(BILLING_Q), config={"configurable": {"user_id": "u1", "thread_id": "t9"}})
    assert "Postgres" in llm.system_of(1) and cr.count("u1", "t9") == 2


def test_middleware_without_user_or_session_raises_chatrecall_errors(cr: ChatRecall) -> None:
    agent = create_agent(model("a"), middleware=[ChatRecallMiddleware(cr)])
    with pytest.raises(InvalidInputError, match="user_id"):
        agent.invoke(user("hello"))
    agent = create_agent(model("a"), middleware=[ChatRecallMiddleware(cr, user_id="u1")])
    with pytest.raises(InvalidInputError, match="session_id"):
        agent.invoke(user("hello"))
    agent = create_agent(model("a"), middleware=[ChatRecallMiddleware(cr, user_id="u1", store_turns=False)])
    agent.invoke(user("hello"))
    with pytest.raises(InvalidInputError, match="k=0"):
        ChatRecallMiddleware(cr, user_id="u1", k=0)
    with pytest.raises(InvalidInputError, match="user_id"):
        ChatRecallMiddleware(cr, user_id="")


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_middleware_empty_message_gives_a_route_none_summary_and_stores_nothing(cr: ChatRecall, text: str) -> None:
    # nu45 bad 2: out["chatrecall"] was None, so out["chatrecall"]["route"] raised TypeError in user code
    llm = model("Hi!", "Did you mean to send something?", "Still nothing?")
    agent = create_agent(llm, middleware=[ChatRecallMiddleware(cr, user_id="u1", session_id="s1")])
    usual = agent.invoke(user("Hello!"))["chatrecall"]
    before = cr.count("u1", "s1")
    for out in (agent.invoke(user(text)), asyncio.run(agent.ainvoke(user(text)))):
        state = out["chatrecall"]
        assert state is not None and set(state) == set(usual) - {"stored"}, state
        assert state["route"] == "none" and state["gate_route"] == "none" and state["items"] == [], state
        assert state["context"] == "" and state["message"] == text, state
        assert any("no text" in n and "nothing searched" in n for n in state["notes"]), state["notes"]
    assert cr.count("u1", "s1") == before  # nothing stored
    assert [m.type for m in llm.calls[-1]] == ["human"]  # the model is still called, nothing injected


def test_middleware_misspelt_context_key_is_named_with_the_key_it_means(cr: ChatRecall) -> None:
    # nu45 bad 5b: context={"userid": ...} said "has no user_id" without pointing at the misspelt key
    agent = create_agent(model("a", "b", "c", "d"), middleware=[ChatRecallMiddleware(cr)])
    before = cr.count("u1")
    for ctx, wrong in (({"userid": "u1", "session_id": "s1"}, "userid"), ({"user": "u1"}, "user"),
                       ({"usr_id": "u1"}, "usr_id")):
        with pytest.raises(InvalidInputError, match=f"{wrong!r}.*did you mean 'user_id'"):
            agent.invoke(user("hello"), context=ctx)
    with pytest.raises(InvalidInputError, match="'sesion_id'.*did you mean 'session_id'"):
        agent.invoke(user("hello"), context={"user_id": "u1", "sesion_id": "s1"})
    # a key that is not near one of ours is not taken for one
    with pytest.raises(InvalidInputError, match="has no user_id") as err:
        agent.invoke(user("hello"), context={"org_id": "acme"})
    assert "did you mean" not in str(err.value)
    assert cr.count("u1") == before
    # the pin tools, acting for the run's user, name it too (to the model, as the tool's error)
    llm = model(pin_call("Reply in French"), "Could not pin.")
    agent = create_agent(llm, tools=make_pin_tools(cr), middleware=[ChatRecallMiddleware(cr, user_id="u1",
                                                                                         session_id="s1")])
    agent.invoke(user("Reply in French from now on"), context={"userid": "u1"})
    tool_reply = [m.text for m in llm.calls[1] if isinstance(m, ToolMessage)]
    assert tool_reply and "'userid': did you mean 'user_id'" in tool_reply[0], tool_reply
    assert cr.pins("u1") == []


def test_middleware_async_agent(cr: ChatRecall) -> None:
    llm = model(pin_call("Reply in French"), "D'accord.", "Postgres.")
    agent = create_agent(llm, tools=make_pin_tools(cr, "u1"),
                         middleware=[ChatRecallMiddleware(cr, user_id="u1", session_id="s1")])
    asyncio.run(agent.ainvoke(user("Reply in French please")))
    out = asyncio.run(agent.ainvoke(user(BILLING_Q)))
    assert "Reply in French" in llm.system_of(2) and "We use Postgres for the billing service" in llm.system_of(2)
    assert out["chatrecall"]["route"] == "memory"
    assert cr.count("u1", "s1") == 4


@pytest.fixture
def down_cr() -> tuple[DownStore, ChatRecall]:
    """A fake engine over the in-memory store acting as a server that can go down (seeded while up)."""
    store = DownStore()
    engine = fake_engine(store=store)
    seed(engine)
    return store, engine


def test_middleware_turn_returns_the_answer_while_the_store_is_down(
        down_cr: tuple[DownStore, ChatRecall], caplog: pytest.LogCaptureFixture) -> None:
    # nu45 8b: after_agent's store raised StoreUnavailableError out of agent.invoke, losing the paid-for answer
    store, cr = down_cr
    mw = ChatRecallMiddleware(cr, user_id="u1", session_id="s1")
    agent = create_agent(model("Postgres.", "Svelte.", "Helm."), middleware=[mw])
    cr.retrieve(BILLING_Q, user_id="u1", session_id="s1")  # u1's index is cached
    store.down = True
    with caplog.at_level("WARNING", logger="chatrecall"):
        out = agent.invoke(user(BILLING_Q))
    assert out["messages"][-1].text == "Postgres."
    state = out["chatrecall"]
    assert state["pending"] == 2 and len(state["stored"]) == 2
    assert any(n.startswith("degraded") and "2 turns" in n for n in state["notes"]), state["notes"]
    assert any("unavailable" in r.getMessage() for r in caplog.records)
    out = asyncio.run(agent.ainvoke(user("And the frontend?")))  # aafter_agent too
    assert out["messages"][-1].text == "Svelte." and out["chatrecall"]["pending"] == 4
    store.down = False
    out = agent.invoke(user("How do we deploy?"))
    assert out["chatrecall"]["pending"] == 0 and cr.pending_turns() == 0
    assert [r.text for r in cr.history("u1", "s1")] == [BILLING_Q, "Postgres.", "And the frontend?", "Svelte.",
                                                        "How do we deploy?", "Helm."]


def test_memory_and_chat_history_keep_turns_while_the_store_is_down(down_cr: tuple[DownStore, ChatRecall]) -> None:
    store, cr = down_cr
    cr.retrieve(BILLING_Q, user_id="u1", session_id="s1")
    store.down = True
    memory = ChatRecallMemory(engine=cr, user_id="u1", session_id="s1")
    memory.save_context({"input": "We also use Redis"}, {"response": "Noted, Redis."})
    history = ChatRecallChatMessageHistory(cr, user_id="u1", session_id="s1")
    history.add_messages([HumanMessage("And Kafka for events"), AIMessage("Kafka, noted.")])
    asyncio.run(history.aadd_messages([HumanMessage("async one")]))
    assert cr.pending_turns("u1") == 5
    store.down = False
    assert [m.text for m in history.messages] == ["We also use Redis", "Noted, Redis.", "And Kafka for events",
                                                  "Kafka, noted.", "async one"]
    memory.load_memory_variables({"input": "which queue do we use?"})  # a retrieve: written now
    assert cr.pending_turns("u1") == 0 and cr.count("u1", "s1") == 5


def test_middleware_does_not_store_pin_commands(cr: ChatRecall) -> None:
    handler = PinCallbackHandler(cr, user_id="u1")
    agent = create_agent(model("Pinned.", "Bonjour."), middleware=[ChatRecallMiddleware(cr, user_id="u1",
                                                                                         session_id="s1")])
    out = agent.invoke(user("/pin Reply in French"), config={"callbacks": [handler]})
    assert cr.count("u1", "s1") == 0 and [p.text for p in cr.pins("u1")] == ["Reply in French"]
    state = out["chatrecall"]  # nothing searched for a command (chat22: its words matched patterns)
    assert state["route"] == "none" and not state["items"] and any("forced by the caller" in n
                                                                   for n in state["notes"]), state
    agent.invoke(user("Hello!"), config={"callbacks": [handler]})
    assert cr.count("u1", "s1") == 2


def _checkpointed_chat(cr: ChatRecall) -> tuple[RecordingChatModel, Any]:
    from langgraph.checkpoint.memory import InMemorySaver

    llm = model("Miso is a lovely name.", "Miso.")
    agent = create_agent(llm, middleware=[ChatRecallMiddleware(cr, user_id="u1")], checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t1"}}
    agent.invoke(user("I adopted a kitten today, I named her Miso"), cfg)
    out = agent.invoke(user("what's my kitten called?"), cfg)
    return llm, out


def test_middleware_with_a_checkpointer_does_not_inject_the_thread_twice(cr: ChatRecall) -> None:
    # With a checkpointer the agent already sends the thread's earlier turns; the recent window came on top.
    llm, out = _checkpointed_chat(cr)
    second = llm.calls[1]
    assert [m.type for m in second] == ["system", "human", "ai", "human"]  # the checkpointer's history
    system = llm.system_of(1)
    assert "## Recent conversation" not in system
    assert "I adopted a kitten today" not in system  # the thread's own turn is not a memory either
    assert any("not injected" in n for n in out["chatrecall"]["notes"])
    # without a checkpointer the thread's turns are not in the request: the recent window brings them
    llm2 = model("Noted.", "Miso.")
    agent = create_agent(llm2, middleware=[ChatRecallMiddleware(cr, user_id="u1", session_id="t2")])
    agent.invoke(user("I adopted a kitten today, I named her Miso"))
    agent.invoke(user("what's my kitten called?"))
    assert [m.type for m in llm2.calls[1]] == ["system", "human"]
    assert "## Recent conversation" in llm2.system_of(1) and "I named her Miso" in llm2.system_of(1)


@pytest.mark.model
def test_middleware_with_a_checkpointer_real_chroma_and_model(real_cr: ChatRecall) -> None:
    llm, out = _checkpointed_chat(real_cr)
    system = llm.system_of(1)
    assert "## Recent conversation" not in system and "I adopted a kitten today" not in system
    assert [m.text for m in llm.calls[1] if m.type == "human"] == [
        "I adopted a kitten today, I named her Miso", "what's my kitten called?"]
    assert real_cr.count("u1", "t1") == 4


@pytest.mark.model
def test_middleware_real_chroma_and_model(real_cr: ChatRecall) -> None:
    llm = model(pin_call("Always answer in metric units"), "Pinned.", "Postgres, as agreed.")
    agent = create_agent(llm, tools=make_pin_tools(real_cr, "u1"),
                         middleware=[ChatRecallMiddleware(real_cr, user_id="u1", session_id="s1")])
    agent.invoke(user("Always answer in metric units please"))
    out = agent.invoke(user("Remind me, what did we pick for the billing database?"))
    system = llm.system_of(2)
    assert "Always answer in metric units" in system and "Postgres" in system and "MongoDB" not in system
    assert out["chatrecall"]["route"] == "memory"
    texts = [r.text for r in ChatRecallChatMessageHistory(real_cr, user_id="u1", session_id="s1").records()]
    assert texts[-2:] == ["Remind me, what did we pick for the billing database?", "Postgres, as agreed."]


# ====================================================================== chat history
def test_history_with_runnable_with_message_history(cr: ChatRecall) -> None:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Be brief."), MessagesPlaceholder("history"), ("human", "{question}")])
    llm = model("Answer one", "Answer two")
    chain = RunnableWithMessageHistory(
        prompt | llm,
        lambda sid: ChatRecallChatMessageHistory(cr, user_id="u1", session_id=sid),
        input_messages_key="question",
        history_messages_key="history",
    )
    cfg: Any = {"configurable": {"session_id": "s2"}}
    assert chain.invoke({"question": "first question"}, cfg).content == "Answer one"
    assert chain.invoke({"question": "second question"}, cfg).content == "Answer two"
    assert [(m.type, m.text) for m in llm.calls[1]] == [
        ("system", "Be brief."), ("human", "first question"), ("ai", "Answer one"), ("human", "second question")]
    history = ChatRecallChatMessageHistory(cr, user_id="u1", session_id="s2")
    assert [(type(m), m.text) for m in history.messages] == [
        (HumanMessage, "first question"), (AIMessage, "Answer one"),
        (HumanMessage, "second question"), (AIMessage, "Answer two")]
    # stored turns are memories: searchable like any other
    assert cr.search("second question", user_id="u1", k=1)[0].text == "second question"
    assert ChatRecallChatMessageHistory(cr, user_id="u1", session_id="s3").messages == []


def test_history_roundtrip_roles_skip_and_clear(cr: ChatRecall) -> None:
    history = ChatRecallChatMessageHistory(cr, user_id="u1", session_id="s1")
    history.add_messages([
        SystemMessage("You are a bot"),
        HumanMessage("run the tool", name="ana"),
        AIMessage(content="", tool_calls=[{"name": "t", "args": {}, "id": "call-1"}]),
        ToolMessage("tool says 42", tool_call_id="call-1"),
        AIMessage("It is 42"),
    ])
    msgs = history.messages
    assert [type(m) for m in msgs] == [SystemMessage, HumanMessage, ToolMessage, AIMessage]
    assert msgs[1].name == "ana" and isinstance(msgs[2], ToolMessage) and msgs[2].tool_call_id == "call-1"
    assert all(m.id for m in msgs)
    asyncio.run(history.aadd_messages([HumanMessage("async one")]))
    assert asyncio.run(history.aget_messages())[-1].text == "async one"
    history.clear()
    assert history.messages == [] and cr.count("u1", "old") == 5
    history.clear()  # already empty: no error


def test_history_conversions_and_bad_input(cr: ChatRecall) -> None:
    assert message_to_turn(AIMessage(content="", tool_calls=[{"name": "t", "args": {}, "id": "1"}]),
                           user_id="u", session_id="s") is None
    with pytest.raises(InvalidInputError, match="message"):
        message_to_turn("hi", user_id="u", session_id="s")  # type: ignore[arg-type]
    rec = ChatRecallChatMessageHistory(cr, user_id="u1", session_id="old").records()[0]
    assert isinstance(record_to_message(rec), HumanMessage) and record_to_message(rec).id == rec.id
    with pytest.raises(InvalidInputError, match="user_id"):
        ChatRecallChatMessageHistory(cr, user_id="__x__", session_id="s")
    with pytest.raises(ConfigError, match="engine=None"):
        ChatRecallChatMessageHistory(None, user_id="u", session_id="s")  # type: ignore[arg-type]


@pytest.mark.model
def test_history_real_chroma_survives_a_new_engine(embedded_store: Any, st_embedder: Any) -> None:
    first = ChatRecall(store=embedded_store, embedder=st_embedder)
    ChatRecallChatMessageHistory(first, user_id="u1", session_id="s1").add_messages(
        [HumanMessage(f"question number {i}") if i % 2 == 0 else AIMessage(f"answer number {i}") for i in range(8)])
    first.close()
    second = ChatRecall(store=embedded_store, embedder=st_embedder)  # e.g. another process
    msgs = ChatRecallChatMessageHistory(second, user_id="u1", session_id="s1").messages
    assert [m.text for m in msgs] == [f"{'question' if i % 2 == 0 else 'answer'} number {i}" for i in range(8)]
    assert [m.type for m in msgs] == ["human", "ai"] * 4
    second.close()


# ====================================================================== pins
def _pin_chain(cr: ChatRecall, llm: RecordingChatModel) -> Any:
    memory_prompt = ChatPromptTemplate.from_messages([("system", "{context}"), ("human", "{question}")])
    retrieve = ChatRecallMemory(engine=cr, user_id="u1", session_id="s1")
    return {"context": lambda x: retrieve.load_memory_variables({"input": x["question"]})["history"],
            "question": lambda x: x["question"]} | memory_prompt | llm


def test_pin_callback_pins_then_unpins_across_turns(cr: ChatRecall) -> None:
    llm = model("ok", "Bonjour", "ok", "Hello")
    chain = _pin_chain(cr, llm)
    handler = PinCallbackHandler(cr, user_id="u1")
    cfg: Any = {"callbacks": [handler]}
    chain.invoke({"question": "/pin Always answer in French"}, cfg)
    assert [r.message for r in handler.results] == ["Pinned: 'Always answer in French'"]  # once, not per callback
    chain.invoke({"question": "How are you?"}, cfg)
    assert "Always answer in French" in llm.system_of(1)
    chain.invoke({"question": "/unpin french"}, cfg)
    chain.invoke({"question": "How are you now?"}, cfg)
    assert "French" not in llm.system_of(3)
    assert [r.command.action for r in handler.results] == ["pin", "unpin"] and handler.errors == []


def test_pin_callback_on_model_only_and_repeated_commands(cr: ChatRecall) -> None:
    handler = PinCallbackHandler(cr, user_id="u1", session_id="s1")
    llm = model("a", "b", "c", "d").with_config(callbacks=[handler])
    llm.invoke([HumanMessage("/pin short answers")])
    llm.invoke([HumanMessage("/unpin short answers")])
    llm.invoke([HumanMessage("/pin short answers")])  # same text again after unpin: applied again
    assert [p.text for p in cr.pins("u1", "s1")] == ["short answers"] and cr.pins("u1", "s2") == []
    llm.invoke([HumanMessage("/pins"), AIMessage("x"), HumanMessage("/pins")])
    assert "short answers" in handler.results[-1].message


def test_pin_callback_errors_recorded_or_raised(cr: ChatRecall) -> None:
    handler = PinCallbackHandler(cr, user_id="u1")
    chain = _pin_chain(cr, model("a", "b", "c"))
    chain.invoke({"question": "/unpin nothing-like-this"}, {"callbacks": [handler]})
    chain.invoke({"question": "/pin"}, {"callbacks": [handler]})
    assert [type(e) for e in handler.errors] == [NotFoundError, InvalidInputError] and handler.results == []
    strict = PinCallbackHandler(cr, user_id="u1", raise_error=True)
    with pytest.raises(NotFoundError, match="nothing-like-this"):
        chain.invoke({"question": "/unpin nothing-like-this"}, {"callbacks": [strict]})


def test_pin_tools_direct_and_limits() -> None:
    cr = fake_engine(pins=PinConfig(max_pins=1))
    pin, unpin, list_pins = make_pin_tools(cr, "u1")
    assert [t.name for t in (pin, unpin, list_pins)] == ["pin_constraint", "unpin_constraint", "list_pins"]
    assert pin.invoke({"text": "Use metric units"}) == "Pinned: 'Use metric units'"
    over = pin.invoke({"text": "Reply in French"})
    assert over.startswith("Error") and "max_pins" in over  # returned to the model, not raised
    assert "Use metric units" in list_pins.invoke({})
    assert "german" in unpin.invoke({"pin": "german"})
    assert unpin.invoke({"pin": "metric"}) == "Unpinned: 'Use metric units'"
    assert list_pins.invoke({}) == "No pinned constraints."
    with pytest.raises(InvalidInputError, match="user_id"):
        make_pin_tools(cr, "")


@pytest.mark.model
def test_pin_callback_real_chroma_and_model(real_cr: ChatRecall) -> None:
    llm = model("ok", "Bonjour", "ok", "Hello")
    chain = _pin_chain(real_cr, llm)
    handler = PinCallbackHandler(real_cr, user_id="u1")
    chain.invoke({"question": "/pin Always answer in French"}, {"callbacks": [handler]})
    chain.invoke({"question": "Remind me what database billing uses?"}, {"callbacks": [handler]})
    assert "Always answer in French" in llm.system_of(1) and "Postgres" in llm.system_of(1)
    chain.invoke({"question": "/unpin Always answer in French"}, {"callbacks": [handler]})
    chain.invoke({"question": "Remind me what database billing uses?"}, {"callbacks": [handler]})
    assert "French" not in llm.system_of(3) and real_cr.pins("u1") == []


# ====================================================================== nu48: ids checked first, hints, titles
@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
def test_middleware_missing_or_misspelt_session_fails_before_the_model_is_called(cr: ChatRecall, run: str) -> None:
    # nu48 #8: the error came from after_agent, once the (paid) model had answered, and the answer was lost;
    # a pin the model made through a tool on the way was stored, though the run failed
    def go(agent: Any, **kw: Any) -> Any:
        return agent.invoke(user("Reply in French from now on"), **kw) if run == "invoke" else asyncio.run(
            agent.ainvoke(user("Reply in French from now on"), **kw))

    llm = model(pin_call("Reply in French"), "D'accord.", pin_call("Reply in French"), "D'accord.")
    agent = create_agent(llm, tools=make_pin_tools(cr), middleware=[ChatRecallMiddleware(cr)])
    with pytest.raises(InvalidInputError, match="'sesion_id'.*did you mean 'session_id'"):
        go(agent, context={"user_id": "p", "sesion_id": "s9"})
    with pytest.raises(InvalidInputError, match="needs a session_id to store turns") as err:
        go(agent, context={"user_id": "p"})
    assert "did you mean" not in str(err.value)
    with pytest.raises(InvalidInputError, match="has no user_id.*'usr_id'.*did you mean 'user_id'"):
        go(agent, context={"usr_id": "p", "session_id": "s9"})
    assert llm.calls == [] and cr.pins("p") == [] and cr.count("p") == 0  # no model call, nothing stored
    # what needs no session still runs: store_turns=False, a /pin command, a message without text
    for middleware, text in ((ChatRecallMiddleware(cr, store_turns=False), "Hello!"),
                             (ChatRecallMiddleware(cr), "/pin Reply in French"), (ChatRecallMiddleware(cr), " ")):
        agent = create_agent(model("Hi!"), middleware=[middleware])
        assert agent.invoke(user(text), context={"user_id": "p"})["chatrecall"] is not None
    assert cr.count("p") == 0


def test_middleware_misspelt_configurable_key_is_named_with_the_key_it_means(cr: ChatRecall) -> None:
    # nu48 #9: context={"userid": ...} was named, config={"configurable": {"userid": ...}} was not
    from langgraph.checkpoint.memory import InMemorySaver

    llm = model("a", "b")
    agent = create_agent(llm, middleware=[ChatRecallMiddleware(cr)], checkpointer=InMemorySaver())
    with pytest.raises(InvalidInputError,
                       match=r"has no user_id \(the run's config\['configurable'\] has 'userid': did you mean "
                             r"'user_id'\?\)"):
        agent.invoke(user("hello"), config={"configurable": {"userid": "p", "thread_id": "t"}})
    agent = create_agent(llm, middleware=[ChatRecallMiddleware(cr)])
    with pytest.raises(InvalidInputError, match="'thred_id': did you mean 'thread_id'"):
        agent.invoke(user("hello"), config={"configurable": {"user_id": "p", "thred_id": "t"}})
    with pytest.raises(InvalidInputError, match="'sesion_id': did you mean 'session_id'"):
        agent.invoke(user("hello"), config={"configurable": {"user_id": "p", "sesion_id": "t"}})
    # keys that are not near ours (the app's own, LangGraph's checkpoint keys) are not taken for ours
    agent = create_agent(llm, middleware=[ChatRecallMiddleware(cr)], checkpointer=InMemorySaver())
    with pytest.raises(InvalidInputError, match="has no user_id") as err:
        agent.invoke(user("hello"), config={"configurable": {"org_id": "acme", "thread_id": "t"}})
    assert "did you mean" not in str(err.value)
    assert llm.calls == [] and cr.count("p") == 0
    # the pin tools, acting for the run's user, name it too (to the model, as the tool's error)
    llm = model(pin_call("Reply in French"), "Could not pin.")
    agent = create_agent(llm, tools=make_pin_tools(cr), middleware=[ChatRecallMiddleware(cr, user_id="u1",
                                                                                         session_id="s1")])
    agent.invoke(user("Reply in French from now on"), config={"configurable": {"userid": "u1"}})
    tool_reply = [m.text for m in llm.calls[1] if isinstance(m, ToolMessage)]
    assert tool_reply and "configurable'] has 'userid': did you mean 'user_id'" in tool_reply[0], tool_reply


def test_constructor_arguments_that_were_taken_unchecked_raise_our_errors(cr: ChatRecall) -> None:
    # nu48 #10: event_name=123 was accepted (the run succeeded); input_keys="question" became 'q', 'u', ...;
    # memory_key=123 raised pydantic's ValidationError
    for bad in (123, "", "  ", b"ev"):
        with pytest.raises(ConfigError, match=r"ChatRecallMiddleware: event_name=.* is invalid.*non-empty str, or "
                                              r"None to dispatch no event"):
            ChatRecallMiddleware(cr, user_id="u1", event_name=bad)
    assert ChatRecallMiddleware(cr, user_id="u1", event_name=None).event_name is None
    for bad in ("question", 5, ["question", 7]):
        with pytest.raises(ConfigError, match="PinCallbackHandler: input_keys"):
            PinCallbackHandler(cr, user_id="u1", input_keys=bad)
    assert PinCallbackHandler(cr, user_id="u1", input_keys=["question"]).input_keys == ("question",)
    for name in ("memory_key", "input_key", "output_key", "route_key"):
        with pytest.raises(ConfigError, match=f"ChatRecallMemory: {name}=123 is invalid"):
            ChatRecallMemory(cr, user_id="u1", session_id="s1", **{name: 123})
    with pytest.raises(ConfigError, match="memory_key=None"):
        ChatRecallMemory(cr, user_id="u1", session_id="s1", memory_key=None)
    assert ChatRecallMemory(cr, user_id="u1", session_id="s1", input_key="q", route_key="r").route_key == "r"


def test_middleware_items_carry_the_passage_title(cr: ChatRecall) -> None:
    # nu48 #11: the title was only in the context string; items had id, score, source, text, tier, why
    cr.add_documents([{"title": "AquaFlow Plumbing - bathroom refit quote",
                       "text": "The bathroom refit comes to 2,800 pounds excluding VAT, fitting and tiling included."},
                      "Helm charts live in the deploy repo; run helm upgrade to release."])
    agent = create_agent(model("£2,800.", "Helm."),
                         middleware=[ChatRecallMiddleware(cr, user_id="u1", session_id="s1")])
    items = agent.invoke(user("What does the bathroom refit quote from AquaFlow come to in total?"))["chatrecall"][
        "items"]
    assert [(i["source"], i["title"]) for i in items] == [("corpus", "AquaFlow Plumbing - bathroom refit quote")]
    items = agent.invoke(user("How do we deploy with Helm charts?"))["chatrecall"]["items"]
    titles = {(i["source"], i["text"].split()[0]): i["title"] for i in items}
    assert titles[("corpus", "Helm")] is None and titles[("memory", "Deploys")] is None, titles  # untitled, memory
    assert all(set(i) == {"id", "text", "source", "score", "tier", "why", "title"} for i in items)
