"""Turns kept in the process while the store is unavailable: ``add(..., defer_if_unavailable=True)``.

A chat turn whose answer is already paid for must not fail because the store is down: the turns are kept in
order (at most ``ChatRecall.MAX_PENDING_TURNS`` per user), served from the cached index meanwhile, and written
before the next write or retrieve for that user that reaches the store. Without the keyword a write raises, as
before. Fast: the in-memory store as a server that goes down (``tests/_stores.DownStore``); the same on a real
``chroma run`` server through LangChain's agent is in ``tests/test_server_outage_chat.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest
from _stores import DownStore

from chatrecall import ChatRecall, InvalidInputError, NotFoundError, StoreUnavailableError, Turn
from chatrecall.core._types import COLLECTION_MEMORIES
from chatrecall.testing import InMemoryStore, ManualClock, fake_engine

Make = Callable[..., tuple[DownStore, ChatRecall]]


@pytest.fixture
def make(closing: Callable[[ChatRecall], ChatRecall], clock: ManualClock) -> Make:
    def build(*, shared: bool = False, **kwargs: object) -> tuple[DownStore, ChatRecall]:
        store = DownStore(shared=shared)
        return store, closing(fake_engine(store=store, clock=clock, **kwargs))

    return build


def _stored(store: DownStore, user_id: str = "u1") -> list[tuple[str, str]]:
    """(role, text) of the user's stored turns in conversation order, read from the store itself (past ``down``)."""
    recs = InMemoryStore.get(store, COLLECTION_MEMORIES, where={"user_id": user_id}).records
    return [(r.role, r.text) for r in sorted(recs, key=lambda r: (r.timestamp, r.seq))]


def _turn(cr: ChatRecall, clock: ManualClock, user: str, answer: str, session: str = "s1") -> list[str]:
    clock.advance(60.0)
    return cr.add_many([Turn(text=user, user_id="u1", session_id=session),
                        Turn(text=answer, user_id="u1", session_id=session, role="assistant")],
                       defer_if_unavailable=True)


def test_turns_kept_while_down_are_served_then_written_in_order_at_the_next_retrieve(
        make: Make, clock: ManualClock, caplog: pytest.LogCaptureFixture) -> None:
    store, cr = make()
    _turn(cr, clock, "My oven is a Rational iCombi.", "Noted: a Rational iCombi.")
    up_ids = [r.id for r in InMemoryStore.get(store, COLLECTION_MEMORIES).records]
    store.down = True
    with caplog.at_level(logging.WARNING, logger="chatrecall"):
        ids = _turn(cr, clock, "The walk-in fridge is a Foster FSL400.", "Foster FSL400, noted.")
        _turn(cr, clock, "Our fryer is a Valentine EVO 2200.", "Valentine EVO, noted.")
    assert len(ids) == 2 and len(set(ids) | set(up_ids)) == 4
    assert cr.pending_turns("u1") == 4 and cr.pending_turns() == 4 and cr.pending_turns("u2") == 0
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned and "unavailable" in warned[0] and "u1" in warned[0], warned
    assert "Foster" not in " ".join(warned), "the log names the user, never what was said"
    assert cr.stats()["counters"]["turns_deferred"] == 4

    # still down: the turns are in the recent window and found by search, the result says what waits
    res = cr.retrieve("which fridge do we have?", user_id="u1", session_id="s1")
    assert res.degraded and any("4 turns" in n and "wait" in n for n in res.notes), res.notes
    assert [i.text for i in res.recent][-2:] == ["Our fryer is a Valentine EVO 2200.", "Valentine EVO, noted."]
    assert any("Foster" in i.text for i in cr.search("walk-in fridge Foster", user_id="u1"))
    assert _stored(store) == [("user", "My oven is a Rational iCombi."), ("assistant", "Noted: a Rational iCombi.")]

    # back: the next retrieve writes them first, in order, once
    store.down = False
    res = cr.retrieve("which fridge do we have?", user_id="u1", session_id="s1")
    assert not res.degraded, res.notes
    assert any("4 turns" in n and "written" in n for n in res.notes), res.notes
    assert cr.pending_turns("u1") == 0
    assert _stored(store) == [
        ("user", "My oven is a Rational iCombi."), ("assistant", "Noted: a Rational iCombi."),
        ("user", "The walk-in fridge is a Foster FSL400."), ("assistant", "Foster FSL400, noted."),
        ("user", "Our fryer is a Valentine EVO 2200."), ("assistant", "Valentine EVO, noted.")]
    assert store.upserts[-1] == ids + [i for i in store.upserts[-1] if i not in ids], "written oldest first"
    assert cr.count("u1") == 6 and cr.stats()["counters"]["pending_written"] == 4
    assert [r.text for r in cr.history("u1", "s1")][2] == "The walk-in fridge is a Foster FSL400."


