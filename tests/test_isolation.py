"""Isolation between users, as a property over random multi-user histories.

A hypothesis state machine of sorts: each example is a random history of
adds (single and mixed-user batches), pins, unpins, private and shared corpus
documents, forgets (whole user and one session), retrieves and searches, run
against a plain-dict model of who owns what. After every read we check that
only the caller's items came back; after every forget that nothing of the
user is left in the store, the engine's cache or the per-user index (BM25
postings, entity and co-occurrence tables, session graph); at the end of each
history that the store holds exactly the model, with no orphans.

* fakes (InMemoryStore + HashEmbedder): >= 1,000 histories by default;
* embedded Chroma: 50 histories, each also re-checked after closing the
  store and reopening the directory with a new ChromaStore and ChatRecall;
* the LangChain and LlamaIndex retrievers and the chat-history / pin-tool
  adapters go through the same ownership checks.

``CHATRECALL_STRESS=full`` multiplies the example counts by 5.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from chatrecall import (  # noqa: E402
    ChatRecall,
    Gate,
    NotFoundError,
    PinConfig,
    PinLimitError,
    Route,
    Strategy,
    Turn,
)
from chatrecall.core._index import tokenize  # noqa: E402
from chatrecall.core._types import (  # noqa: E402
    COLLECTION_CORPUS,
    COLLECTION_MEMORIES,
    COLLECTION_PINS,
    SHARED_OWNER,
)
from chatrecall.testing import HashEmbedder, InMemoryStore  # noqa: E402

FULL = os.environ.get("CHATRECALL_STRESS") == "full"
FAKE_EXAMPLES = 5000 if FULL else 1000
CHROMA_EXAMPLES = 250 if FULL else 50

# Users chosen to trip sloppy filters: case, trailing space, prefixes, path-like, non-BMP.
USERS = ("alice", "bob", "Bob", "bob ", "carol", "alice/../bob", "ü界𝄞")
SESSIONS = ("s1", "s2", "S1", "s1/..")
# One shared vocabulary with entity-like tokens, so a leak would actually score.
WORDS = (
    "we", "use", "Postgres", "for", "billing", "the", "cheese", "project", "Zanzibar", "launch", "on", "Friday",
    "ECONNREFUSED", "in", "config.yaml", "parse_notes()", "Marie", "visits", "Lyon", "deploy", "with", "Helm",
    "TriBridConfig", "is", "slow", "remember", "what", "did", "we", "decide", "about",
)
MESSAGES = (
    "remember what we decided about Postgres?",
    "what did I say about the Zanzibar launch?",
    "why does parse_notes() fail with ECONNREFUSED?",
    "hi",
    "what is in config.yaml for the cheese project",
    "Marie Lyon Helm",
)

text_st = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
user_st = st.sampled_from(USERS)
session_st = st.sampled_from(SESSIONS)

op_st = st.one_of(
    st.tuples(st.just("add"), user_st, session_st, text_st, st.sampled_from(("user", "assistant"))),
    st.tuples(st.just("add_many"), st.lists(st.tuples(user_st, session_st, text_st), min_size=1, max_size=6)),
    st.tuples(st.just("pin"), user_st, st.none() | session_st, text_st),
    st.tuples(st.just("unpin"), user_st, user_st, st.integers(0, 9)),
    st.tuples(st.just("doc"), st.none() | user_st, text_st),
    st.tuples(st.just("forget"), user_st, st.none() | session_st),
    st.tuples(
        st.just("retrieve"),
        user_st,
        st.none() | session_st,
        st.sampled_from(MESSAGES) | text_st,
        st.none() | st.sampled_from(list(Route)),
        st.none() | st.sampled_from(list(Strategy)),
    ),
    st.tuples(st.just("search"), user_st, st.none() | session_st, text_st, st.none() | st.sampled_from(list(Strategy))),
)
history_st = st.lists(op_st, min_size=1, max_size=25)


@dataclass
class Model:
    """Who owns what, kept next to the engine."""

    mem: dict[str, tuple[str, str]] = field(default_factory=dict)  # memory id -> (user, session)
    pins: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # pin id -> (user, session)
    docs: dict[str, str] = field(default_factory=dict)  # corpus chunk id -> owner (SHARED_OWNER = everyone)

    def mem_of(self, user: str, session: str | None = None) -> set[str]:
        return {i for i, (u, s) in self.mem.items() if u == user and session in (None, s)}

    def pins_of(self, user: str) -> set[str]:
        return {i for i, (u, _) in self.pins.items() if u == user}

    def docs_of(self, user: str) -> set[str]:
        return {i for i, o in self.docs.items() if o == user}


@dataclass
class Counters:
    histories: int = 0
    ops: int = 0
    reads_checked: int = 0
    forgets: int = 0


COUNTS: dict[str, Counters] = {}


# ---------------------------------------------------------------- checks
def check_index(cr: ChatRecall, user: str) -> None:
    """The user's cached index holds only the user's records, and nothing dangling.

    Every BM25 posting, entity list, co-occurrence key and session list must be
    explained by a record still in the index: otherwise a forgotten memory
    could still score (or be reached through the graph).
    """
    state = cr._users.get(user)
    if state is None:
        return
    idx = state.index
    recs = idx.records
    assert all(r.user_id == user for r in recs), f"foreign record in {user!r}'s index"
    assert set(idx.pos) == {r.id for r in recs}
    assert all(recs[p].id == rid for rid, p in idx.pos.items())
    assert len(idx.embeddings) == len(recs)
    ents = {k for r in recs for k in r.entities}
    for key, plist in getattr(idx, "_ent", {}).items():
        assert all(key in recs[p].entities for p in plist), f"entity {key!r} points at a record without it"
        if plist:
            assert key in ents
    assert {k for k, c in getattr(idx, "_cooc", {}).items() if c} <= ents
    for term, (plist, _) in getattr(idx, "_post", {}).items():
        assert all(term in tokenize(recs[p].text) for p in plist), f"BM25 term {term!r} dangles"
    sessions = getattr(idx, "_sessions", None)
    if sessions is not None:
        positions = sorted(p for plist in sessions.values() for p in plist)
        assert positions == list(range(len(recs)))
        for sid, plist in sessions.items():
            assert all(recs[p].session_id == sid for p in plist)
    assert set(getattr(idx, "_session_code", {})) <= {r.session_id for r in recs}, "forgotten session still coded"


def check_store(cr: ChatRecall, model: Model) -> None:
    """The store holds exactly the model: same ids, right owners, no orphans."""
    store = cr.store
    mem = store.get(COLLECTION_MEMORIES)
    assert {r.id: (r.user_id, r.session_id) for r in mem.records} == model.mem
    assert store.count(COLLECTION_MEMORIES) == len(model.mem) == len(mem.records)
    pins = store.get(COLLECTION_PINS)
    assert {r.id: (r.user_id, r.session_id or None) for r in pins.records} == model.pins
    docs = store.get(COLLECTION_CORPUS)
    assert {r.id: r.user_id for r in docs.records} == model.docs
    for user in USERS:
        got = store.get(COLLECTION_MEMORIES, where={"user_id": user})
        assert {r.id for r in got.records} == model.mem_of(user)
        assert cr.count(user) == len(model.mem_of(user))
        assert {p.id for p in cr.pins(user)} == model.pins_of(user)
        for p in cr.pins(user):
            assert p.user_id == user
        check_index(cr, user)


def check_forgotten(cr: ChatRecall, model: Model, user: str, session: str | None) -> None:
    """Nothing of the forgotten user (or session) is left anywhere."""
    store = cr.store
    where: dict[str, Any] = {"user_id": user} if session is None else {"user_id": user, "session_id": session}
    assert store.get(COLLECTION_MEMORIES, where=where).records == []
    assert store.get(COLLECTION_PINS, where=where).records == []
    if session is None:
        assert store.get(COLLECTION_CORPUS, where={"user_id": user}).records == []
        assert user not in cr._users, "forget(user) left the user's cached index behind"
    else:
        state = cr._users.get(user)
        if state is not None:
            assert not any(r.session_id == session for r in state.index.records)
            assert len(state.index.session_positions(session)) == 0
            assert state.pins is None or all(p.session_id != session for p in state.pins)
    for other, state in list(cr._users.items()):
        assert all(r.user_id == other for r in state.index.records)
        if session is None:
            assert not any(r.user_id == user for r in state.index.records)
    check_index(cr, user)


def owner(table: Mapping[str, tuple[str, Any]], rid: Any) -> str | None:
    """Owner of ``rid`` in a model table (None: the model never saw it)."""
    row = table.get(rid) if isinstance(rid, str) else None
    return None if row is None else row[0]


def check_items(user: str, session: str | None, items: Any, model: Model, *, corpus_ok: bool = True) -> None:
    for it in items:
        rec = it.record
        if it.source in ("memory", "recent"):
            assert owner(model.mem, it.id) == user, f"{user!r} got memory {it.id} of {model.mem.get(it.id)}"
            assert rec is not None and rec.user_id == user
            if it.source == "recent":
                assert rec.session_id == session
        elif it.source == "corpus":
            assert corpus_ok
            assert model.docs.get(it.id) in (SHARED_OWNER, user), f"{user!r} got corpus chunk of {model.docs.get(it.id)}"
        else:  # pragma: no cover - a new source kind must be added to this test
            raise AssertionError(f"unexpected source {it.source!r}")


def check_pins(user: str, session: str | None, pins: Any, model: Model, *, listing: bool = False) -> None:
    """Pins of ``user`` only; global ones plus ``session``'s (``listing`` without a session: all of them)."""
    for p in pins:
        owner = model.pins.get(p.id)
        assert owner is not None and owner[0] == user, f"{user!r} got pin {p.id} of {owner}"
        assert p.user_id == user and p.session_id == owner[1]
        if not (listing and session is None):
            assert owner[1] in (None, session), f"pin of session {owner[1]!r} injected in session {session!r}"


