"""Hostile input against the public API and the framework adapters (hypothesis).

Every generated call must end in success or in one of our own errors (a
``ChatRecallError`` subclass with a short message naming the problem), and
must never change what was stored before: the store is snapshotted (ids,
texts, metadata, embeddings of every collection) before each case and
compared after. A call that failed must leave the store exactly as it was
(no half-written batch); a call that succeeded may only add records.

Inputs: text from every Unicode plane, lone surrogates, control and
bidi/zero-width characters, 1 MB strings, empty and whitespace-only strings,
wrong types (None, bytes, numbers, NaN, containers, objects), metadata keys
that look like filter operators (``$or``, ``$ne``) or shadow our own fields,
ids with path separators and SQL/JSON fragments, huge pins, bad ``k`` /
``route`` / ``strategy`` / ``budget_tokens`` / timestamps.

Runs on the fakes (many cases) and on embedded Chroma (fewer cases, the real
store must cope with whatever passes validation).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from chatrecall import ChatRecall, ChatRecallError, Gate, PinConfig, Turn  # noqa: E402
from chatrecall.core._types import COLLECTION_CORPUS, COLLECTION_MEMORIES, COLLECTION_PINS, SHARED_OWNER  # noqa: E402
from chatrecall.testing import HashEmbedder, InMemoryStore  # noqa: E402

FULL = os.environ.get("CHATRECALL_STRESS") == "full"
FAKE_EXAMPLES = 10_000 if FULL else 2000
CHROMA_EXAMPLES = 1000 if FULL else 200
GATE = Gate()
SEED_USERS = ("seed-alice", "seed-bob")
MB = 1_000_000
MAX_MESSAGE = 2000  # an error message longer than this is not "clear"

# ---------------------------------------------------------------- value strategies
PLANE_CHARS = [chr(c) for c in (0x41, 0xE9, 0x4E16, 0x1F600, 0x10400, 0x20000, 0x2A700, 0x30000, 0xE0001,
                                0xF0000, 0x10FFFD, 0x0301, 0x200B, 0x200D, 0x202E, 0xFEFF, 0xFFFD, 0x2028)]
SPECIAL = [
    "", " ", "\t\n", "\u3000", "\u200b", "\x00", "a\x00b", "\x07bell", "\x1b[31mred", "\x7f", "\x85", "\r\n\r\n",
    "\ud800", "ok\udfffok", "../../etc/passwd", "a/b\\c", "C:\\Windows\\system32", "~", ".", "..", "/",
    "__shared__", "__init__", "$or", "$ne", "*", "%", "'; DROP TABLE embeddings; --", '{"$ne": null}',
    "x" * 300, "é" * 257, "👩‍👩‍👧‍👦" * 10, "\u202egnp.exe", "NaN", "null", "None",
]
BIG = ["x" * MB, "ab " * (MB // 3), "é" * 200_001, "a" * 200_000, "🎉" * 100_000]
WRONG_TYPES = [None, 0, -1, 1.5, math.nan, math.inf, True, b"bytes", bytearray(b"x"), ["list"], ("t",), {"d": 1},
               {1, 2}, object(), dt.datetime(2024, 1, 1), np.float32(1.0), np.array(["a"])]

unicode_text = st.text(st.characters(codec="utf-8"), min_size=1, max_size=40)
surrogate_text = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=3).map(lambda s: "x" + s)
control_text = st.text(st.characters(max_codepoint=0x1F), min_size=1, max_size=10)
plane_text = st.lists(st.sampled_from(PLANE_CHARS), min_size=1, max_size=30).map("".join)
normal_text = st.sampled_from(["We use Postgres for billing", "remember the Zanzibar launch?", "hi", "why ECONNREFUSED?"])

hostile_str = st.one_of(unicode_text, surrogate_text, control_text, plane_text, st.sampled_from(SPECIAL),
                        normal_text, st.sampled_from(BIG))
hostile_value = st.one_of(hostile_str, st.sampled_from(WRONG_TYPES))
hostile_id = st.one_of(st.sampled_from(SPECIAL), unicode_text, surrogate_text, control_text,
                       st.sampled_from(["fuzz-user", "fuzz/user", "Fuzz User", "x" * 257]), st.sampled_from(WRONG_TYPES))
maybe_id = st.none() | hostile_id
hostile_key = st.one_of(st.sampled_from(["$or", "$ne", "$and", "$in", "$contains", "user_id", "session_id", "id",
                                         "text", "entities", "m.user_id", "", "a" * 200, "topic", "ü界", "a.b",
                                         "where", "x\x01"]), unicode_text, surrogate_text, st.sampled_from([1, None, ("t",)]))
hostile_scalar = st.one_of(hostile_str.filter(lambda s: len(s) < 1000), st.sampled_from(
    [math.nan, math.inf, -math.inf, 2**70, -(2**63), 2**63 - 1, True, 0.0, None, [1], {"$ne": 1}, b"x"]))
hostile_metadata = st.one_of(st.none(), st.dictionaries(hostile_key, hostile_scalar, max_size=4),
                             st.sampled_from([{"$or": [{"user_id": "seed-alice"}]}, {"user_id": "seed-alice"},
                                              {f"k{i}": i for i in range(40)}, "not a mapping", [("a", 1)]]))
hostile_k = st.one_of(st.none(), st.integers(-5, 2000), st.sampled_from([True, 1.5, "3", math.nan, 10**12]))
hostile_route = st.one_of(st.none(), st.sampled_from(["none", "memory", "corpus", "both", "MEMORY", "bogus", "", 1]))
hostile_strategy = st.one_of(st.none(), st.sampled_from(["hybrid", "recency", "relevance", "keyword", "entity",
                                                         "graph", "bogus", "", 3, "HYBRID"]))
hostile_budget = st.one_of(st.none(), st.integers(-10, 10**7), st.sampled_from([1.5, "100", math.inf, True]))
hostile_ts = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70),
                       st.sampled_from(["yesterday", dt.datetime(1, 1, 1), dt.datetime.now(dt.timezone.utc),
                                        dt.date(2024, 1, 1), b"1"]))
hostile_role = st.one_of(st.just("user"), st.just("assistant"), hostile_id)


def _turn(text: Any, user: Any, session: Any, role: Any, ts: Any, md: Any, as_dict: bool, extra: bool) -> Any:
    d = {"text": text, "user_id": user, "session_id": session, "role": role, "timestamp": ts, "metadata": md}
    if extra:
        d["$where"] = "1=1"
    if as_dict:
        return d
    try:
        return Turn(**d)  # Turn is a plain dataclass: it accepts anything, the engine validates
    except TypeError:
        return d


turn_st = st.builds(_turn, hostile_value, hostile_id, hostile_id, hostile_role, hostile_ts, hostile_metadata,
                    st.booleans(), st.booleans())
doc_st = st.one_of(hostile_value, st.fixed_dictionaries(
    {"text": hostile_value}, optional={"id": hostile_id, "title": hostile_value, "metadata": hostile_metadata}))

# ---------------------------------------------------------------- the calls
Call = tuple[str, Callable[[ChatRecall], Any]]


def _calls() -> st.SearchStrategy[Call]:
    core = [
        st.builds(lambda t, u, s, r, ts, md: ("add", lambda cr: cr.add(t, user_id=u, session_id=s, role=r,
                                                                          timestamp=ts, metadata=md)),
                  hostile_value, hostile_id, hostile_id, hostile_role, hostile_ts, hostile_metadata),
        st.builds(lambda ts: ("add_many", lambda cr: cr.add_many(ts)),
                  st.one_of(st.lists(turn_st, max_size=4), st.sampled_from(WRONG_TYPES), hostile_str)),
        st.builds(lambda ds, u: ("add_documents", lambda cr: cr.add_documents(ds, user_id=u)),
                  st.one_of(st.lists(doc_st, max_size=3), doc_st), maybe_id),
        st.builds(lambda t, u, s: ("pin", lambda cr: cr.pin(t, user_id=u, session_id=s)),
                  st.one_of(hostile_value, st.sampled_from(["p" * 5000, "word " * 30_000])), hostile_id, maybe_id),
        st.builds(lambda p, u: ("unpin", lambda cr: cr.unpin(p, user_id=u)), hostile_id, maybe_id),
        st.builds(lambda u, s: ("pins", lambda cr: cr.pins(u, s)), hostile_id, maybe_id),
        st.builds(lambda u, s: ("forget", lambda cr: cr.forget(u, s)), hostile_id, maybe_id),
        st.builds(lambda m, u, s, k, strat, r, b: ("retrieve", lambda cr: cr.retrieve(
            m, user_id=u, session_id=s, k=k, strategy=strat, route=r, budget_tokens=b)),
            hostile_value, st.one_of(hostile_id, st.sampled_from(SEED_USERS)), maybe_id, hostile_k,
            hostile_strategy, hostile_route, hostile_budget),
        st.builds(lambda q, u, k, strat, s: ("search", lambda cr: cr.search(
            q, user_id=u, k=k, strategy=strat, session_id=s)),
            hostile_value, st.one_of(hostile_id, st.sampled_from(SEED_USERS)), hostile_k, hostile_strategy, maybe_id),
        st.builds(lambda m: ("decide", lambda cr: cr.decide(m)), hostile_value),
        st.builds(lambda u, s: ("recent", lambda cr: cr.recent(u, s)), hostile_id, hostile_id),
        st.builds(lambda u, s: ("count", lambda cr: cr.count(u, s)), hostile_id, maybe_id),
        st.builds(lambda u, s: ("history", lambda cr: cr.history(u, s)), hostile_id, hostile_id),
    ]
    return st.one_of(*core, *_adapter_calls())


def _adapter_calls() -> list[st.SearchStrategy[Call]]:
    out: list[st.SearchStrategy[Call]] = []
    with contextlib.suppress(ImportError):
        from langchain_core.messages import AIMessage, HumanMessage

        from chatrecall.adapters import langchain as lc

        def lc_retriever(u: Any, k: Any, mode: Any, q: Any) -> Call:
            def run(cr: ChatRecall) -> Any:
                kw = {} if k is None else {"k": k}
                return lc.ChatRecallRetriever(engine=cr, user_id=u, mode=mode, **kw).invoke(q)
            return ("lc.retriever", run)

        def lc_history(u: Any, s: Any, texts: list[str]) -> Call:
            def run(cr: ChatRecall) -> Any:
                h = lc.ChatRecallChatMessageHistory(cr, user_id=u, session_id=s)
                h.add_messages([HumanMessage(content=t) if i % 2 == 0 else AIMessage(content=t)
                                for i, t in enumerate(texts)])
                return h.messages
            return ("lc.history", run)

        def lc_memory(u: Any, s: Any, q: Any, a: Any) -> Call:
            def run(cr: ChatRecall) -> Any:
                m = lc.ChatRecallMemory(engine=cr, user_id=u, session_id=s)
                m.load_memory_variables({"input": q})
                m.save_context({"input": q}, {"output": a})
            return ("lc.memory", run)

        out += [
            st.builds(lc_retriever, hostile_id, hostile_k, st.sampled_from(["search", "retrieve", "bogus", None]),
                      hostile_value),
            st.builds(lc_history, hostile_id, hostile_id, st.lists(hostile_str, max_size=3)),
            st.builds(lc_memory, hostile_id, hostile_id, hostile_value, hostile_value),
        ]
    with contextlib.suppress(ImportError):
        from llama_index.core.llms import ChatMessage

        from chatrecall.adapters import llamaindex as li

        def li_retriever(u: Any, k: Any, mode: Any, q: Any) -> Call:
            def run(cr: ChatRecall) -> Any:
                return li.ChatRecallRetriever(cr, u, k=k, mode=mode).retrieve(q)
            return ("li.retriever", run)

        def li_memory(u: Any, s: Any, text: str, role: str) -> Call:
            def run(cr: ChatRecall) -> Any:  # one write per case: each put is its own transaction
                m = li.ChatRecallMemory.from_defaults(engine=cr, user_id=u, session_id=s)
                m.put(ChatMessage(role=role, content=text))
                return m.get(text)
            return ("li.memory", run)

        out += [
            st.builds(li_retriever, hostile_id, hostile_k, st.sampled_from(["search", "retrieve", "bogus"]),
                      hostile_str),
            st.builds(li_memory, hostile_id, hostile_id, hostile_str, st.sampled_from(["user", "assistant", "tool"])),
        ]
    return out


CALLS = _calls()


# ---------------------------------------------------------------- snapshot
def snapshot(cr: ChatRecall) -> dict[str, dict[str, tuple[Any, ...]]]:
    out = {}
    for coll in (COLLECTION_MEMORIES, COLLECTION_PINS, COLLECTION_CORPUS):
        b = cr.store.get(coll, include_embeddings=True)
        emb = b.embeddings if b.embeddings is not None else np.zeros((len(b.records), 0))
        out[coll] = {r.id: (r.text, r.user_id, r.session_id, r.role, r.timestamp, r.seq, r.entities,
                            tuple(sorted(r.metadata.items())), np.asarray(emb[i]).round(5).tobytes())
                     for i, r in enumerate(b.records)}
    return out


SEEDED: dict[str, dict[str, tuple[Any, ...]]] = {}


def _seed(cr: ChatRecall) -> None:
    """Store the records no hostile call may touch (and remember them in SEEDED)."""
    cr.add_many([
        Turn(text="We use Postgres for billing", user_id="seed-alice", session_id="s1", metadata={"topic": "db"}),
        Turn(text="The Zanzibar launch is on Friday", user_id="seed-alice", session_id="s2"),
        Turn(text="Bob prefers Helm charts", user_id="seed-bob", session_id="s1"),
    ])
    cr.pin("Answer in French.", user_id="seed-alice")
    cr.add_documents(["Shared runbook: restart Postgres with systemctl."])
    SEEDED.clear()
    SEEDED.update(snapshot(cr))


class Tally:
    def __init__(self) -> None:
        self.cases = 0
        self.ok = 0
        self.errors: dict[str, int] = {}
        self.by_call: dict[str, int] = {}


def run_case(cr: ChatRecall, call: Call, tally: Tally) -> None:
    name, fn = call
    before = snapshot(cr)
    tally.cases += 1
    tally.by_call[name] = tally.by_call.get(name, 0) + 1
    try:
        fn(cr)
    except ChatRecallError as exc:
        msg = str(exc)
        assert msg and len(msg) <= MAX_MESSAGE, f"{name}: unclear error message ({len(msg)} chars)"
        tally.errors[type(exc).__name__] = tally.errors.get(type(exc).__name__, 0) + 1
        after = snapshot(cr)
        assert after == before, f"{name} failed with {type(exc).__name__} but changed the store"
        return
    tally.ok += 1
    after = snapshot(cr)
    # A successful call may add records, and may change what the fuzzer itself stored
    # (a forget of a fuzz user, a document re-added under the same id); the seeded
    # records of other users must be byte for byte what they were.
    for coll, rows in SEEDED.items():
        for rid, row in rows.items():
            assert after[coll].get(rid) == row, f"{name} changed seeded record {rid} in {coll}"


def reads_still_work(cr: ChatRecall) -> int:
    """Whatever the fuzzer managed to store must not break a later read of its owner.

    Returns the number of (user, session) pairs read back.
    """
    pairs = {(r.user_id, r.session_id) for r in cr.store.get(COLLECTION_MEMORIES).records}
    pairs |= {(r.user_id, r.session_id or "s") for r in cr.store.get(COLLECTION_PINS).records}
    for user, session in sorted(pairs):
        for route in ("memory", "both"):
            res = cr.retrieve("remember what we said about that?", user_id=user, session_id=session, route=route)
            assert isinstance(res.context, str) and res.explain()
        cr.search("that", user_id=user, session_id=session)
        cr.recent(user, session)
        cr.history(user, session)
        cr.pins(user, session)
    return len(pairs)


SETTINGS: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": list(HealthCheck),
    "database": None,
}


def _engine(store: Any) -> ChatRecall:
    """The engine of every fuzz run: small vectors, one shared gate, at most 5 pins."""
    return ChatRecall(store=store, embedder=HashEmbedder(dim=64), gate=GATE, pins=PinConfig(max_pins=5))


@pytest.fixture(scope="module")
def fake_engine_seeded() -> Iterator[ChatRecall]:
    cr = _engine(InMemoryStore())
    try:
        _seed(cr)
        yield cr
    finally:
        cr.close()


def test_fuzz_public_api_and_adapters_on_fakes(fake_engine_seeded: ChatRecall) -> None:
    tally = Tally()

    @settings(max_examples=FAKE_EXAMPLES, **SETTINGS)
    @given(call=CALLS)
    def prop(call: Call) -> None:
        run_case(fake_engine_seeded, call, tally)

    prop()
    pairs = reads_still_work(fake_engine_seeded)
    print(f"\n[fuzz/fakes] cases={tally.cases} ok={tally.ok} errors={tally.errors} by_call={tally.by_call} "
          f"read_back={pairs}")
    assert tally.cases >= FAKE_EXAMPLES
    assert tally.ok > 0 and sum(tally.errors.values()) > 0


def test_fuzz_public_api_on_embedded_chroma(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    from chatrecall.adapters.chroma import ChromaStore

    store = ChromaStore(path=tmp_path / "db")
    cr = _engine(store)
    tally = Tally()

    @settings(max_examples=CHROMA_EXAMPLES, **SETTINGS)
    @given(call=CALLS)
    def prop(call: Call) -> None:
        run_case(cr, call, tally)

    try:
        _seed(cr)
        prop()
        reads_still_work(cr)
        final = snapshot(cr)
    finally:
        cr.close()
        store.close()
    print(f"\n[fuzz/chroma] cases={tally.cases} ok={tally.ok} errors={tally.errors}")
    assert tally.cases >= CHROMA_EXAMPLES
    # Whatever got in reads back the same through a fresh client on the same directory.
    store2 = ChromaStore(path=tmp_path / "db")
    try:
        with ChatRecall(store=store2, embedder=HashEmbedder(dim=64), gate=GATE) as reopened:
            assert snapshot(reopened) == final
    finally:
        store2.close()


# ---------------------------------------------------------------- weird but valid: must succeed and round-trip
_RESERVED_KEYS = {"user_id", "session_id", "role", "timestamp", "seq", "entities", "id", "text"}


def _valid_text(v: str) -> bool:
    return bool(v.strip()) and "\x00" not in v and not any(0xD800 <= ord(c) <= 0xDFFF for c in v)


def _valid_id(v: str) -> bool:
    return (_valid_text(v) and len(v) <= 256 and not any(ord(c) < 32 or ord(c) == 127 for c in v)
            and not (v.startswith("__") and v.endswith("__")))


valid_text = st.one_of(unicode_text, plane_text, control_text.map(lambda s: "x" + s),
                       st.sampled_from(SPECIAL + ["a" * 200_000, "ab " * 60_000])).filter(_valid_text)
valid_id = st.one_of(unicode_text, plane_text, st.sampled_from(SPECIAL)).filter(_valid_id)
valid_key = st.one_of(unicode_text, st.sampled_from(["topic", "ü界", "a.b", "m.user_id", "where", "or", "ne"])).filter(
    lambda k: _valid_id(k) and len(k) <= 128 and not k.startswith("$") and k not in _RESERVED_KEYS)
valid_scalar = st.one_of(valid_text.filter(lambda v: len(v) < 500), st.integers(-(2**63) + 1, 2**63 - 1),
                         st.floats(allow_nan=False, allow_infinity=False), st.booleans())
valid_md = st.dictionaries(valid_key, valid_scalar, max_size=4)


def _same_metadata(got: dict[str, Any], want: dict[str, Any]) -> bool:
    """Equal, except that Chroma may move a float by an ulp or two (it does not keep all 17 digits)."""
    if got.keys() != want.keys():
        return False
    for k, w in want.items():
        g = got[k]
        if isinstance(w, float) and not isinstance(w, bool):
            if not (isinstance(g, float) and math.isclose(g, w, rel_tol=1e-14, abs_tol=1e-300)):
                return False
        elif type(g) is not type(w) or g != w:
            return False
    return True


def check_valid_round_trip(cr: ChatRecall, text: str, user: str, session: str, md: dict[str, Any],
                           pin_text: str, query: str, ts: Any = None) -> None:
    """Valid (if odd) input is stored and read back unchanged, and stays the user's own."""
    before = snapshot(cr)
    rid = cr.add(text, user_id=user, session_id=session, metadata=md, timestamp=ts)
    got = cr.store.get(COLLECTION_MEMORIES, ids=[rid]).records
    assert len(got) == 1
    rec = got[0]
    assert (rec.user_id, rec.session_id) == (user, session)
    if rid in before[COLLECTION_MEMORIES]:
        # The same turn again (equal up to surrounding whitespace): kept as first stored.
        assert rec.text.strip() == text.strip()
    else:
        assert rec.text == text
        assert _same_metadata(dict(rec.metadata), md), (dict(rec.metadata), md)
    assert rid in {r.id for r in cr.history(user, session)}
    try:
        pin = cr.pin(pin_text, user_id=user, session_id=session)
        assert pin.id in {p.id for p in cr.pins(user)}
        # The same pin again (equal up to surrounding whitespace) returns the one stored first.
        assert pin.text == pin_text if pin.id not in before[COLLECTION_PINS] else pin.text.strip() == pin_text.strip()
    except ChatRecallError as exc:  # only the pin caps may refuse valid text
        assert type(exc).__name__ == "PinLimitError", exc
    res = cr.retrieve(query, user_id=user, session_id=session, route="both")
    assert not res.degraded
    for it in (*res.items, *res.recent):
        assert it.record is not None and it.record.user_id in (user, "__shared__")
    after = snapshot(cr)
    for coll, rows in before.items():  # nothing stored before changed
        for r_id, row in rows.items():
            assert after[coll].get(r_id) == row