def test_without_the_keyword_a_write_raises_and_keeps_nothing(make: Make) -> None:
    store, cr = make()
    cr.add("My oven is a Rational iCombi.", user_id="u1", session_id="s1")
    before = len(cr._users["u1"].index)
    store.down = True
    with pytest.raises(StoreUnavailableError, match="upsert into 'memories'"):
        cr.add("The fridge is a Foster.", user_id="u1", session_id="s1")
    assert cr.pending_turns("u1") == 0 and len(cr._users["u1"].index) == before
    with pytest.raises(InvalidInputError, match="defer_if_unavailable"):
        cr.add("x", user_id="u1", session_id="s1", defer_if_unavailable="yes")  # type: ignore[arg-type]


def test_the_same_turn_deferred_twice_is_kept_once_and_ids_match_a_normal_write(make: Make) -> None:
    store, cr = make()
    cr.add("warm up", user_id="u1", session_id="s1")
    store.down = True
    a = cr.add("The fridge is a Foster.", user_id="u1", session_id="s1", defer_if_unavailable=True)
    b = cr.add("The fridge is a Foster.", user_id="u1", session_id="s1", defer_if_unavailable=True)
    assert a == b and cr.pending_turns("u1") == 1
    store.down = False
    assert cr.add("The fridge is a Foster.", user_id="u1", session_id="s1") == a  # writes the waiting turn
    assert cr.pending_turns("u1") == 0 and cr.count("u1") == 2


def test_a_write_that_landed_despite_the_error_is_not_duplicated(make: Make, clock: ManualClock) -> None:
    store, cr = make()
    _turn(cr, clock, "hello", "hi")
    store.down, store.lands = True, True  # the server wrote it, the client saw a timeout
    _turn(cr, clock, "The fridge is a Foster.", "Foster, noted.")
    assert cr.pending_turns("u1") == 2
    store.down = store.lands = False
    cr.retrieve("which fridge?", user_id="u1", session_id="s1")
    assert cr.pending_turns("u1") == 0 and cr.count("u1") == 4
    assert [t for _, t in _stored(store)] == ["hello", "hi", "The fridge is a Foster.", "Foster, noted."]


def test_a_later_write_goes_after_the_waiting_turns_and_raises_while_still_down(make: Make,
                                                                                clock: ManualClock) -> None:
    store, cr = make()
    _turn(cr, clock, "hello", "hi")
    store.down = True
    _turn(cr, clock, "first during the outage", "ok 1")
    clock.advance(60.0)
    with pytest.raises(StoreUnavailableError):  # a plain write still raises, and leaves the waiting turns alone
        cr.add("a plain write while down", user_id="u1", session_id="s1")
    assert cr.pending_turns("u1") == 2
    store.down = False
    clock.advance(60.0)
    cr.add("after the outage", user_id="u1", session_id="s1")
    assert cr.pending_turns("u1") == 0
    assert [t for _, t in _stored(store)] == ["hello", "hi", "first during the outage", "ok 1", "after the outage"]
    assert store.upserts[-2:] == [[cr.history("u1", "s1")[2].id, cr.history("u1", "s1")[3].id],
                                  [cr.history("u1", "s1")[4].id]]