class Adapters:
    """LangChain and LlamaIndex front ends, when installed."""

    def __init__(self) -> None:
        import importlib

        self.lc: Any = None
        self.li: Any = None
        with contextlib.suppress(ImportError):  # the extra is not installed
            self.lc = importlib.import_module("chatrecall.adapters.langchain")
        with contextlib.suppress(ImportError):
            self.li = importlib.import_module("chatrecall.adapters.llamaindex")

    def check(self, cr: ChatRecall, user: str, session: str | None, query: str, model: Model) -> int:
        """Run every adapter read for ``user``; returns how many reads were checked."""
        n = 0
        if self.lc is not None:
            for mode in ("search", "retrieve"):
                lc_r = self.lc.ChatRecallRetriever(engine=cr, user_id=user, session_id=session, mode=mode, k=8)
                for doc in lc_r.invoke(query):
                    src = doc.metadata["source"]
                    if src == "corpus":
                        assert model.docs.get(doc.id) in (SHARED_OWNER, user)
                    else:
                        assert owner(model.mem, doc.id) == user
                        assert doc.metadata["user_id"] == user
                n += 1
            if session is not None:
                hist = self.lc.ChatRecallChatMessageHistory(cr, user_id=user, session_id=session)
                assert len(hist.messages) == len(model.mem_of(user, session))
                assert {r.id for r in hist.records()} == model.mem_of(user, session)
                n += 1
            tools = {t.name: t for t in self.lc.make_pin_tools(cr, user, session)}
            listing = next((t for name, t in tools.items() if "list" in name), None)
            if listing is not None:
                out = str(listing.invoke({}))
                foreign = {i for i, (u, _) in model.pins.items() if u != user}
                assert not any(pid in out for pid in foreign), "pin listing shows another user's pin"
                n += 1
        if self.li is not None:
            from llama_index.core.schema import QueryBundle

            for mode in ("search", "retrieve"):
                li_r = self.li.ChatRecallRetriever(cr, user, session_id=session, mode=mode, k=8)
                for nws in li_r.retrieve(QueryBundle(query)):
                    md = nws.node.metadata
                    nid = nws.node.node_id
                    if md["source"] == "corpus":
                        assert model.docs.get(nid) in (SHARED_OWNER, user)
                    elif md["source"] == "pin":
                        assert owner(model.pins, nid) == user
                    else:
                        assert owner(model.mem, nid) == user
                n += 1
        return n


