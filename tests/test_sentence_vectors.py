"""``RetrievalConfig(sentence_vectors=True)``: a fact inside a long turn about something else is found by its
own sentence (criteria C47 / C47b / C49, stop 38; the default since stop 49, see docs/benchmarks.md "S1f" and
``test_sentence_lift.py``).

A stored user turn of two or more sentences also gets a vector per sentence; its dense relevance is the best of its
own and its sentences'. A chatbot's reply gets none (C47b: with them, replies' sentences crowded the user's facts out
of the dev chats and of LongMemEval with assistant turns). Written before the change: ``test_the_cat_named_in_an_introduction_is_recalled`` fails on
fd08707 (the introduction ranked 5th: "what's my cat called?" met three other turns about cats first).
The sentence vectors live in the memory's metadata in the store (float16, base64, under ``PARTS_KEY``), so a new
process, a snapshot and a rebuilt index keep them; users never see or set that key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _chats import memory_texts, replay_fixture

from chatrecall import ChatRecall, InvalidInputError, RetrievalConfig
from chatrecall.core import _snapshot as snap
from chatrecall.core._index import PARTS_KEY, UserIndex, decode_parts, encode_parts, sentence_parts
from chatrecall.core._types import Record
from chatrecall.testing import HashEmbedder, InMemoryStore

ON = RetrievalConfig(sentence_vectors=True)
INTRO = ("Quick intro so you know me: I'm Maya and I work night shifts as a nurse at St Mary's in Leeds. My partner "
         "Sam teaches chemistry at a secondary school and spends every weekend at the climbing wall. We've got a "
         "ginger cat called Biscuit who hates the vet. Our flat is near Hyde Park, lovely apart from the noisy bins "
         "on Tuesdays. I'm also trying to learn Spanish before our trip to Seville next spring.")
UPDATE = ("Long. Anyway, the landlord finally fixed the boiler after three weeks, and the heating works again. Sam's "
          "parents are visiting on the 14th so we need the spare room cleared. I also booked my Spanish exam for 3 "
          "June at the Instituto Cervantes in Manchester. Oh and my shift pattern changes next month to four nights "
          "on, four off.")


# ----------------------------------------------------------------- unit (fakes)
def test_sentence_parts_splits_only_multi_sentence_turns() -> None:
    assert sentence_parts("Thanks, that helps!") == []
    assert sentence_parts("ok. sure.") == []  # sentences under three words are not embedded apart
    assert sentence_parts(INTRO)[2] == "We've got a ginger cat called Biscuit who hates the vet."
    assert len(sentence_parts(" ".join(f"Sentence number {i} is here." for i in range(40)))) == 12
    assert sentence_parts(INTRO, "assistant") == []  # a chatbot's reply: its sentences crowded the user's facts out


def test_encoded_vectors_round_trip_and_bad_values_are_ignored() -> None:
    v = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    back = decode_parts(encode_parts(v), 8)
    assert back is not None and back.shape == (3, 8)
    np.testing.assert_allclose(back, v, rtol=1e-3, atol=1e-3)
    assert decode_parts(encode_parts(v), 7) is None  # another model's width
    assert decode_parts("not base64!", 8) is None
    assert decode_parts(42, 8) is None


def _rec(i: int, text: str) -> Record:
    return Record(id=f"r{i}", text=text, user_id="u", session_id="s", role="user", timestamp=float(i), seq=i)


def _unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_dense_takes_the_best_sentence_and_survives_removal() -> None:
    idx = UserIndex(3)
    turn = np.stack([_unit(1, 0, 0), _unit(0, 1, 0), _unit(1, 1, 0)])
    idx.add([_rec(0, "a"), _rec(1, "b"), _rec(2, "c")], turn,
            [None, np.stack([_unit(0, 0, 1), _unit(1, 0, 0)]), None])
    q = _unit(0, 0, 1)
    np.testing.assert_allclose(idx.dense(q), [0.0, 1.0, 0.0], atol=1e-6)  # r1's sentence matches
    np.testing.assert_allclose(idx.dense(q, np.array([2, 1, 1])), [0.0, 1.0, 1.0], atol=1e-6)
    assert [int(p) for p in idx.dense_topk(q, 1)[0]] == [1]
    idx.remove(["r0"])  # the index is rebuilt: r1's sentences move with it
    np.testing.assert_allclose(idx.dense(q), [1.0, 0.0], atol=1e-6)
    assert idx.parts_of(idx.pos["r2"]).shape == (0, 3)


def test_dense_with_own_gives_the_best_and_the_own_cosines_from_one_scan() -> None:
    idx = UserIndex(3)
    idx.add([_rec(0, "a"), _rec(1, "b")], np.stack([_unit(1, 0, 0), _unit(0, 1, 0)]),
            [None, np.stack([_unit(0, 0, 1), _unit(1, 0, 0)])])
    q, pos = _unit(0, 0, 1), np.array([1, 0])
    best, own = idx.dense_with_own(q, pos)
    np.testing.assert_allclose(best, idx.dense(q, pos), atol=1e-6)  # r1 by its sentence
    np.testing.assert_allclose(own, [0.0, 0.0], atol=1e-6)  # r1 by its own vector
    plain = UserIndex(3)
    plain.add([_rec(0, "a")], np.stack([_unit(1, 0, 0)]))
    best, own = plain.dense_with_own(_unit(1, 0, 0))
    assert best is own  # no sentence vectors: one array


def test_records_from_the_store_bring_their_sentences_and_lose_the_key() -> None:
    idx = UserIndex(3)
    meta = {"topic": "x", PARTS_KEY: encode_parts(np.stack([_unit(0, 0, 1)]))}
    rec = Record(id="r", text="a. b.", user_id="u", session_id="s", role="user", timestamp=0.0, metadata=meta)
    idx.add([rec], np.stack([_unit(1, 0, 0)]))
    assert dict(idx.records[0].metadata) == {"topic": "x"}
    assert idx.dense(_unit(0, 0, 1))[0] == pytest.approx(1.0, abs=1e-3)


def test_on_by_default_and_off_nothing_is_stored() -> None:
    assert RetrievalConfig().sentence_vectors is True  # since stop 49 (docs/benchmarks.md, "S1f")
    store = InMemoryStore()
    cr = ChatRecall(store=store, embedder=HashEmbedder(), retrieval=RetrievalConfig(sentence_vectors=False))
    rid = cr.add(INTRO, user_id="maya", session_id="s1")
    assert PARTS_KEY not in store.get("memories", ids=[rid]).records[0].metadata
    idx = cr._state("maya").index
    assert idx.parts_of(idx.pos[rid]).shape[0] == 0
    with pytest.raises(ValueError, match="sentence_vectors"):
        RetrievalConfig(sentence_vectors="yes")  # type: ignore[arg-type]
    cr.close()


def test_engine_stores_hides_reloads_and_snapshots_the_sentences(tmp_path: Path) -> None:
    store = InMemoryStore()
    cr = ChatRecall(store=store, embedder=HashEmbedder(), retrieval=ON)
    [rid] = cr.add_many([{"text": INTRO, "user_id": "maya", "session_id": "s1", "metadata": {"topic": "me"}}])
    cr.add("hi there", user_id="maya", session_id="s1")
    reply = cr.add(UPDATE, user_id="maya", session_id="s1", role="assistant")
    stored = {r.id: r for r in store.get("memories", where={"user_id": "maya"}).records}
    assert PARTS_KEY not in stored[reply].metadata
    parts = decode_parts(stored[rid].metadata[PARTS_KEY], cr.embedder.dim)
    assert parts is not None and parts.shape[0] == len(sentence_parts(INTRO))
    assert all(PARTS_KEY not in r.metadata for r in cr.get_memories("maya"))
    assert all(PARTS_KEY not in r.metadata for r in cr.history("maya", "s1"))
    assert dict(cr.get_memories("maya", ids=[rid])[0].metadata) == {"topic": "me"}
    assert all(i.record is not None and PARTS_KEY not in i.record.metadata
               for i in cr.search("ginger cat", user_id="maya", k=2))
    with pytest.raises(InvalidInputError, match="reserved"):
        cr.add("x", user_id="maya", session_id="s1", metadata={PARTS_KEY: "x"})
    cr.close()
    cr2 = ChatRecall(store=store, embedder=HashEmbedder())  # a new process (flag off): the stored vectors still count
    cr2.search("cat", user_id="maya")
    idx = cr2._state("maya").index
    np.testing.assert_allclose(idx.parts_of(idx.pos[rid]), parts)
    path = snap.save(tmp_path, "maya", idx, version=None)
    assert path.exists()
    back = snap.load(tmp_path, "maya", cr2.embedder.dim)
    assert back is not None
    np.testing.assert_allclose(back.parts_of(back.pos[rid]), parts)
    np.testing.assert_allclose(back.dense(np.ones(cr2.embedder.dim, np.float32)),
                               idx.dense(np.ones(cr2.embedder.dim, np.float32)), rtol=1e-5)
    cr2.close()


# ----------------------------------------------------------------- real model, embedded Chroma
USER = "maya"
T0 = 1780300800.0  # 2026-06-01 08:00 UTC
SESSIONS = [
    (0.0, "s1", [
        ("hi there", "Hi! How can I help?"),
        (INTRO, "Lovely to meet you, Maya! Night shifts and Spanish lessons, that's a lot. How can I help today?"),
        ("Sam keeps saying we should get a second cat, I'm not convinced.",
         "A second cat can be great company, but it's a big decision."),
        ("My sister's cats are always fighting, that's what puts me off.", "Introductions matter a lot with cats."),
        ("Can you give me a simple Spanish phrase for ordering coffee?", "Try: 'Un café con leche, por favor.'"),
    ]),
    (5.0, "s2", [
        ("morning!", "Morning! How was the shift?"),
        (UPDATE, "Good news about the boiler! Busy month ahead."),
        ("Our neighbour's dog barks whenever a cat walks past, which is constantly.", "That must be noisy."),
        ("What do cats usually need at their yearly vet check?", "Usually a weight check, teeth, and boosters."),
    ]),
    (8.0, "s3", [
        ("what's my cat called?", "Your cat is Biscuit."),
        ("where is my Spanish exam?", "At the Instituto Cervantes in Manchester."),
    ]),
]

chat = replay_fixture("sentences", USER, T0, [], SESSIONS, retrieval=ON)


def test_the_cat_named_in_an_introduction_is_recalled(chat: dict[str, Any]) -> None:
    res = chat["what's my cat called?"]
    assert any("called Biscuit" in t for t in memory_texts(res)), res.explain()


def test_the_exam_inside_a_catch_up_turn_comes_first(chat: dict[str, Any]) -> None:
    res = chat["where is my Spanish exam?"]
    assert memory_texts(res)[0] == UPDATE, res.explain()


def test_a_new_process_on_the_same_chroma_still_finds_it(tmp_path: Path, st_embedder: Any) -> None:
    from chatrecall.adapters.chroma import ChromaStore

    path = str(tmp_path / "db")
    cr = ChatRecall(store=ChromaStore(path=path, snapshots=False), embedder=st_embedder, retrieval=ON)
    for i, text in enumerate(["My sister's cats are always fighting.", "Sam wants a second cat.",
                              "Our neighbour's dog barks at every cat.", INTRO]):
        cr.add(text, user_id=USER, session_id="s1", timestamp=T0 + i)
    cr.close()
    cr2 = ChatRecall(store=ChromaStore(path=path, snapshots=False), embedder=st_embedder)
    try:
        top = cr2.search("what's my cat called?", user_id=USER, k=2)
        assert any("called Biscuit" in i.text for i in top), [i.text[:40] for i in top]
        assert all(i.record is not None and PARTS_KEY not in i.record.metadata for i in top)
    finally:
        cr2.close()
