"""A closed ChatRecall refuses work with ClosedError (helper-118: add and retrieve still ran after close(),
with the background pool already shut down, so a snapshot or a warm-up queued then could never run).

Closing twice is fine, nothing stored is lost, and a new ChatRecall on the same store reads it all back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import chatrecall
from chatrecall import ChatRecall, ChatRecallError, ClosedError
from chatrecall.testing import HashEmbedder, InMemoryStore, ManualClock, fake_engine

#: Every public method that reads or writes the store, with arguments that work on an open engine.
CALLS: list[tuple[str, Callable[[ChatRecall], Any]]] = [
    ("add", lambda cr: cr.add("my cat is called Miso", user_id="u", session_id="s")),
    ("add_many", lambda cr: cr.add_many([{"text": "hi", "user_id": "u", "session_id": "s"}])),
    ("add_documents", lambda cr: cr.add_documents([{"id": "d", "text": "Cats sleep a lot."}])),
    ("pin", lambda cr: cr.pin("answer in French", user_id="u")),
    ("pins", lambda cr: cr.pins("u")),
    ("forget", lambda cr: cr.forget("u", "s")),
    ("count", lambda cr: cr.count("u")),
    ("recent", lambda cr: cr.recent("u", "s")),
    ("history", lambda cr: cr.history("u", "s")),
    ("search", lambda cr: cr.search("cat", user_id="u")),
    ("retrieve", lambda cr: cr.retrieve("what's my cat called?", user_id="u", session_id="s")),
    ("get_memories", lambda cr: cr.get_memories("u")),
    ("delete_memories", lambda cr: cr.delete_memories("u", ["nope"])),
    ("list_sessions", lambda cr: cr.list_sessions("u")),
    ("warm", lambda cr: cr.warm()),
]


@pytest.mark.parametrize("name,call", CALLS, ids=[n for n, _ in CALLS])
def test_every_store_method_refuses_after_close(name: str, call: Callable[[ChatRecall], Any]) -> None:
    cr = fake_engine(clock=ManualClock())
    cr.add("hello there", user_id="u", session_id="s")
    call(cr)  # works while open
    cr.close()
    with pytest.raises(ClosedError, match=r"close\(\)") as info:
        call(cr)
    assert isinstance(info.value, ChatRecallError) and isinstance(info.value, RuntimeError)
    assert name in str(info.value) and "connect" in str(info.value)  # names the call and the fix


def test_unpin_refuses_after_close() -> None:
    cr = fake_engine(clock=ManualClock())
    pin = cr.pin("answer in French", user_id="u")
    cr.close()
    with pytest.raises(ClosedError, match="unpin"):
        cr.unpin(pin)


def test_close_twice_and_the_gate_still_answers() -> None:
    cr = fake_engine(clock=ManualClock())
    cr.close()
    cr.close()  # idempotent, as a file's close()
    assert cr.closed
    assert cr.decide("thanks!").route.value == "none"  # no store, no pool: still fine


def test_context_manager_closes() -> None:
    with fake_engine(clock=ManualClock()) as cr:
        assert not cr.closed
        cr.add("hello", user_id="u", session_id="s")
    assert cr.closed
    with pytest.raises(ClosedError):
        cr.add("again", user_id="u", session_id="s")


def test_nothing_stored_is_lost_and_a_new_engine_reads_it() -> None:
    store = InMemoryStore()
    clock = ManualClock()
    first = fake_engine(store=store, clock=clock)
    first.add("my cat is called Miso", user_id="u", session_id="s1")
    first.close()
    second = fake_engine(store=store, clock=clock)
    try:
        assert second.count("u") == 1
        clock.advance(86400)
        res = second.retrieve("what's my cat called?", user_id="u", session_id="s2")
        assert any("Miso" in it.text for it in res.items)
    finally:
        second.close()


def test_real_parts_closed_connect_refuses_and_reopens(tmp_path: Path) -> None:
    """chatrecall.connect on embedded Chroma and the bundled model: closed → ClosedError; reopened → data back."""
    pytest.importorskip("chromadb")
    pytest.importorskip("sentence_transformers")
    cr = chatrecall.connect(path=tmp_path / "store")
    cr.add("my cat is called Miso", user_id="u", session_id="s1")
    cr.close()
    with pytest.raises(ClosedError, match="retrieve"):
        cr.retrieve("what's my cat called?", user_id="u", session_id="s2")
    again = chatrecall.connect(path=tmp_path / "store")
    try:
        res = again.retrieve("what's my cat called?", user_id="u", session_id="s2")
        assert any("Miso" in it.text for it in res.items)
    finally:
        again.close()


def test_async_calls_refuse_after_aclose() -> None:
    import asyncio

    async def run() -> None:
        async with fake_engine(clock=ManualClock()) as cr:
            await cr.aadd("my cat is called Miso", user_id="u", session_id="s")
        with pytest.raises(ClosedError, match="retrieve"):
            await cr.aretrieve("what's my cat called?", user_id="u", session_id="s2")

    asyncio.run(run())


def test_close_releases_a_store_connect_opened_and_keeps_one_passed_in(tmp_path: Path) -> None:
    """README: close() releases the store connect() opened (an embedded directory can then be opened
    elsewhere); a store the caller passed in stays open, the caller's to close."""
    pytest.importorskip("chromadb")
    pytest.importorskip("sentence_transformers")
    from chatrecall.adapters.chroma import ChromaStore

    cr = chatrecall.connect(path=tmp_path / "a")
    store = cr.store
    cr.add("my cat is called Miso", user_id="u", session_id="s1")
    assert store._client is not None
    cr.close()
    assert store._client is None  # the embedded client was released

    mine = ChromaStore(path=tmp_path / "b")
    try:
        other = ChatRecall(store=mine, embedder=HashEmbedder())
        other.add("hello", user_id="u", session_id="s")
        other.close()
        assert mine.count("memories", {"user_id": "u"}) == 1  # still open and usable
    finally:
        mine.close()