ADAPTERS = Adapters()


# ---------------------------------------------------------------- driver
def run_history(cr: ChatRecall, history: list[tuple[Any, ...]], model: Model, c: Counters,
                *, adapters: bool = False) -> None:
    """Apply ``history`` to ``cr`` and ``model``, checking every read."""
    for op in history:
        c.ops += 1
        kind = op[0]
        if kind == "add":
            _, user, session, text, role = op
            rid = cr.add(text, user_id=user, session_id=session, role=role)
            assert model.mem.setdefault(rid, (user, session)) == (user, session)
        elif kind == "add_many":
            turns = [Turn(text=t, user_id=u, session_id=s) for u, s, t in op[1]]
            for rid, t in zip(cr.add_many(turns), turns):
                assert model.mem.setdefault(rid, (t.user_id, t.session_id)) == (t.user_id, t.session_id)
        elif kind == "pin":
            _, user, session, text = op
            try:
                pin = cr.pin(text, user_id=user, session_id=session)
            except PinLimitError:
                continue
            assert pin.user_id == user
            assert model.pins.setdefault(pin.id, (user, session)) == (user, session)
        elif kind == "unpin":
            _, caller, owner, n = op
            owned = sorted(model.pins_of(owner))
            if not owned:
                continue
            pid = owned[n % len(owned)]
            if caller != owner:
                with pytest.raises(NotFoundError):
                    cr.unpin(pid, user_id=caller)
                assert pid in {p.id for p in cr.pins(owner)}
            else:
                assert cr.unpin(pid, user_id=caller).user_id == owner
                del model.pins[pid]
        elif kind == "doc":
            _, owner, text = op
            for rid in cr.add_documents([text], user_id=owner):
                model.docs[rid] = SHARED_OWNER if owner is None else owner
        elif kind == "forget":
            _, user, session = op
            expect_mem = model.mem_of(user, session)
            expect_pins = {i for i, (u, s) in model.pins.items() if u == user and (session is None or s == session)}
            expect_docs = model.docs_of(user) if session is None else set()
            if not (expect_mem or expect_pins or expect_docs):
                with pytest.raises(NotFoundError):
                    cr.forget(user, session)
            else:
                rep = cr.forget(user, session)
                assert (rep.memories, rep.pins) == (len(expect_mem), len(expect_pins))
            for i in expect_mem:
                del model.mem[i]
            for i in expect_pins:
                del model.pins[i]
            for i in expect_docs:
                del model.docs[i]
            check_forgotten(cr, model, user, session)
            c.forgets += 1
        elif kind == "retrieve":
            _, user, session, msg, route, strategy = op
            res = cr.retrieve(msg, user_id=user, session_id=session, route=route, strategy=strategy, k=8)
            assert not res.degraded
            check_items(user, session, res.items, model)
            check_items(user, session, res.recent, model)
            check_items(user, session, res.rejected, model)
            check_pins(user, session, res.pins, model)
            if session is not None:
                check_items(user, session, cr.recent(user, session), model)
            listed = cr.pins(user, session)
            check_pins(user, session, listed, model, listing=True)
            assert {p.id for p in listed} == {
                i for i, (u, s) in model.pins.items() if u == user and (session is None or s in (None, session))
            }
            c.reads_checked += 1
            if adapters:
                c.reads_checked += ADAPTERS.check(cr, user, session, msg, model)
        elif kind == "search":
            _, user, session, query, strategy = op
            items = cr.search(query, user_id=user, session_id=session, strategy=strategy, k=10)
            check_items(user, session, items, model, corpus_ok=False)
            if session is not None:
                assert all(i.record is not None and i.record.session_id == session for i in items)
            c.reads_checked += 1
    check_store(cr, model)
    c.histories += 1


