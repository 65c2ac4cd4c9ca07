"""Several processes over one Chroma server: the freshness probe (ChatRecall._probe_shared)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from chatrecall.core import ChatRecall
from chatrecall.testing import HashEmbedder

pytestmark = pytest.mark.server


def _engine(url: str, ns: str) -> tuple[ChatRecall, Any]:
    from chatrecall.adapters.chroma import ChromaStore

    store = ChromaStore(url=url, namespace=ns, snapshots=False)
    return ChatRecall(store=store, embedder=HashEmbedder()), store


def test_other_process_writes_and_deletes_become_visible_without_vector_queries(chroma_server: str,
                                                                                  count_calls: Any) -> None:
    ns = "probe" + uuid.uuid4().hex[:8]
    a, store_a = _engine(chroma_server, ns)
    b, _ = _engine(chroma_server, ns)
    a.add("Alice adopted a beagle called Rex", user_id="u", session_id="s1")
    queries = count_calls(store_a, "query")
    assert len(a.search("beagle", user_id="u", k=5)) == 1
    # A's own write does not trigger a resync
    a.add("Rex likes the park", user_id="u", session_id="s1")
    before = a.stats()["counters"].get("fresh_resyncs", 0) if "counters" in a.stats() else None
    time.sleep(1.05)
    a.search("park", user_id="u", k=5)
    if before is not None:
        assert a.stats()["counters"].get("fresh_resyncs", 0) == before
    # another process writes: visible at A's first search >= 1 s after its last resync
    b.add("Bob moved to Lisbon in May", user_id="u", session_id="s2")
    b.add("A turn of another user", user_id="v", session_id="s9")
    time.sleep(1.05)
    hits = a.search("Lisbon", user_id="u", k=5)
    assert any("Lisbon" in h.text for h in hits)
    assert all(h.record is None or h.record.user_id == "u" for h in hits)
    # another process deletes: gone from A's index too
    b.forget("u", session_id="s2")
    time.sleep(1.05)
    hits = a.search("Lisbon", user_id="u", k=5)
    assert not any("Lisbon" in h.text for h in hits)
    assert queries["n"] == 0  # memory searches never ran a store vector query
    a.close()
    b.close()


def test_the_recent_window_holds_another_process_turn_on_every_route(chroma_server: str) -> None:
    """helper-92 (stop 32): one process stores the chat, another retrieves; the reader's recent window lagged a
    turn behind, even 2 s after the write, because it was read before the freshness probe (which only a memory
    search ran). A correction then searched with the wrong question, and a route-none turn never probed at all."""
    ns = "recent" + uuid.uuid4().hex[:8]
    writer, _ = _engine(chroma_server, ns)
    reader, _ = _engine(chroma_server, ns)
    try:
        writer.add("hey, rough week at the clinic", user_id="u", session_id="s", role="user")
        reader.retrieve("haha", user_id="u", session_id="s")  # the reader knows the user from here on
        writer.add("which carb did I order for the Triumph?", user_id="u", session_id="s", role="user")
        time.sleep(1.05)
        res = reader.retrieve("thanks!", user_id="u", session_id="s")  # route none: no memory search
        assert [i.text for i in res.recent][-1] == "which carb did I order for the Triumph?"
        writer.add("what's the spark plug gap on my bike?", user_id="u", session_id="s", role="user")
        time.sleep(1.05)
        res = reader.retrieve("no, I meant the Triumph, not the Honda", user_id="u", session_id="s")
        assert [i.text for i in res.recent][-1] == "what's the spark plug gap on my bike?"
        assert any("what's the spark plug gap" in n for n in res.notes if "corrects" in n), res.notes
    finally:
        writer.close()
        reader.close()
