"""Engine behaviour on the fakes (fast): write path, read path, pins, budget, forget."""

from __future__ import annotations

import asyncio
import datetime
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from chatrecall import (
    BudgetConfig,
    ChatRecall,
    ConfigError,
    InvalidInputError,
    NotFoundError,
    PinConfig,
    PinLimitError,
    RetrievalConfig,
    Route,
    StoreError,
    StoreUnavailableError,
    Strategy,
    Turn,
)
from chatrecall.testing import HashEmbedder, InMemoryStore, ManualClock, fake_engine

DAY = 86400.0
Closing = Callable[[ChatRecall], ChatRecall]  # conftest.py fixtures
MakeEngine = Callable[..., ChatRecall]


# ``clock`` (a ManualClock), ``make_engine`` and ``closing`` come from conftest.py.
@pytest.fixture
def cr(make_engine: MakeEngine, clock: ManualClock) -> ChatRecall:
    return make_engine(clock=clock)


def _seed(cr: ChatRecall, clock: ManualClock) -> None:
    base = clock.t - 10 * DAY
    turns = [
        ("s1", "user", "I'm building the cheese project: a catalogue of French cheeses."),
        ("s1", "assistant", "For the cheese project use a cheeses table with region and milk type."),
        ("s1", "user", "We use Postgres, not SQLite, for the database."),
        ("s2", "user", "The import script fails with ECONNREFUSED on startup."),
        ("s2", "assistant", "ECONNREFUSED means Postgres is not listening; check DATABASE_URL in config.yaml."),
        ("s2", "user", "I wrote parse_tasting_notes() to split notes into aroma and finish."),
        ("s3", "user", "My sister Marie visits Lyon next month."),
    ]
    cr.add_many([
        Turn(text=t, user_id="alice", session_id=s, role=r, timestamp=base + i * 3600)
        for i, (s, r, t) in enumerate(turns)
    ])
    cr.add("Bob likes hiking in the Alps and his cheese project is secret.", user_id="bob", session_id="b1")


# ---------------------------------------------------------------- write path
def test_add_returns_stable_ids_and_dedupes(cr: ChatRecall) -> None:
    a = cr.add("hello there friend", user_id="u", session_id="s")
    b = cr.add("hello there friend", user_id="u", session_id="s")
    c = cr.add("hello there friend", user_id="u", session_id="other")
    assert a == b != c
    assert cr.count("u") == 2
    assert cr.count("u", "s") == 1
    # ids are content-derived: a fresh engine on another store computes the same id
    assert fake_engine().add("hello there friend", user_id="u", session_id="s") == a


def test_add_many_batches_embeddings_and_keeps_order(clock: ManualClock, closing: Closing) -> None:
    emb = HashEmbedder()
    cr = closing(ChatRecall(store=InMemoryStore(), embedder=emb, clock=clock))
    ids = cr.add_many([
        {"text": f"turn number {i}", "user_id": "u", "session_id": "s", "timestamp": clock.t + i} for i in range(20)
    ])
    assert len(set(ids)) == 20
    assert emb.calls == 20  # one embedding per new text, no re-embedding
    recent = cr.recent("u", "s")
    assert [r.text for r in recent][-1] == "turn number 19"


def test_entities_are_extracted_and_stored(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    batch = cr.store.get("memories", where={"user_id": "alice"})
    ents = {k for r in batch.records for k in r.entities}
    assert "econnrefused" in ents
    assert "parse_tasting_note" in ents  # plural-folded key
    assert "marie" in ents


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"text": ""}, "empty"),
        ({"text": "   \n"}, "empty"),
        ({"text": 42}, "int"),
        ({"text": "x" * 300_000}, "300,000"),
        ({"user_id": ""}, "user_id"),
        ({"user_id": None}, "NoneType"),
        ({"session_id": "a\x00b"}, "control"),
        ({"metadata": {"$or": 1}}, "$or"),
        ({"metadata": {"k": [1, 2]}}, "metadata['k']"),
        ({"timestamp": float("nan")}, "timestamp"),
        ({"timestamp": "yesterday"}, "ISO 8601"),
    ],
)
def test_bad_input_names_the_value_and_stores_nothing(cr: ChatRecall, kwargs: dict, needle: str) -> None:
    cr.add("keep me", user_id="u", session_id="s")
    args = {"text": "valid text", "user_id": "u", "session_id": "s"} | kwargs
    with pytest.raises(InvalidInputError) as exc:
        cr.add(**args)
    assert needle in str(exc.value)
    assert cr.count("u") == 1


def test_chat_roles_in_other_spellings_are_stored_canonical(cr: ChatRecall) -> None:
    # helper-96 (stop 33): role="Assistant " and role="bot" were stored as given, so the rules for the chatbot's
    # replies (they keep only the support of the turn they answer) never applied to them.
    cr.add("Kev quoted 1,240.", user_id="u7", session_id="s", role="Assistant ")
    cr.add("Noted, the quote is in.", user_id="u7", session_id="s", role="bot")
    cr.add("the plumber came round", user_id="u7", session_id="s", role="Human")
    cr.add("Caroline said hi", user_id="u7", session_id="s", role="Caroline")
    assert [r.role for r in cr.history("u7", "s")] == ["assistant", "assistant", "user", "Caroline"]
    with pytest.raises(InvalidInputError, match="role"):
        cr.add("x", user_id="u7", session_id="s", role="   ")


@pytest.mark.parametrize("typo, fix", [("assitant", "assistant"), ("Asistant", "assistant"), ("asssistant", "assistant"),
                                        ("usr", "user"), ("uesr", "user"), ("sytem", "system")])