GATE = Gate()  # compiled once: building the default gate's patterns is the slow part of ChatRecall()


def _engine(store: Any) -> ChatRecall:
    # max_pins=4 so the pin limit is hit; a small user cache so eviction and reload happen too.
    return ChatRecall(store=store, embedder=HashEmbedder(dim=64), gate=GATE, pins=PinConfig(max_pins=4),
                      max_cached_users=4, sync_interval_s=3600.0)


SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "derandomize": False,
    "database": None,
}


@pytest.fixture(scope="module")
def fake_counts() -> Iterator[Counters]:
    c = COUNTS.setdefault("fakes", Counters())
    yield c
    print(f"\n[isolation/fakes] {c}")


@settings(max_examples=FAKE_EXAMPLES, **SETTINGS)  # type: ignore[arg-type]
@given(history=history_st)
def _fake_property(history: list[tuple[Any, ...]], c: Counters) -> None:
    cr = _engine(InMemoryStore())
    with contextlib.closing(cr):
        run_history(cr, history, Model(), c)


def test_isolation_property_on_fakes(fake_counts: Counters) -> None:
    """>= 1,000 random histories; every read returns only the caller's items."""
    _fake_property(c=fake_counts)  # type: ignore[call-arg]
    assert fake_counts.histories >= FAKE_EXAMPLES
    assert fake_counts.forgets > 0 and fake_counts.reads_checked > 0