def test_bound_drops_the_oldest_counts_and_warns(make: Make, clock: ManualClock,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    store, cr = make()
    cap = ChatRecall.MAX_PENDING_TURNS
    assert cap == 256
    cr.add("hello", user_id="u1", session_id="s1")
    store.down = True
    extra = 5
    with caplog.at_level(logging.WARNING, logger="chatrecall"):
        for i in range(cap + extra):
            clock.advance(1.0)
            cr.add(f"note number {i}", user_id="u1", session_id="s1", defer_if_unavailable=True)
    assert cr.pending_turns("u1") == cap
    assert cr.stats()["counters"]["pending_dropped"] == extra
    dropped = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert dropped and str(cap) in dropped[0], dropped
    index = cr._users["u1"].index
    assert "note number 0" not in {r.text for r in index.records}, "a dropped turn is not served either"
    assert "note number 5" in {r.text for r in index.records}
    store.down = False
    cr.retrieve("what was note number 7?", user_id="u1", session_id="s1")
    texts = [t for _, t in _stored(store)]
    assert texts == ["hello"] + [f"note number {i}" for i in range(extra, cap + extra)]


def test_an_uncached_user_is_kept_too_and_loaded_with_the_waiting_turns(make: Make, clock: ManualClock) -> None:
    store, cr = make()
    cr.add("My oven is a Rational iCombi.", user_id="u1", session_id="s1")
    cr._users.clear()  # a new process, or the user left the LRU cache
    store.down = True
    res = cr.retrieve("hi", user_id="u1", session_id="s1")
    assert res.degraded
    _turn(cr, clock, "The fridge is a Foster.", "Foster, noted.")
    assert cr.pending_turns("u1") == 2
    store.down = False
    res = cr.retrieve("which fridge do we have?", user_id="u1", session_id="s1")
    assert cr.pending_turns("u1") == 0 and not res.degraded, res.notes
    assert [t for _, t in _stored(store)] == ["My oven is a Rational iCombi.", "The fridge is a Foster.",
                                              "Foster, noted."]
    assert [i.text for i in res.recent] == ["My oven is a Rational iCombi.", "The fridge is a Foster.",
                                            "Foster, noted."]


def test_an_uncached_users_repeat_of_a_stored_turn_is_not_rewritten(make: Make, clock: ManualClock) -> None:
    # with the index unloadable, a repeated text cannot be recognised as stored: it must not move the stored turn
    store, cr = make()
    rid = cr.add("My oven is a Rational iCombi.", user_id="u1", session_id="s1")
    stamp = cr.history("u1", "s1")[0].timestamp
    cr._users.clear()
    store.down = True
    clock.advance(3600.0)
    assert cr.add("My oven is a Rational iCombi.", user_id="u1", session_id="s1", defer_if_unavailable=True) == rid
    assert cr.pending_turns("u1") == 1
    store.down = False
    cr.retrieve("which oven?", user_id="u1", session_id="s1")
    assert cr.pending_turns("u1") == 0 and cr.count("u1") == 1
    assert cr.history("u1", "s1")[0].timestamp == stamp


def test_a_sync_while_turns_wait_keeps_them(make: Make, clock: ManualClock) -> None:
    # the store answers a read but not the write (or came back between two calls): the periodic sync and the
    # shared-store probe must not drop the waiting turns from the cached index as "gone from the store"
    store, cr = make(shared=True, sync_interval_s=1.0)
    _turn(cr, clock, "hello", "hi")
    store.down = True
    _turn(cr, clock, "The fridge is a Foster.", "Foster, noted.")
    store.down = False
    clock.advance(10.0)
    cr._state("u1")  # the periodic sync, before anything writes them
    assert "The fridge is a Foster." in {r.text for r in cr._users["u1"].index.records}
    cr._probe_shared(cr._users["u1"], "u1", 1e12)
    assert "The fridge is a Foster." in {r.text for r in cr._users["u1"].index.records}
    assert cr.pending_turns("u1") == 2


def test_forget_drops_waiting_turns_so_nothing_comes_back(make: Make, clock: ManualClock) -> None:
    store, cr = make()
    _turn(cr, clock, "hello", "hi", session="s1")
    store.down = True
    _turn(cr, clock, "secret one", "ok", session="s1")
    _turn(cr, clock, "kept two", "ok two", session="s2")
    store.down = False
    cr.forget("u1", "s1")
    assert cr.pending_turns("u1") == 2
    cr.retrieve("anything about two?", user_id="u1", session_id="s2")
    assert [t for _, t in _stored(store)] == ["kept two", "ok two"]
    store.down = True
    _turn(cr, clock, "secret three", "ok three", session="s2")
    store.down = False
    cr.forget("u1")
    assert cr.pending_turns("u1") == 0
    with pytest.raises(NotFoundError):
        cr.forget("u1")
    cr.retrieve("anything?", user_id="u1", session_id="s2")
    assert _stored(store) == []


def test_close_writes_what_it_can_and_warns_about_the_rest(clock: ManualClock,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    store = DownStore()
    cr = fake_engine(store=store, clock=clock)
    _turn(cr, clock, "hello", "hi")
    store.down = True
    _turn(cr, clock, "said during the outage", "ok")
    store.down = False
    cr.close()  # the store is back: written on the way out
    assert [t for _, t in _stored(store)] == ["hello", "hi", "said during the outage", "ok"]

    store2 = DownStore()
    cr2 = fake_engine(store=store2, clock=clock)
    cr2.add("hello", user_id="u1", session_id="s1")
    store2.down = True
    cr2.add("lost with the process", user_id="u1", session_id="s1", defer_if_unavailable=True)
    with caplog.at_level(logging.WARNING, logger="chatrecall"):
        cr2.close()
    assert any("1 turn" in r.getMessage() and "lost" in r.getMessage() for r in caplog.records), caplog.records


def test_async_add_defers_too(make: Make) -> None:
    store, cr = make()
    cr.add("hello", user_id="u1", session_id="s1")
    store.down = True

    async def run() -> list[str]:
        one = await cr.aadd("async one", user_id="u1", session_id="s1", defer_if_unavailable=True)
        two = await cr.aadd_many([{"text": "async two", "user_id": "u1", "session_id": "s1"}],
                                 defer_if_unavailable=True)
        return [one, *two]

    ids = asyncio.run(run())
    assert len(ids) == 2 and cr.pending_turns("u1") == 2
    store.down = False
    cr.retrieve("async?", user_id="u1", session_id="s1")
    assert [t for _, t in _stored(store)] == ["hello", "async one", "async two"]


def test_history_and_pins_come_from_the_cache_only_when_asked_and_cached(make: Make, clock: ManualClock) -> None:
    """``history`` / ``pins(..., cached_if_unavailable=True)``, the chat-history reads of the adapters: a cached user
    is served from the process while the store is down; without the keyword, or in a cold process, they raise."""
    store, cr = make()
    _turn(cr, clock, "My oven is a Rational iCombi.", "Noted: a Rational iCombi.")
    _turn(cr, clock, "Unrelated.", "Fine.", session="s2")
    pin = cr.pin("Answer in metric units.", user_id="u1")
    store.down = True
    clock.advance(60.0)  # past the pins' cache age: pins() asks the store
    _turn(cr, clock, "The walk-in fridge is a Foster FSL400.", "Foster FSL400, noted.")  # kept in the process
    texts = ["My oven is a Rational iCombi.", "Noted: a Rational iCombi.", "The walk-in fridge is a Foster FSL400.",
             "Foster FSL400, noted."]
    assert [r.text for r in cr.history("u1", "s1", cached_if_unavailable=True)] == texts
    assert [r.text for r in asyncio.run(cr.ahistory("u1", "s1", cached_if_unavailable=True))] == texts
    assert [p.id for p in cr.pins("u1", "s1", cached_if_unavailable=True)] == [pin.id]
    assert [p.id for p in asyncio.run(cr.apins("u1", cached_if_unavailable=True))] == [pin.id]
    for read in (lambda: cr.history("u1", "s1"), lambda: cr.pins("u1"),
                 lambda: cr.history("u2", "s1", cached_if_unavailable=True),  # u2: never read by this process
                 lambda: cr.pins("u2", cached_if_unavailable=True)):
        with pytest.raises(StoreUnavailableError, match="test server is unavailable"):
            read()
    for bad in ("yes", 1, None):
        with pytest.raises(InvalidInputError, match=rf"cached_if_unavailable={bad!r} is invalid: must be True or False"):
            cr.history("u1", "s1", cached_if_unavailable=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match=rf"cached_if_unavailable={bad!r} is invalid"):
            cr.pins("u1", cached_if_unavailable=bad)  # type: ignore[arg-type]
    store.down = False
    assert [r.text for r in cr.history("u1", "s1")] == texts  # the kept turns, with what the store returns


def test_a_server_back_within_the_resync_window_is_not_reported_degraded(make: Make, clock: ManualClock) -> None:
    # A server store (shared): the freshness probe runs at most once a second per user, so a turn right after a
    # quick restart skips it. Writing the waiting turns proves the store is back; the turn must not be marked
    # degraded by the failure before it (a killed and restarted `chroma run`, tests/test_server_outage_chat.py).
    store, cr = make(shared=True)
    _turn(cr, clock, "My oven is a Rational iCombi.", "Noted: a Rational iCombi.")
    cr.retrieve("what oven do we have?", user_id="u1", session_id="s1")
    store.down = True
    _turn(cr, clock, "The walk-in fridge is a Foster FSL400.", "Foster FSL400, noted.")
    res = cr.retrieve("which fridge do we have?", user_id="u1", session_id="s1")
    assert res.degraded, res.notes
    store.down = False
    res = cr.retrieve("which fridge do we have?", user_id="u1", session_id="s1")
    assert any("2 turns" in n and "written" in n for n in res.notes), res.notes
    assert not res.degraded, res.notes
