"""ChatRecallStore behaves like LangGraph's InMemoryStore (same tests on both) and keeps users apart."""

from __future__ import annotations

import asyncio
import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore as LGInMemoryStore

pytest.importorskip("langchain.agents")

from langchain.tools import ToolRuntime
from langchain_core.tools import tool

from chatrecall.adapters.langgraph import ChatRecallStore
from chatrecall.core import ConfigError, InvalidInputError
from chatrecall.testing import HashEmbedder, fake_engine

ROOT = Path(__file__).resolve().parents[1]


def _lg_store() -> LGInMemoryStore:
    emb = HashEmbedder()
    return LGInMemoryStore(index={"dims": emb.dim, "embed": lambda texts: emb.embed_documents(texts).tolist(),
                                  "fields": ["text"]})


@pytest.fixture(params=["langgraph-inmemory", "chatrecall-fake",
                        pytest.param("chatrecall-chroma-model", marks=pytest.mark.model)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    if request.param == "langgraph-inmemory":
        yield _lg_store()
    elif request.param == "chatrecall-fake":
        yield ChatRecallStore(fake_engine())
    else:
        from chatrecall.adapters.chroma import ChromaStore
        from chatrecall.core import ChatRecall

        st_embedder = request.getfixturevalue("st_embedder")
        cr = ChatRecall(store=ChromaStore(path=tmp_path / "chroma"), embedder=st_embedder)
        yield ChatRecallStore(cr)
        cr.close()


FACTS = {
    "db": {"text": "The billing service runs on Postgres 16 in Frankfurt", "topic": "infra", "n": 1},
    "trip": {"text": "The team offsite is in Annecy at the lakeside chalet", "topic": "travel", "n": 5},
    "pet": {"text": "Alice has a grey cat called Miso", "topic": "personal", "n": 9},
}


def _fill(store: BaseStore) -> None:
    for key, value in FACTS.items():
        store.put(("alice", "memories"), key, value)
    store.put(("alice", "prefs", "food"), "lunch", {"text": "Vegetarian lunch please", "n": 3})
    store.put(("bob", "memories"), "db", {"text": "Bob's billing runs on MySQL", "topic": "infra", "n": 2})


# ---------------------------------------------------------------- semantics shared with InMemoryStore
def test_put_get_roundtrip_keeps_the_whole_value(store: BaseStore) -> None:
    value = {"text": "Uses Helm", "nested": {"a": [1, 2, {"b": None}]}, "flag": True, "f": 1.5}
    store.put(("alice", "memories"), "k1", value)
    item = store.get(("alice", "memories"), "k1")
    assert item is not None
    assert item.value == value and item.key == "k1" and item.namespace == ("alice", "memories")
    assert item.created_at <= item.updated_at
    assert store.get(("alice", "memories"), "missing") is None
    assert store.get(("alice", "other"), "k1") is None  # same key, other namespace


def test_value_without_a_text_field_is_stored(store: BaseStore) -> None:
    store.put(("alice", "counters"), "c", {"count": 3})
    item = store.get(("alice", "counters"), "c")
    assert item is not None and item.value == {"count": 3}


def test_put_replaces_and_delete_removes(store: BaseStore) -> None:
    ns = ("alice", "memories")
    store.put(ns, "k", {"text": "first version"})
    first = store.get(ns, "k")
    store.put(ns, "k", {"text": "second version", "v": 2})
    second = store.get(ns, "k")
    assert first is not None and second is not None
    assert second.value == {"text": "second version", "v": 2}
    assert second.updated_at >= first.updated_at
    assert [i.key for i in store.search(ns)] == ["k"]
    store.delete(ns, "k")
    assert store.get(ns, "k") is None
    assert store.search(ns) == []
    store.delete(ns, "k")  # deleting a missing key is a no-op


def test_list_namespaces(store: BaseStore) -> None:
    _fill(store)
    assert store.list_namespaces(prefix=("alice",)) == [("alice", "memories"), ("alice", "prefs", "food")]
    assert store.list_namespaces(suffix=("memories",)) == [("alice", "memories"), ("bob", "memories")]
    assert store.list_namespaces(prefix=("*", "memories")) == [("alice", "memories"), ("bob", "memories")]
    assert store.list_namespaces(max_depth=1) == [("alice",), ("bob",)]
    assert store.list_namespaces(prefix=("alice",), max_depth=2) == [("alice", "memories"), ("alice", "prefs")]
    assert store.list_namespaces(limit=1, offset=1) == [("alice", "prefs", "food")]


def test_search_without_query_filters_and_pages(store: BaseStore) -> None:
    _fill(store)
    assert {i.key for i in store.search(("alice",))} == {"db", "trip", "pet", "lunch"}
    assert {i.key for i in store.search(("alice", "memories"))} == {"db", "trip", "pet"}
    assert [i.key for i in store.search(("alice",), filter={"topic": "infra"})] == ["db"]
    assert {i.key for i in store.search(("alice",), filter={"n": {"$gte": 5}})} == {"trip", "pet"}
    assert {i.key for i in store.search(("alice",), filter={"topic": {"$ne": "infra"}})} == {"trip", "pet", "lunch"}
    assert len(store.search(("alice",), limit=2)) == 2
    pages = store.search(("alice",), limit=2) + store.search(("alice",), limit=2, offset=2)
    assert {i.key for i in pages} == {"db", "trip", "pet", "lunch"}
    assert all(i.score is None for i in store.search(("alice",)))


def test_search_with_query_ranks_with_scores(store: BaseStore) -> None:
    _fill(store)
    hits = store.search(("alice",), query="Postgres billing service in Frankfurt", limit=3)
    assert hits[0].key == "db" and hits[0].namespace == ("alice", "memories")
    assert isinstance(hits[0].score, float)
    assert len(hits) == 3
    hits = store.search(("alice",), query="cat called Miso", filter={"topic": "personal"})
    assert [h.key for h in hits] == ["pet"]
    assert all(h.namespace[0] == "alice" for h in store.search(("alice",), query="MySQL billing"))


def test_batch_reads_see_the_state_before_its_writes(store: BaseStore) -> None:
    ns = ("alice", "memories")
    store.put(ns, "old", {"text": "old fact"})
    results = store.batch([
        PutOp(ns, "new", {"text": "new fact"}),
        GetOp(ns, "new"),
        GetOp(ns, "old"),
        SearchOp(ns),
        ListNamespacesOp(),
        PutOp(ns, "old", None),
    ])
    assert results[0] is None and results[1] is None and results[5] is None
    got: Any = results[2]
    found: Any = results[3]
    assert got is not None and got.value == {"text": "old fact"}
    assert [i.key for i in found] == ["old"]
    assert results[4] == [ns]
    assert store.get(ns, "old") is None and store.get(ns, "new") is not None


def test_async_methods(store: BaseStore) -> None:
    async def main() -> None:
        ns = ("alice", "memories")
        await store.aput(ns, "k", {"text": "Deploys go through Helm charts"})
        item = await store.aget(ns, "k")
        assert item is not None and item.value["text"].startswith("Deploys")
        hits = await store.asearch(("alice",), query="Helm deploys")
        assert [h.key for h in hits] == ["k"]
        assert await store.alist_namespaces() == [ns]
        res = await store.abatch([GetOp(ns, "k"), PutOp(ns, "k", None)])
        assert res[0] is not None and res[1] is None
        await store.adelete(ns, "k")
        assert await store.aget(ns, "k") is None

    asyncio.run(main())


def test_invalid_namespaces_are_refused(store: BaseStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(("alice", "a.b"), "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.get(("alice", ""), "k")


# ---------------------------------------------------------------- chatrecall specifics
def test_store_items_are_chatrecall_memories_of_that_user_only() -> None:
    cr = fake_engine()
    store = ChatRecallStore(cr)
    _fill(store)
    cr.add("We talked about the chalet booking", user_id="alice", session_id="chat-1")
    res = cr.retrieve("Remember which database the billing service runs on?", user_id="alice")
    assert res.items and res.items[0].text.startswith("The billing service runs on Postgres")
    assert all(i.record is not None and i.record.user_id == "alice" for i in res.items)
    assert "MySQL" not in res.context
    assert all(i.namespace[0] == "bob" for i in store.search(("bob",), query="Postgres Frankfurt billing"))
    # The namespace is the session; the chat turn is not a store item.
    assert {(u, s) for u, s in cr.list_sessions("alice")} >= {("alice", "alice.memories"), ("alice", "chat-1")}
    assert ("chat-1",) not in store.list_namespaces()
    assert {i.key for i in store.search(("alice",))} == {"db", "trip", "pet", "lunch"}
    # forget() of chatrecall empties the store for that user, not for another.
    cr.forget("alice")
    assert store.search(("alice",)) == [] and store.get(("bob", "memories"), "db") is not None
    stored = cr.search("lunch", user_id="bob")
    assert all(i.record is not None and i.record.user_id == "bob" for i in stored)


def test_user_position_and_refusals() -> None:
    cr = fake_engine()
    store = ChatRecallStore(cr, user_position=1)
    store.put(("memories", "alice"), "k", {"text": "Alice likes tea"})
    assert cr.search("tea", user_id="alice")[0].text == "Alice likes tea"
    with pytest.raises(InvalidInputError, match="no user label at position 1"):
        store.put(("memories",), "k", {"text": "whose?"})
    with pytest.raises(InvalidInputError, match="no user label"):
        ChatRecallStore(cr).search((), query="tea")  # a search across every user is refused
    with pytest.raises(InvalidInputError, match="user_position"):
        ChatRecallStore(cr, user_position=-1)
    # A bad engine is a ConfigError from the check every adapter shares (LangChain, LlamaIndex, MCP).
    with pytest.raises(ConfigError, match="ChatRecallStore: engine='not an engine' is invalid"):
        ChatRecallStore("not an engine")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="JSON"):
        ChatRecallStore(cr).put(("alice",), "k", {"text": "x", "bad": object()})
    with pytest.raises(InvalidInputError, match="operator"):
        ChatRecallStore(cr).search(("memories",), filter={"n": {"$regex": "x"}})
    with pytest.raises(NotImplementedError, match="TTL"):
        ChatRecallStore(cr).put(("alice",), "k", {"text": "x"}, ttl=5)


def test_a_str_namespace_is_refused_not_split_into_one_user_per_letter() -> None:
    # nu46: store.put("alice", ...) stored the memory for user "a" (tuple("alice") is five labels), shared with every
    # other id starting with "a" that made the same slip; nothing said so
    cr = fake_engine()
    store = ChatRecallStore(cr)
    for call in (lambda: store.put("alice", "x", {"text": "My dog is Biscuit"}),
                 lambda: store.get("alice", "x"),
                 lambda: store.search("alice", query="dog"),
                 lambda: store.delete("alice", "x"),
                 lambda: store.list_namespaces(prefix="alice"),
                 lambda: store.forget_namespace("alice")):  # type: ignore[arg-type]
        with pytest.raises(InvalidNamespaceError, match=r"namespace='alice' is a str.*\('alice',\)"):
            call()
    assert cr.get_memories("a") == [] and cr.get_memories("alice") == []
    store.put(("alice",), "x", {"text": "My dog is Biscuit"})
    assert [r.text for r in cr.get_memories("alice")] == ["My dog is Biscuit"]


def test_index_argument_picks_the_text() -> None:
    cr = fake_engine()
    store = ChatRecallStore(cr, text_fields="body")
    store.put(("u1",), "a", {"body": "Kubernetes on bare metal", "title": "infra"})
    store.put(("u1",), "b", {"title": "Quarterly numbers", "tags": ["finance"]}, index=["title", "tags[*]"])
    texts = {r.text for r in cr.get_memories("u1")}
    assert texts == {"Kubernetes on bare metal", "Quarterly numbers\nfinance"}


def test_adapter_without_langgraph_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langgraph.store.base", None)
    monkeypatch.delitem(sys.modules, "chatrecall.adapters.langgraph", raising=False)
    with pytest.raises(ImportError, match=r"chatrecall\[langgraph\]"):
        importlib.import_module("chatrecall.adapters.langgraph")


def test_engine_memory_methods_validate() -> None:
    cr = fake_engine()
    with pytest.raises(InvalidInputError, match="memory_id"):
        cr.upsert("", "text", user_id="u1", session_id="s1")
    with pytest.raises(InvalidInputError, match="ids must be a list"):
        cr.get_memories("u1", ids="abc")
    with pytest.raises(InvalidInputError, match="ids must be a list"):
        cr.delete_memories("u1", "abc")
    cr.upsert("m1", "Alice's fact", user_id="u1", session_id="s1")
    with pytest.raises(InvalidInputError, match="another user"):
        cr.upsert("m1", "Mallory overwrites", user_id="u2", session_id="s1")
    assert cr.get_memories("u2", ids=["m1"]) == [] and cr.delete_memories("u2", ["m1"]) == 0
    assert [r.text for r in cr.get_memories("u1", ids=["m1"])] == ["Alice's fact"]


# ---------------------------------------------------------------- in an agent
@tool
def save(fact: str, runtime: ToolRuntime) -> str:
    """Save a fact."""
    assert runtime.store is not None
    runtime.store.put((runtime.context["user_id"], "memories"), "fact-1", {"text": fact})  # type: ignore[index]
    return "saved"


@tool
def find(query: str, runtime: ToolRuntime) -> str:
    """Find facts."""
    assert runtime.store is not None
    hits = runtime.store.search((runtime.context["user_id"], "memories"), query=query)  # type: ignore[index]
    return " | ".join(h.value["text"] for h in hits) or "nothing"


def _agent_with_store(store: BaseStore) -> Any:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    class FakeToolModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> FakeToolModel:
            return self

    script = iter([
        AIMessage("", tool_calls=[{"name": "save", "args": {"fact": "Billing uses Postgres 16"}, "id": "1"}]),
        AIMessage("Saved it."),
        AIMessage("", tool_calls=[{"name": "find", "args": {"query": "billing database"}, "id": "2"}]),
        AIMessage("Found it."),
        AIMessage("", tool_calls=[{"name": "find", "args": {"query": "billing database"}, "id": "3"}]),
        AIMessage("Nothing for you."),
    ])
    return create_agent(FakeToolModel(messages=script), tools=[save, find], store=store)


@pytest.mark.parametrize("engine_kind", ["fake", pytest.param("model", marks=pytest.mark.model)])
def test_create_agent_uses_the_store(engine_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    if engine_kind == "fake":
        cr = fake_engine()
    else:
        from chatrecall.adapters.chroma import ChromaStore
        from chatrecall.core import ChatRecall

        cr = ChatRecall(store=ChromaStore(path=tmp_path / "c"), embedder=request.getfixturevalue("st_embedder"))
    agent = _agent_with_store(ChatRecallStore(cr))
    agent.invoke({"messages": [{"role": "user", "content": "remember billing"}]}, context={"user_id": "alice"})
    out = agent.invoke({"messages": [{"role": "user", "content": "which db?"}]}, context={"user_id": "alice"})
    tool_msgs = [m for m in out["messages"] if m.type == "tool"]
    assert tool_msgs[-1].text == "Billing uses Postgres 16"
    out = agent.invoke({"messages": [{"role": "user", "content": "which db?"}]}, context={"user_id": "bob"})
    assert [m for m in out["messages"] if m.type == "tool"][-1].text == "nothing"
    assert cr.search("billing database", user_id="alice")[0].text == "Billing uses Postgres 16"


@pytest.mark.parametrize("mode", [pytest.param("real", marks=pytest.mark.model), "fake"])
def test_langgraph_store_example(mode: str) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    env.pop("CHATRECALL_FAKE", None)
    if mode == "fake":
        env["CHATRECALL_FAKE"] = "1"
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "langgraph_store.py")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert out.count("agent: Saved.") == 3
    alice, bob = out.split("alice: Which database does billing use?")[1].split("bob: Which database")
    assert "From memory:" in alice and "Postgres 16" in alice
    bob = bob.split("namespaces:")[0]
    assert "Postgres" not in bob and "Argo CD" in bob  # Bob only ever sees his own memories
    assert "namespaces: [('alice', 'memories'), ('bob', 'memories')]" in out
    assert "retrieve(alice): route=memory top=Our billing service runs on Postgres 16." in out