def test_a_misspelt_chat_role_is_refused_naming_the_fix(cr: ChatRecall, typo: str, fix: str) -> None:
    # helper-101 (stop 33): role="assitant" was stored as a new role, silently, so the bot's replies under it lost
    # the assistant rules. A role one or two edits from a chat role is refused and names it; names are kept.
    cr.add("keep me", user_id="u8", session_id="s")
    with pytest.raises(InvalidInputError, match=f"'{fix}'") as exc:
        cr.add("Noted, the quote is in.", user_id="u8", session_id="s", role=typo)
    assert repr(typo) in str(exc.value)
    assert cr.count("u8") == 1
    for name in ("Sam", "Ursa", "Assia", "Susan", "Usha", "Melanie", "system"):
        cr.add(f"{name} says hi", user_id="u8", session_id="s", role=name)
    assert [r.role for r in cr.history("u8", "s")][1:] == ["Sam", "Ursa", "Assia", "Susan", "Usha", "Melanie", "system"]


def test_exclude_ids_leaves_turns_out_of_the_search_and_keeps_k(cr: ChatRecall) -> None:
    # stop 33's note: the LlamaIndex retriever dropped what its chat history showed after the search, so a turn
    # holding k memories injected fewer. The caller's shown turns are left out of the search itself.
    for i in range(8):
        cr.add(f"gym note {i}: my gym locker code was {4410 + i} that week", user_id="g", session_id="s1")
    q = "what's my gym locker code?"
    full = cr.retrieve(q, user_id="g", k=3, route="memory")
    assert len(full.items) == 3
    shown = frozenset(it.id for it in full.items[:2])
    res = cr.retrieve(q, user_id="g", k=3, route="memory", exclude_ids=shown | {"no-such-id"})
    assert len(res.items) == 3 and not shown & {it.id for it in res.items}, res.explain()
    assert any("left out: the caller shows them" in n for n in res.notes), res.notes
    ares = asyncio.run(cr.aretrieve(q, user_id="g", k=3, route="memory", exclude_ids=shown))
    assert [it.id for it in ares.items] == [it.id for it in res.items]
    with pytest.raises(InvalidInputError, match="exclude_ids"):
        cr.retrieve(q, user_id="g", exclude_ids="abc")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="exclude_ids"):
        cr.retrieve(q, user_id="g", exclude_ids=[1, 2])  # type: ignore[list-item]


@pytest.mark.parametrize("value", ["no", 0, None])
def test_include_recent_must_be_a_bool(cr: ChatRecall, value: object) -> None:
    """helper-118: include_recent='no' was accepted (a truthy string: the window injected)."""
    with pytest.raises(InvalidInputError, match=rf"include_recent={value!r} is invalid: must be True or False"):
        cr.retrieve("hi", user_id="g", include_recent=value)  # type: ignore[arg-type]


def test_a_user_with_no_memories_is_said_so(cr: ChatRecall) -> None:
    # helper-92 (stop 32): a user id with the wrong case found nothing, and no note said why
    cr.add("my cat is called Marmite", user_id="rhiannon", session_id="s")
    res = cr.retrieve("what's my cat called?", user_id="Rhiannon", session_id="s")
    assert res.route.wants_memory and not res.items
    assert any("'Rhiannon' has no stored memories" in n for n in res.notes), res.notes
    res = cr.retrieve("what's my cat called?", user_id="rhiannon", session_id="s2")
    assert not any("no stored memories" in n for n in res.notes) and res.items
    # a corpus turn looks in memory first (the probe): said there too (helper-94)
    res = cr.retrieve("What does TriBridConfig do?", user_id="Rhiannon", session_id="s")
    assert any("'Rhiannon' has no stored memories" in n for n in res.notes), res.notes


def test_documents_take_content_like_turns_and_refuse_unknown_keys(cr: ChatRecall) -> None:
    # helper-92 (stop 32): add_documents([{"content": ...}]) failed with "documents[0].text must be a str, got
    # NoneType" while add_many takes "content"; a misspelt key ("titel") was silently dropped
    cr.add_documents([{"content": "Opening hours: 9 to 5, closed on Sundays.", "title": "Hours"}], user_id="u")
    found = cr.retrieve("what are the opening hours?", user_id="u", route="corpus").items
    assert [i.text for i in found if i.source == "corpus"] == ["Opening hours: 9 to 5, closed on Sundays."]
    with pytest.raises(InvalidInputError, match=r"documents\[1\] has unknown field\(s\) 'titel'.*metadata"):
        cr.add_documents([{"text": "fine"}, {"text": "Hours", "titel": "x"}], user_id="u")
    with pytest.raises(InvalidInputError, match="both 'text' and 'content'"):
        cr.add_documents([{"text": "a", "content": "b"}], user_id="u")
    found = cr.retrieve("what are the opening hours?", user_id="u", route="corpus").items
    assert len([i for i in found if i.source == "corpus"]) == 1  # the refused batches stored nothing


def test_timestamps_may_be_iso_8601_strings_as_in_turns_files(cr: ChatRecall) -> None:
    # a new-user chat fed add_many the dicts of its JSONL export: "timestamp": "2026-11-16T08:58:00Z" was refused
    cr.add_many([{"text": "morning", "user_id": "u", "session_id": "s", "timestamp": "2026-11-16T08:58:00Z"},
                 {"text": "naive is UTC", "user_id": "u", "session_id": "s", "timestamp": "2026-11-16T09:00:00"},
                 {"text": "with an offset", "user_id": "u", "session_id": "s", "timestamp": "2026-11-16T10:00:00+01:00"}])
    cr.add("one more", user_id="u", session_id="s", timestamp="2026-11-16T09:30:00Z")
    got = {r.text: r.timestamp for r in cr.history("u", "s")}
    assert got == {"morning": 1_794_819_480.0, "naive is UTC": 1_794_819_600.0, "with an offset": 1_794_819_600.0,
                   "one more": 1_794_821_400.0}