valid_ts = st.one_of(st.none(), st.floats(-62_135_596_800, 253_402_300_799),
                    st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)))
valid_case = st.tuples(valid_text, valid_id, valid_id, valid_md, valid_text, valid_text, valid_ts)


def test_weird_but_valid_input_round_trips_on_fakes(fake_engine_seeded: ChatRecall) -> None:
    n = {"cases": 0}

    @settings(max_examples=FAKE_EXAMPLES // 7, **SETTINGS)  # ~300 by default: 200k-char texts make cases slow
    @given(case=valid_case)
    def prop(case: tuple[Any, ...]) -> None:
        n["cases"] += 1
        check_valid_round_trip(fake_engine_seeded, *case)

    prop()
    print(f"\n[fuzz/valid fakes] cases={n['cases']}")


def test_weird_but_valid_input_round_trips_on_embedded_chroma(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    from chatrecall.adapters.chroma import ChromaStore

    store = ChromaStore(path=tmp_path / "db")
    cr = _engine(store)
    n = {"cases": 0}

    @settings(max_examples=CHROMA_EXAMPLES // 2, **SETTINGS)  # 100 by default
    @given(case=valid_case)
    def prop(case: tuple[Any, ...]) -> None:
        n["cases"] += 1
        check_valid_round_trip(cr, *case)

    try:
        _seed(cr)
        prop()
    finally:
        cr.close()
        store.close()
    print(f"\n[fuzz/valid chroma] cases={n['cases']}")


# ---------------------------------------------------------------- explicit cases
@pytest.mark.parametrize("text", ["x" * MB, "\ud800", "", "   ", "a\x00b", None, b"bytes", 42],
                         ids=["1MB", "lone-surrogate", "empty", "spaces", "NUL", "None", "bytes", "int"])
def test_explicit_hostile_text_everywhere(fake_engine_seeded: ChatRecall, text: Any) -> None:
    cr = fake_engine_seeded
    before = snapshot(cr)
    for call in (
        lambda: cr.add(text, user_id="fuzz", session_id="s"),
        lambda: cr.pin(text, user_id="fuzz"),
        lambda: cr.retrieve(text, user_id="seed-alice"),
        lambda: cr.search(text, user_id="seed-alice"),
        lambda: cr.add_documents([text]),
        lambda: cr.decide(text),
    ):
        with pytest.raises(ChatRecallError) as info:
            call()
        assert len(str(info.value)) <= MAX_MESSAGE
    assert snapshot(cr) == before


def test_operator_lookalike_metadata_is_refused_and_cannot_widen_a_filter(fake_engine_seeded: ChatRecall) -> None:
    cr = fake_engine_seeded
    for md in ({"$or": [{"user_id": "seed-alice"}]}, {"$ne": "x"}, {"user_id": "seed-alice"}, {"id": "x"}):
        with pytest.raises(ChatRecallError, match="reserved|operator|must be"):
            cr.add("hello", user_id="mallory", session_id="s", metadata=md)
    assert cr.count("mallory") == 0
    # Ids that look like paths or operators are plain data: they isolate like any other id.
    for uid in ("../seed-alice", "seed-alice/..", "$ne", "*", "seed-alice "):
        cr.add("We use Postgres for billing", user_id=uid, session_id="s")
        res = cr.retrieve("remember Postgres for billing?", user_id=uid, route="memory")
        for it in res.items:  # the user's own memories; a passage (the corpus probe) only a shared or own document
            assert it.record is not None
            assert it.record.user_id in ((SHARED_OWNER, uid) if it.source == "corpus" else (uid,)), it
    assert cr.count("seed-alice") == 2


def test_huge_pin_is_refused_cleanly(fake_engine_seeded: ChatRecall) -> None:
    cr = fake_engine_seeded
    before = snapshot(cr)
    with pytest.raises(ChatRecallError, match="max_tokens|characters"):
        cr.pin("word " * 40_000, user_id="seed-alice")
    with pytest.raises(ChatRecallError, match="characters"):
        cr.pin("x" * MB, user_id="seed-alice")
    assert snapshot(cr) == before


@pytest.mark.parametrize("bad", [0, None, {1, 2}, b"u"])
def test_llamaindex_memory_rejects_non_str_ids(fake_engine_seeded: ChatRecall, bad: Any) -> None:
    li = pytest.importorskip("chatrecall.adapters.llamaindex")
    with pytest.raises(ChatRecallError):
        li.ChatRecallMemory(engine=fake_engine_seeded, user_id=bad, session_id="s")
    with pytest.raises(ChatRecallError):
        li.ChatRecallMemory(engine=fake_engine_seeded, user_id="u", session_id=bad)


@pytest.mark.parametrize("ts", [2**70, -(2**70), 1e300, 253_402_300_800, -62_135_596_801])
def test_out_of_range_timestamps_are_refused(fake_engine_seeded: ChatRecall, ts: float) -> None:
    """A timestamp no datetime can show would break formatting the context on every later retrieve."""
    cr = fake_engine_seeded
    with pytest.raises(ChatRecallError, match="out of range"):
        cr.add("a turn from the far future", user_id="time-traveller", session_id="s", timestamp=ts)
    for edge in (253_402_300_799, -62_135_596_800, dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31)):
        cr.add(f"edge of time {edge}", user_id="time-traveller", session_id="s", timestamp=edge)
    res = cr.retrieve("remember the edge of time?", user_id="time-traveller", session_id="s", route="both")
    assert "edge of time" in res.context


def test_readding_a_document_under_its_id_replaces_it_whole(fake_engine_seeded: ChatRecall) -> None:
    """A shorter new version must not leave the old version's extra chunks behind."""
    cr = fake_engine_seeded
    long_text = " ".join(f"word{i}" for i in range(600))  # several chunks
    first = cr.add_documents([{"id": "handbook", "text": long_text}], user_id="doc-owner")
    assert len(first) > 1
    second = cr.add_documents([{"id": "handbook", "text": "The handbook is now one short paragraph."}],
                              user_id="doc-owner")
    stored = cr.store.get(COLLECTION_CORPUS, where={"user_id": "doc-owner"}).records
    assert [r.id for r in stored] == second
    assert stored[0].text == "The handbook is now one short paragraph."