@settings(max_examples=max(FAKE_EXAMPLES // 20, 50), **SETTINGS)  # type: ignore[arg-type]
@given(history=history_st)
def _adapter_property(history: list[tuple[Any, ...]], c: Counters) -> None:
    cr = _engine(InMemoryStore())
    with contextlib.closing(cr):
        run_history(cr, history, Model(), c, adapters=True)


def test_isolation_property_through_adapters() -> None:
    """The LangChain / LlamaIndex retrievers, chat history and pin tools honour isolation too."""
    if ADAPTERS.lc is None and ADAPTERS.li is None:
        pytest.skip("neither langchain nor llama-index is installed")
    c = COUNTS.setdefault("adapters", Counters())
    _adapter_property(c=c)  # type: ignore[call-arg]
    print(f"\n[isolation/adapters] {c}")
    assert c.histories >= 50


# ---------------------------------------------------------------- embedded Chroma + reopen
def _chroma_store(path: Path) -> Any:
    from chatrecall.adapters.chroma import ChromaStore

    return ChromaStore(path=path)


@settings(max_examples=CHROMA_EXAMPLES, **SETTINGS)  # type: ignore[arg-type]
@given(history=st.lists(op_st, min_size=1, max_size=12))
def _chroma_property(history: list[tuple[Any, ...]], c: Counters) -> None:
    with tempfile.TemporaryDirectory(prefix="cr-iso-") as tmp:
        path = Path(tmp) / "db"
        store = _chroma_store(path)
        model = Model()
        cr = _engine(store)
        try:
            run_history(cr, history, model, c)
        finally:
            cr.close()
            store.close()
        # A new process would see this: a fresh store and engine on the same directory.
        store2 = _chroma_store(path)
        cr2 = _engine(store2)
        try:
            check_store(cr2, model)
            for user in USERS:
                res = cr2.retrieve("remember what we decided about Postgres?", user_id=user, route="both", k=20)
                check_items(user, None, res.items, model)
                check_pins(user, None, res.pins, model)
                check_index(cr2, user)
                if not model.mem_of(user) and not model.pins_of(user):
                    assert not res.memories and not res.pins
            c.reads_checked += len(USERS)
        finally:
            cr2.close()
            store2.close()


def test_isolation_property_on_embedded_chroma_with_reopen() -> None:
    pytest.importorskip("chromadb")
    c = COUNTS.setdefault("chroma", Counters())
    _chroma_property(c=c)  # type: ignore[call-arg]
    print(f"\n[isolation/chroma] {c}")
    assert c.histories >= CHROMA_EXAMPLES


def test_forget_user_with_only_private_documents() -> None:
    """forget(user) of a user who only has private corpus documents removes them and says so."""
    cr = _engine(InMemoryStore())
    cr.add_documents(["Zanzibar handbook for alice"], user_id="alice")
    cr.add_documents(["shared handbook"])
    cr.forget("alice")
    assert cr.store.get(COLLECTION_CORPUS, where={"user_id": "alice"}).records == []
    assert cr.store.count(COLLECTION_CORPUS) == 1
    with pytest.raises(NotFoundError):
        cr.forget("alice")