def test_batch_with_one_bad_turn_writes_nothing(cr: ChatRecall) -> None:
    with pytest.raises(InvalidInputError, match="turns|text"):
        cr.add_many([{"text": "fine", "user_id": "u", "session_id": "s"}, {"text": "", "user_id": "u", "session_id": "s"}])
    assert cr.store.count("memories") == 0


def test_store_failure_on_write_leaves_index_unchanged(cr: ChatRecall) -> None:
    cr.add("first", user_id="u", session_id="s")
    cr.store.fail_next = StoreUnavailableError("down")  # type: ignore[attr-defined]
    with pytest.raises(StoreError):
        cr.add("second", user_id="u", session_id="s")
    assert [r.text for r in cr.recent("u", "s")] == ["first"]
    # and the write can be retried
    cr.add("second", user_id="u", session_id="s")
    assert cr.count("u") == 2


def test_config_validation_names_bad_value() -> None:
    with pytest.raises(ConfigError, match="phase1_top_k=7"):
        RetrievalConfig(phase1_top_k=7)
    with pytest.raises(ConfigError, match="weights"):
        RetrievalConfig(weights={"vibes": 1.0})
    with pytest.raises(ConfigError, match="mode='huge'"):
        BudgetConfig(mode="huge")
    with pytest.raises(ConfigError, match="max_pins=0"):
        PinConfig(max_pins=0)
    with pytest.raises(ConfigError, match="store"):
        ChatRecall(store=None, embedder=HashEmbedder())  # type: ignore[arg-type]


# ---------------------------------------------------------------- read path
def test_required_routes(cr: ChatRecall) -> None:
    assert cr.decide("How are you?").route is Route.NONE
    assert cr.decide("Remember that cheese project?").route is Route.MEMORY
    assert cr.decide("What does TriBridConfig do?").route is Route.CORPUS
    assert cr.decide("That is cool").route is Route.NONE
    assert cr.decide("what about that function?").route is Route.MEMORY


