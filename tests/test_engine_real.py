"""The engine on the real parts: Chroma (embedded and server) and the bundled MiniLM model."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from chatrecall import ChatRecall, InvalidInputError, NotFoundError, Route, Turn

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

from chatrecall.adapters.chroma import ChromaStore  # noqa: E402
from chatrecall.core._engine import _RESYNC_S  # noqa: E402

pytestmark = pytest.mark.model

CONVERSATION = [
    ("s1", "user", "I'm starting a side project called the cheese project: a catalogue of French cheeses."),
    ("s1", "assistant", "For the cheese project, keep cheeses in a table with region, milk type and aging time."),
    ("s1", "user", "We use Postgres, not SQLite, for everything at work."),
    ("s2", "user", "The import script crashes with ECONNREFUSED when it talks to the database."),
    ("s2", "assistant", "ECONNREFUSED means nothing listens on the port: start Postgres or fix DATABASE_URL."),
    ("s2", "user", "I wrote a function parse_tasting_notes() that splits notes into aroma, texture and finish."),
    ("s3", "user", "My sister Marie is visiting Lyon next month and wants cheese shop tips."),
    ("s3", "user", "My dog Biscuit hates thunderstorms and hides under the bed."),
]


def _fill(cr: ChatRecall, user: str = "alice") -> list[str]:
    t0 = 1_735_725_600.0
    return cr.add_many([
        Turn(text=t, user_id=user, session_id=s, role=r, timestamp=t0 + i * 3600)
        for i, (s, r, t) in enumerate(CONVERSATION)
    ])


@pytest.fixture
def real(tmp_path: Path, st_embedder: Any) -> ChatRecall:
    return ChatRecall(store=ChromaStore(path=tmp_path / "chroma"), embedder=st_embedder)


def test_required_routes_and_recall_on_real_parts(real: ChatRecall) -> None:
    _fill(real)
    real.add_documents([{"id": "tb", "title": "TriBridConfig reference",
                         "text": "TriBridConfig configures the tri-bridge network layer: bridge count, MTU, failover."}])
    expect = {
        "How are you?": Route.NONE,
        "Remember that cheese project?": Route.MEMORY,
        "What does TriBridConfig do?": Route.CORPUS,
        "That is cool": Route.NONE,
        "what about that function?": Route.MEMORY,
    }
    results = {m: real.retrieve(m, user_id="alice", session_id="s9") for m in expect}
    for msg, route in expect.items():
        assert results[msg].gate.route is route, msg
    assert "cheese project" in results["Remember that cheese project?"].memories[0].text
    assert "parse_tasting_notes" in results["what about that function?"].memories[0].text
    assert "tri-bridge" in results["What does TriBridConfig do?"].passages[0].text
    assert results["How are you?"].items == ()


def test_semantic_recall_without_shared_words(real: ChatRecall) -> None:
    _fill(real)
    items = real.search("which pet is scared of storms?", user_id="alice", k=3, strategy="relevance")
    assert "Biscuit" in items[0].text


def test_persistence_dedupe_pins_and_forget_across_reopen(tmp_path: Path, st_embedder: Any) -> None:
    path = tmp_path / "chroma"
    cr = ChatRecall(store=ChromaStore(path=path), embedder=st_embedder)
    ids = _fill(cr)
    pin = cr.pin("We use Postgres, not SQLite.", user_id="alice")
    assert _fill(cr) == ids  # same texts, same ids, nothing stored twice
    assert cr.count("alice") == len(CONVERSATION)
    cr.store.close()  # type: ignore[attr-defined]

    again = ChatRecall(store=ChromaStore(path=path), embedder=st_embedder)
    assert again.count("alice") == len(CONVERSATION)
    assert [p.id for p in again.pins("alice")] == [pin.id]
    res = again.retrieve("Remember the ECONNREFUSED crash?", user_id="alice", session_id="s9")
    assert "ECONNREFUSED" in res.memories[0].text
    assert "Postgres, not SQLite" in res.context
    # in its own session the turns are in the recent window and not repeated as memories
    res2 = again.retrieve("Remember the ECONNREFUSED crash?", user_id="alice", session_id="s2")
    assert res2.recent and res2.recent[-1].text.startswith("I wrote a function")
    assert not {m.id for m in res2.memories} & {r.id for r in res2.recent}
    again.forget("alice", "s3")
    assert again.count("alice") == len(CONVERSATION) - 2
    again.forget("alice")
    assert again.count("alice") == 0 and again.pins("alice") == []
    with pytest.raises(NotFoundError):
        again.forget("alice")


def test_isolation_on_chroma(real: ChatRecall) -> None:
    _fill(real, "alice")
    real.add("Bob's secret: the vault code is 4471.", user_id="bob", session_id="b")
    for q in ["what is the vault code?", "remember the secret code?", "cheese project"]:
        for it in real.search(q, user_id="alice", k=20):
            assert it.record is not None and it.record.user_id == "alice"
        assert "4471" not in real.retrieve(q, user_id="alice", route="both").context
    assert "4471" in real.search("vault code", user_id="bob")[0].text


def test_server_mode_shares_state_between_instances(chroma_server: str, st_embedder: Any) -> None:
    ns = "t" + uuid.uuid4().hex[:8]
    app1 = ChatRecall(store=ChromaStore(url=chroma_server, namespace=ns), embedder=st_embedder)
    app2 = ChatRecall(store=ChromaStore(url=chroma_server, namespace=ns), embedder=st_embedder)
    _fill(app1)
    app2.search("warm the cache", user_id="alice")
    app1.add("The Zanzibar release ships on Friday.", user_id="alice", session_id="s4")
    app1.pin("Answer in French.", user_id="alice")
    # app2's cache was built before app1's new write: the count probe reveals it once the stated
    # bound (_RESYNC_S after app2's last resync) has passed
    time.sleep(_RESYNC_S + 0.1)
    items = app2.search("when does the Zanzibar release ship?", user_id="alice", k=3)
    assert "Zanzibar" in items[0].text
    assert [p.text for p in app2.pins("alice")] == ["Answer in French."]
    assert app2.count("alice") == len(CONVERSATION) + 1
    app2.forget("alice")
    assert app1.count("alice") == 0


def test_bad_input_on_real_store_loses_nothing(real: ChatRecall) -> None:
    _fill(real)
    for bad in ["", "   ", None, 3.5, "x" * 300_001]:
        with pytest.raises(InvalidInputError):
            real.add(bad, user_id="alice", session_id="s1")  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError):
            real.retrieve(bad, user_id="alice")  # type: ignore[arg-type]
    assert real.count("alice") == len(CONVERSATION)