def test_small_talk_skips_search(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    res = cr.retrieve("thanks!", user_id="alice", session_id="s9")
    assert res.route is Route.NONE
    assert res.items == ()
    assert "embed" not in res.timings_ms
    assert cr.stats()["counters"]["searches_skipped.route_none"] == 1


def test_memory_recall_with_reasons_and_components(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    res = cr.retrieve("Remember that cheese project?", user_id="alice", session_id="s9")
    assert res.gate.route is Route.MEMORY
    assert res.gate.reasons, "the gate must say which patterns fired"
    assert res.items and "cheese project" in res.items[0].text
    top = res.items[0]
    assert set(top.components) >= {"relevance"}
    assert 0 < top.score <= 1
    assert "cheese project" in res.context
    assert "Relevant memories" in res.context
    assert res.tokens_used == sum(i.tokens for i in res.items) + sum(r.tokens for r in res.recent)
    assert set(res.timings_ms) >= {"gate", "embed", "memory", "total"}


def test_the_memory_heading_says_when_now_is(cr: ChatRecall, clock: ManualClock) -> None:
    """helper-85: dated memories and "would we lose the deposit if we postponed now?", with no "now" to read them
    against. The heading says it, from the engine's clock (the same moment recency was read from)."""
    _seed(cr, clock)
    res = cr.retrieve("Remember that cheese project?", user_id="alice", session_id="s9")
    when = datetime.datetime.fromtimestamp(clock.t, datetime.timezone.utc)
    assert res.at == clock.t
    heading = next(line for line in res.context.splitlines() if line.startswith("## Relevant memories"))
    assert f"now {when:%Y-%m-%d %H:%M}, {when:%A}" in heading and "UTC" in heading
    clock.advance(3 * DAY)
    later = cr.retrieve("Remember that cheese project?", user_id="alice", session_id="s9")
    when = datetime.datetime.fromtimestamp(clock.t, datetime.timezone.utc)
    assert later.at == clock.t and f"now {when:%Y-%m-%d %H:%M}, {when:%A}" in later.context
    assert "## Relevant memories" not in cr.retrieve("thanks!", user_id="alice", session_id="s9").context


def test_users_are_isolated(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    for q in ["Remember the cheese project?", "what about hiking in the Alps, remember?"]:
        res = cr.retrieve(q, user_id="alice", k=20)
        assert all(i.record.user_id == "alice" for i in res.items if i.record)
        assert "Bob" not in res.context
        assert all(i.record.user_id == "alice" for i in cr.search(q, user_id="alice", k=50) if i.record)
    assert all(i.record.user_id == "bob" for i in cr.search("cheese", user_id="bob", k=50) if i.record)


def test_identifier_anchor_makes_memory_useful(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    cr.add_documents(["ECONNREFUSED is a socket error raised when the peer refuses a TCP connection."])
    res = cr.retrieve("remember the ECONNREFUSED problem?", user_id="alice")
    assert res.route is Route.MEMORY
    assert any("memory useful" in n for n in res.notes)
    assert all(i.source == "memory" for i in res.items)
    assert "ECONNREFUSED" in res.items[0].text


def test_memory_not_useful_falls_back_to_corpus(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    cr.add_documents([{"id": "k8s", "title": "Kubernetes", "text": "Kubernetes schedules pods onto nodes. Helm packages charts."}])
    res = cr.retrieve("remember how kubernetes schedules pods onto nodes?", user_id="alice")
    assert any("not useful" in n or "corpus" in n for n in res.notes) or res.passages
    assert res.passages and "Kubernetes" in res.passages[0].text


def test_corpus_route_reads_shared_and_own_documents_only(cr: ChatRecall) -> None:
    cr.add_documents(["TriBridConfig configures the tri-bridge network layer and its failover policy."])
    cr.add_documents(["TriBridConfig private notes of bob: the secret failover trick."], user_id="bob")
    res = cr.retrieve("What does TriBridConfig do?", user_id="alice")
    assert res.route is Route.CORPUS
    assert res.passages and "tri-bridge" in res.passages[0].text
    assert "bob" not in res.context
    res_b = cr.retrieve("What does TriBridConfig do?", user_id="bob")
    assert any("secret" in p.text for p in res_b.passages)


def test_correction_forces_memory_pass_this_and_next_turn(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    res = cr.retrieve("no, I meant the earlier thing", user_id="alice", session_id="s9")
    assert res.gate.correction
    assert res.gate.route.wants_memory or any("correction" in n for n in res.notes)
    nxt = cr.retrieve("what are the tasting notes fields?", user_id="alice", session_id="s9")
    assert any("correction" in n for n in nxt.notes)
    assert nxt.memories
    third = cr.retrieve("what are the tasting notes fields?", user_id="alice", session_id="s9")
    assert not any("correction" in n for n in third.notes)


def test_a_correction_right_after_a_corpus_turn_searches_the_corpus_too(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    cr.add_documents(["TriBridConfig configures the tri-bridge network layer and its failover policy."])
    assert cr.retrieve("What does TriBridConfig do?", user_id="alice", session_id="s1").route is Route.CORPUS
    fix = cr.retrieve("no, I meant the failover policy", user_id="alice", session_id="s1")
    assert fix.gate.correction and fix.gate.route is Route.MEMORY
    assert any("corpus searched too" in n for n in fix.notes) and "corpus" in fix.timings_ms
    # only right after one: the same correction in a session whose last turn searched memory stays memory only
    cr.retrieve("Remember that cheese project?", user_id="alice", session_id="s2")
    mem = cr.retrieve("no, I meant the failover policy", user_id="alice", session_id="s2")
    assert not any("corpus searched too" in n for n in mem.notes)
    # and another session's corpus turn does not count
    other = cr.retrieve("no, I meant the failover policy", user_id="alice", session_id="s3")
    assert not any("corpus searched too" in n for n in other.notes)


def test_recent_window_is_token_capped(clock: ManualClock, make_engine: MakeEngine) -> None:
    cr = make_engine(clock=clock, retrieval=RetrievalConfig(recent_turns=4, recent_turn_max_tokens=20,
                                                            recent_max_tokens=50))
    cr.add("short hello", user_id="u", session_id="s", timestamp=clock.t - 30)
    cr.add("tool output " + "x y z " * 500, user_id="u", session_id="s", role="tool", timestamp=clock.t - 20)
    cr.add("what next?", user_id="u", session_id="s", timestamp=clock.t - 10)
    rec = cr.recent("u", "s")
    assert sum(r.tokens for r in rec) <= 50
    assert all(r.tokens <= 20 for r in rec)
    assert any("truncated" in r.why for r in rec)
    assert rec[-1].text == "what next?"


def test_include_recent_false_leaves_the_window_out_of_context_and_of_the_memories(
        clock: ManualClock, make_engine: MakeEngine) -> None:
    # The caller sends its own history (an agent with a checkpointer): the window is not injected, and its
    # turns must not come back as memories either.
    cr = make_engine(clock=clock)
    cr.add("our staging database is Postgres 15", user_id="u", session_id="old", timestamp=clock.t - 900)
    cr.add("the staging database moved to Postgres 16 today", user_id="u", session_id="s", timestamp=clock.t - 30)
    q = "remember which Postgres our staging database runs?"
    shown = cr.retrieve(q, user_id="u", session_id="s")
    assert [r.text for r in shown.recent] == ["the staging database moved to Postgres 16 today"]
    assert "## Recent conversation" in shown.context
    res = cr.retrieve(q, user_id="u", session_id="s", include_recent=False)
    assert res.recent == () and "## Recent conversation" not in res.context
    assert "moved to Postgres 16" not in res.context  # not a memory either: the caller already has it
    assert [i.text for i in res.items] == ["our staging database is Postgres 15"]
    assert res.tokens_used < shown.tokens_used
    assert any("not injected" in n for n in res.notes)


@pytest.mark.parametrize("strategy", list(Strategy))
def test_each_strategy_returns_own_user_ranked_items(cr: ChatRecall, clock: ManualClock, strategy: Strategy) -> None:
    _seed(cr, clock)
    items = cr.search("cheese project with Postgres", user_id="alice", k=3, strategy=strategy)
    assert 1 <= len(items) <= 3
    scores = [i.score for i in items]
    assert scores == sorted(scores, reverse=True)
    assert all(i.record and i.record.user_id == "alice" for i in items)


def test_recency_strategy_prefers_newest(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    items = cr.search("anything", user_id="alice", k=2, strategy="recency")
    assert "Marie" in items[0].text


def test_entity_strategy_finds_entity_mentions(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    items = cr.search("Marie", user_id="alice", k=2, strategy="entity")
    assert "Marie" in items[0].text
    assert "entity" in items[0].why


def test_graph_expansion_reaches_neighbour_turns(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    items = cr.search("import script fails on startup", user_id="alice", k=5, strategy="graph")
    texts = [i.text for i in items]
    # the assistant's answer shares few words with the query; it arrives as the next turn
    assert any("DATABASE_URL" in t for t in texts)
    assert any("hop" in i.why for i in items)


def test_unknown_strategy_is_rejected(cr: ChatRecall) -> None:
    with pytest.raises(InvalidInputError, match="strategy='magic'"):
        cr.search("x", user_id="u", strategy="magic")


# ---------------------------------------------------------------- budget
def test_budget_never_exceeded_and_rejections_explained(cr: ChatRecall, clock: ManualClock) -> None:
    for i in range(30):
        cr.add(f"cheese fact {i}: " + "aged comte gruyere " * 10, user_id="u", session_id=f"s{i}",
               timestamp=clock.t - i * 60)
    res = cr.retrieve("remember the cheese facts?", user_id="u", k=30, route="both", budget_tokens=200)
    assert res.tokens_used <= 200
    assert any("over budget" in r.why for r in res.rejected)


def test_near_duplicates_suppressed(cr: ChatRecall) -> None:
    cr.add("the deploy uses helm charts on the staging cluster", user_id="u", session_id="a")
    cr.add("the deploy uses helm charts on the staging cluster!", user_id="u", session_id="b")
    res = cr.retrieve("remember the helm deploy on staging?", user_id="u", route="both")
    assert len([i for i in res.items if "helm" in i.text]) == 1
    assert any("near-duplicate" in r.why for r in res.rejected)


def test_tiers_mode_caps_background(clock: ManualClock, make_engine: MakeEngine) -> None:
    cr = make_engine(clock=clock, budget=BudgetConfig(mode="tiers", max_tokens=400, background_share=0.0,
                                                     critical_score=0.9, relevant_score=0.8))
    for i in range(5):
        cr.add(f"random note {i} about gardening tomatoes", user_id="u", session_id="s")
    res = cr.retrieve("remember the gardening notes?", user_id="u", route="memory")
    assert all(i.tier != "background" for i in res.items)
    assert any("background share" in r.why for r in res.rejected)


def test_dynamic_budget_grows_with_complexity() -> None:
    from chatrecall.core import budget_for

    cfg = BudgetConfig(mode="dynamic", min_tokens=100, max_tokens=1000)
    small = budget_for("hi", [], Route.MEMORY, cfg)
    big = budget_for("compare the Postgres and SQLite setups and explain why we chose one over the other for "
                     "billing and analytics", [], Route.BOTH, cfg)
    assert 100 <= small < big <= 1000


def test_pluggable_token_counter(clock: ManualClock, make_engine: MakeEngine) -> None:
    cr = make_engine(clock=clock, token_counter=lambda s: len(s))  # characters as tokens
    cr.add("twelve chars", user_id="u", session_id="s")
    assert cr.recent("u", "s")[0].tokens == len("twelve chars")


# ---------------------------------------------------------------- pins
def test_pins_always_present_capped_and_persisted(cr: ChatRecall, clock: ManualClock, closing: Closing) -> None:
    p = cr.pin("We use Postgres, not SQLite.", user_id="alice")
    assert cr.pin("We use Postgres, not SQLite.", user_id="alice").id == p.id
    res = cr.retrieve("ok cool", user_id="alice")
    assert res.route is Route.NONE
    assert res.pins == (p,) and "Postgres, not SQLite" in res.context
    # persisted: a new engine on the same store sees it
    other = closing(ChatRecall(store=cr.store, embedder=cr.embedder))
    assert [x.text for x in other.pins("alice")] == ["We use Postgres, not SQLite."]
    assert cr.pins("bob") == []
    cr.unpin(p.id)
    assert "Postgres" not in cr.retrieve("ok cool", user_id="alice").context
    with pytest.raises(NotFoundError, match=p.id):
        cr.unpin(p.id)


def test_pin_caps_raise_and_change_nothing(clock: ManualClock, make_engine: MakeEngine) -> None:
    cr = make_engine(clock=clock, pins=PinConfig(max_pins=2, max_tokens=12))
    cr.pin("rule one", user_id="u")
    cr.pin("rule two", user_id="u")
    with pytest.raises(PinLimitError, match="max_pins=2"):
        cr.pin("rule three", user_id="u")
    assert [p.text for p in cr.pins("u")] == ["rule one", "rule two"]
    cr2 = make_engine(clock=clock, pins=PinConfig(max_pins=5, max_tokens=5))
    with pytest.raises(PinLimitError, match="max_tokens=5"):
        cr2.pin("this pin is far too long for the cap", user_id="u")
    assert cr2.pins("u") == []


def test_session_pins_only_in_their_session(cr: ChatRecall) -> None:
    cr.pin("global rule", user_id="u")
    cr.pin("only in s1", user_id="u", session_id="s1")
    assert {p.text for p in cr.retrieve("ok", user_id="u", session_id="s1").pins} == {"global rule", "only in s1"}
    assert {p.text for p in cr.retrieve("ok", user_id="u", session_id="s2").pins} == {"global rule"}


def test_unpin_of_other_users_pin_is_not_found(cr: ChatRecall) -> None:
    p = cr.pin("alice rule", user_id="alice")
    with pytest.raises(NotFoundError):
        cr.unpin(p.id, user_id="bob")
    assert cr.pins("alice") == [p]
    with pytest.raises(NotFoundError):
        cr.unpin(p, user_id="bob")  # the Pin itself is checked the same way


def test_unpin_takes_the_pin_that_pin_returned(cr: ChatRecall) -> None:
    # chat18: a new user wrote `p = cr.pin(...)` then `cr.unpin(p)`; it raised "pin_id must be a str"
    keep = cr.pin("answer in metric units", user_id="u")
    p = cr.pin("never suggest gluten", user_id="u")
    assert cr.unpin(p).id == p.id
    assert cr.pins("u") == [keep]
    with pytest.raises(NotFoundError):
        cr.unpin(p)  # already gone
    with pytest.raises(InvalidInputError, match="pin_id"):
        cr.unpin(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------- forget
def test_forget_user_and_session(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    cr.pin("alice rule", user_id="alice")
    rep = cr.forget("alice", "s3")
    assert rep.memories == 1 and rep.pins == 0
    assert all("Marie" not in i.text for i in cr.search("Marie Lyon", user_id="alice", k=10))
    rep = cr.forget("alice")
    assert rep.memories == 6 and rep.pins == 1
    assert cr.count("alice") == 0 and cr.pins("alice") == []
    assert cr.search("cheese", user_id="alice") == ()
    assert cr.count("bob") == 1
    with pytest.raises(NotFoundError, match="alice"):
        cr.forget("alice")


# ---------------------------------------------------------------- faults, metrics, threads
class SlowStore(InMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.delay = 0.0

    def query(self, *a, **kw):  # type: ignore[no-untyped-def]
        import time

        time.sleep(self.delay)
        return super().query(*a, **kw)


def test_phase1_timeout_is_recorded_and_does_not_block(clock: ManualClock, closing: Closing) -> None:
    store = SlowStore()
    cr = closing(ChatRecall(store=store, embedder=HashEmbedder(), clock=clock,
                            retrieval=RetrievalConfig(phase1_timeout_ms=50)))
    cr.add("the cheese project uses Postgres", user_id="u", session_id="s")
    store.delay = 1.0
    res = cr.retrieve("remember the cheese project?", user_id="u")
    assert any("over its 50 ms budget" in n for n in res.notes)
    assert res.timings_ms["memory"] < 900
    assert cr.stats()["counters"]["phase1_timeouts"] == 1


def test_the_memory_probe_keeps_the_phase1_budget(clock: ManualClock, closing: Closing) -> None:
    """A corpus-only turn looks in memory first: a slow store must not hold it back past the phase-1 budget."""
    store = SlowStore()
    cr = closing(ChatRecall(store=store, embedder=HashEmbedder(), clock=clock,
                            retrieval=RetrievalConfig(phase1_timeout_ms=50)))
    cr.add("the cheese project uses Postgres", user_id="u", session_id="s")
    cr.add_documents([{"id": "pg", "text": "How to tune Postgres connection pooling with PgBouncer."}])
    store.delay = 1.0
    res = cr.retrieve("how do I tune postgres connection pooling?", user_id="u")
    assert res.gate.route.value == "corpus"
    assert any("over its 50 ms budget" in n for n in res.notes), res.notes
    assert res.timings_ms["memory"] < 900
    assert cr.stats()["counters"]["probes.memory"] == 1


def test_store_down_degrades_retrieve(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    cr.store.fail_next = StoreUnavailableError("server down")  # type: ignore[attr-defined]
    res = cr.retrieve("remember the cheese project?", user_id="alice", route="both")
    assert res.degraded


def test_metrics_snapshot(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    for m in ["hi", "remember the cheese project?", "What does TriBridConfig do?"]:
        cr.retrieve(m, user_id="alice", session_id="s1")
    snap = cr.stats()
    c = snap["counters"]
    assert c["routes.gate.none"] == 1 and c["routes.gate.memory"] == 1
    # the memory question searches memory; the corpus question looks in memory first (the memory probe,
    # which replaces the fallback after a weak corpus search)
    assert c["probes.memory"] == 1 and "fallbacks.memory" not in c
    assert c["searches_run.memory"] == 2
    assert snap["histograms"]["latency_ms.total"]["count"] == 3
    assert snap["histograms"]["latency_ms.total"]["p95"] >= snap["histograms"]["latency_ms.total"]["p50"]
    assert snap["per_conversation"]["alice/s1"]["turns"] == 3
    assert sum(v["turns"] for v in snap["per_day"].values()) == 3
    # helper-103 (stop 34): the days were the wall clock's, not the engine's clock (a replay over weeks was one day)
    day = time.strftime("%Y-%m-%d", time.gmtime(clock.t))
    assert snap["per_day"][day]["turns"] == 3, snap["per_day"]
    clock.advance(86400)
    cr.retrieve("hi", user_id="alice", session_id="s1")
    assert snap["per_day"].keys() < cr.stats()["per_day"].keys()


def test_threads_do_not_mix_users(clock: ManualClock, make_engine: MakeEngine) -> None:
    cr = make_engine(clock=clock)
    errors: list[BaseException] = []

    def work(u: int) -> None:
        try:
            for i in range(40):
                cr.add(f"user{u} fact {i} about topic{i % 5}", user_id=f"u{u}", session_id="s")
                if i % 5 == 0:
                    for it in cr.search(f"topic{i % 5}", user_id=f"u{u}", k=5):
                        assert it.text.startswith(f"user{u} ")
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(u,)) for u in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [cr.count(f"u{u}") for u in range(4)] == [40] * 4


def test_cache_rebuilds_from_store_after_eviction(clock: ManualClock, closing: Closing) -> None:
    store = InMemoryStore()
    cr = closing(ChatRecall(store=store, embedder=HashEmbedder(), clock=clock, max_cached_users=1))
    cr.add("alpha project Zanzibar", user_id="a", session_id="s")
    cr.add("beta project", user_id="b", session_id="s")  # evicts a
    assert "a" not in cr._users
    items = cr.search("Zanzibar", user_id="a", strategy="entity")
    assert items and "Zanzibar" in items[0].text


def test_second_process_writes_are_seen(clock: ManualClock, closing: Closing) -> None:
    store = InMemoryStore()
    emb = HashEmbedder()
    a = closing(ChatRecall(store=store, embedder=emb, clock=clock))
    b = closing(ChatRecall(store=store, embedder=emb, clock=clock))
    a.search("warm up", user_id="u") if a.count("u") else None
    a.add("first from a", user_id="u", session_id="s")
    a.search("first", user_id="u")  # a's cache now holds the user
    b.add("the Zanzibar launch is on Friday", user_id="u", session_id="s")
    items = a.search("Zanzibar launch", user_id="u", k=2)
    assert items and "Zanzibar" in items[0].text


def test_topk_helper_is_exact() -> None:
    from chatrecall.core._ranking import topk as _topk

    rng = np.random.default_rng(0)
    x = rng.random(1000).astype(np.float32)
    assert list(_topk(x, 10)) == list(np.argsort(-x)[:10])


def test_knowledge_question_naming_a_remembered_entity_searches_both(cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    cr.add_documents(["ECONNREFUSED is returned when no process listens on the target port."])
    res = cr.retrieve("Why does ECONNREFUSED happen?", user_id="alice")
    assert res.gate.route is Route.CORPUS
    assert any("from memory" in n for n in res.notes)
    assert res.memories and res.passages
    # an unknown entity stays corpus-only
    res2 = cr.retrieve("What does TriBridConfig do?", user_id="alice")
    assert not res2.memories


def test_both_without_documents_is_a_memory_route(engine: ChatRecall) -> None:
    msg = "what wine goes with the dish I'm making tonight"
    for text in ["I'm making mushroom risotto tonight", "tonight's dish needs parmesan and white wine",
                 "the dinner tonight is for six friends", "Ana is vegetarian, so the dish has no meat",
                 "dessert tonight is a lemon tart", "I bought arborio rice for the risotto",
                 "the wine shop closes at eight", "we eat at seven thirty tonight"]:
        engine.add(text, user_id="u", session_id="s1")
    res = engine.retrieve(msg, user_id="u", session_id="s2")
    assert res.gate.route is Route.BOTH
    assert res.route is Route.MEMORY, "no documents: 'both' is the small memory lookup, not the full top k"
    assert any("no corpus documents" in n for n in res.notes)
    assert len(res.items) <= engine.retrieval_config.phase1_top_k
    engine.add_documents(["Mushroom risotto pairs well with a dry white such as Pinot Grigio."])
    res = engine.retrieve(msg, user_id="u", session_id="s2")
    assert not any("no corpus documents" in n for n in res.notes)
    assert len(res.items) > engine.retrieval_config.phase1_top_k, "with documents, 'both' takes the full top k"


# ---------------------------------------------------------------- min_score on a memory route
def test_a_memory_route_keeps_its_best_memory_under_min_score(make_engine: MakeEngine, clock: ManualClock) -> None:
    # chat19: a new user's six memories all scored under min_score, and "which orchestrator do we use?" got
    # nothing although the right memory ranked first. The route asked for memory: its best is kept.
    cr = make_engine(clock=clock, retrieval=RetrievalConfig(min_score=0.99))
    cr.add_many([Turn(text=t, user_id="sam", session_id="d1", timestamp=clock() + i)
                 for i, t in enumerate(["our main pipeline runs on Airflow 2.9", "my dog Pixel is a border collie",
                                        "lol pixel just ate a sock"])])
    res = cr.retrieve("which pipeline orchestrator do we use?", user_id="sam", session_id="d2", route="memory")
    assert len(res.items) == 1, res.explain()
    best = max((i for i in (*res.items, *res.rejected) if i.source == "memory"), key=lambda i: i.score)
    assert res.items[0].id == best.id
    assert any("best memory kept under min_score" in n for n in res.notes)
    assert all(i.source == "memory" and "min_score" in i.why for i in res.rejected if i.id != best.id
               and i.why.startswith("score"))
    # a route that does not ask for memory keeps nothing under min_score
    cr.add_documents(["Airflow schedules DAGs of tasks."])
    res = cr.retrieve("which pipeline orchestrator do we use?", user_id="sam", session_id="d2", route="corpus")
    assert res.items == () and not any("best memory" in n for n in res.notes), res.explain()


def test_a_statement_keeps_no_memory_under_min_score(make_engine: MakeEngine, clock: ManualClock) -> None:
    # nu48 (stop 45): "Our dog Pepper is staying with Tom's mum..." went to memory and was given the best of the
    # user's memories at 0.087. A statement asks for nothing: nothing under min_score is kept. One that says it
    # recalls ("I forgot ...") still keeps its best memory.
    cr = make_engine(clock=clock, retrieval=RetrievalConfig(min_score=0.99))
    cr.add_many([Turn(text=t, user_id="sam", session_id="d1", timestamp=clock() + i)
                 for i, t in enumerate(["our main pipeline runs on Airflow 2.9", "my dog Pixel is a border collie"])])
    res = cr.retrieve("Our cat Miso is staying with my sister this week.", user_id="sam", session_id="d2",
                      route="memory")
    assert res.items == () and not any("best memory" in n for n in res.notes), res.explain()
    res = cr.retrieve("I forgot which orchestrator our pipeline runs on", user_id="sam", session_id="d2",
                      route="memory")
    assert len(res.items) == 1 and any("best memory kept under min_score" in n for n in res.notes), res.explain()


# ---------------------------------------------------------------- the gate: shared, warmed
def test_engines_with_the_default_gate_config_share_one_gate(make_engine: MakeEngine) -> None:
    from chatrecall import GateConfig

    a, b = make_engine(), make_engine()
    assert a.gate is b.gate  # built once per process: about 0.25 s each before
    custom = make_engine(gate=GateConfig(memory_threshold=0.7))
    assert custom.gate is not a.gate and custom.gate.config.memory_threshold == 0.7
    assert a.retrieve("thanks!", user_id="u").route is Route.NONE


def test_warm_compiles_the_gate_now_or_in_the_background(make_engine: MakeEngine) -> None:
    from chatrecall import GateConfig

    cr = make_engine(gate=GateConfig(memory_threshold=0.61))  # its own gate, not yet built
    t = cr.warm(background=True)
    assert t is not None and t.daemon
    t.join(30)
    assert cr.gate.warm() == 0, "the background thread compiled every regex"
    other = make_engine(gate=GateConfig(memory_threshold=0.62))
    assert other.warm() is None and other.gate.warm() == 0


def test_a_failing_background_warm_up_warns_and_breaks_nothing(make_engine: MakeEngine) -> None:
    class BrokenWarm(HashEmbedder):
        def warm(self) -> None:
            raise OSError("model files unreadable")

    cr = make_engine(embedder=BrokenWarm())
    with pytest.warns(RuntimeWarning, match="background warm-up failed.*model files unreadable"):
        t = cr.warm(background=True)
        assert t is not None
        t.join(30)
    cr.add("we use Postgres for billing", user_id="u", session_id="s")
    assert cr.retrieve("which database do we use for billing?", user_id="u").items


def test_a_memory_question_asking_for_advice_plans_both_when_there_are_documents(
        cr: ChatRecall, clock: ManualClock) -> None:
    _seed(cr, clock)
    q = "what rules apply to my cheese project?"
    no_docs = cr.retrieve(q, user_id="alice", session_id="s1")
    assert not any("advice" in n for n in no_docs.notes)  # nothing to read: a memory turn
    cr.add_documents(["Cheese labelling rules: name the milk, the region and the ageing of each cheese."])
    res = cr.retrieve(q, user_id="alice", session_id="s2")
    assert res.gate.route is Route.MEMORY and any("asks for advice" in n for n in res.notes)
    assert "corpus" in res.timings_ms
    plain = cr.retrieve("Remember the cheese project?", user_id="alice", session_id="s3")
    assert not any("asks for advice" in n for n in plain.notes)
    from chatrecall import RetrievalConfig

    off = ChatRecall(store=cr.store, embedder=cr.embedder, retrieval=RetrievalConfig(advice_both=False))
    assert not any("asks for advice" in n for n in off.retrieve(q, user_id="alice", session_id="s4").notes)


def test_a_when_question_shows_the_time_fit_not_recency(engine: ChatRecall, clock: ManualClock) -> None:
    # A new user read "recency=1.00 ... time match" on three-week-old turns: the slot holds the time fit
    engine.add("The plumber came on Tuesday at 9am", user_id="u", session_id="s1")
    clock.advance(21 * 86400)
    res = engine.retrieve("when did the plumber come?", user_id="u", session_id="s2")
    mems = [i for i in res.items if i.source == "memory"]
    assert mems and all("time" in i.components and "recency" not in i.components for i in mems)
    assert "time=1.00" in res.explain() and "recency=" not in res.explain()
    plain = engine.retrieve("what about the plumber?", user_id="u", session_id="s3")
    assert all("recency" in i.components for i in plain.items if i.source == "memory")


def test_why_says_when_a_reply_rides_on_the_question_it_answers(cr: ChatRecall) -> None:
    # helper-94 (stop 32): a reply outranked a later update on every shown component; the share its question handed
    # it was in the score and nowhere in explain()
    cr.add("what's the wifi password at the office?", user_id="u", session_id="s1", role="user")
    cr.add("It's BlueFalcon42, case-sensitive.", user_id="u", session_id="s1", role="assistant")
    found = cr.search("what's the office wifi password?", user_id="u", k=5)
    reply = next(i for i in found if i.text.startswith("It's BlueFalcon42"))
    assert "answers the question before it (+" in reply.why, reply.why
    asked = next(i for i in found if i.text.startswith("what's the wifi"))
    assert "answers the question" not in asked.why


def test_manual_clock_takes_seconds_or_an_aware_datetime() -> None:
    # helper-101 (stop 33): ManualClock(datetime(...)) failed with a bare "float() argument must be ..."
    start = datetime.datetime(2026, 3, 2, 9, 0, tzinfo=datetime.timezone.utc)
    assert ManualClock(start)() == start.timestamp() == ManualClock(start.timestamp())()
    with pytest.raises(InvalidInputError, match="naive datetime"):
        ManualClock(datetime.datetime(2026, 3, 2, 9, 0))
    with pytest.raises(InvalidInputError, match="POSIX seconds"):
        ManualClock("2026-03-02")  # type: ignore[arg-type]



def test_manual_clock_checks_a_jump_and_a_step_too() -> None:
    # helper-122 (stop 41): "clock.t = datetime(...)" (a naive one) was taken as is, and the next retrieve failed
    # deep in the engine with a bare TypeError
    clock = ManualClock(1_000.0)
    later = datetime.datetime(2026, 3, 2, 9, 0, tzinfo=datetime.timezone.utc)
    clock.t = later  # an aware datetime is a jump, as in the constructor
    assert clock() == later.timestamp() and isinstance(clock.t, float)
    with pytest.raises(InvalidInputError, match=r"ManualClock\.t = .*naive datetime"):
        clock.t = datetime.datetime(2026, 3, 2, 9, 0)  # type: ignore[assignment]
    with pytest.raises(InvalidInputError, match="POSIX seconds"):
        clock.t = "2026-03-02"  # type: ignore[assignment]
    with pytest.raises(InvalidInputError, match="advance"):
        clock.advance("60")  # type: ignore[arg-type]
    assert clock() == later.timestamp()  # nothing moved


def test_a_search_no_pattern_chose_says_which_words_did() -> None:
    # helper-122 (stop 41): a statement the learned combiner sent to memory showed empty reasons, nothing else
    from chatrecall.testing import fake_engine

    cr = fake_engine()
    cr.add("The Harlow Bakery site is due on the 28th of February.", user_id="u", session_id="s1")
    res = cr.retrieve("Harlow called — the deadline moved to the 14th of March.", user_id="u", session_id="s2")
    assert res.gate.route.wants_memory and not res.gate.reasons
    note = next(n for n in res.notes if n.startswith("no pattern fired"))
    assert "'deadline'" in note, note
    # a turn a pattern explains gets no such note; nor does a turn that searches nothing
    assert not any(n.startswith("no pattern fired") for n in cr.retrieve("when is the Harlow site due?",
                                                                          user_id="u", session_id="s2").notes)
    assert not any(n.startswith("no pattern fired") for n in cr.retrieve("lol", user_id="u", session_id="s2").notes)
    cr.close()


def test_forgetting_a_user_with_nothing_stored_says_what_to_do() -> None:
    from chatrecall import NotFoundError
    from chatrecall.testing import fake_engine

    cr = fake_engine()
    with pytest.raises(NotFoundError, match="nothing stored for user 'new'.*catch chatrecall.NotFoundError"):
        cr.forget(user_id="new")
    cr.close()
