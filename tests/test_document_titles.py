"""A document's title is searched with its text (stop 43, T1).

A new LangChain user's chat (nu45): the market a rules document was about was named in its title only, so "What's the
pitch fee at Stockbridge?" got Leith's rules, and "Can I use a generator at Leith?" got only Stockbridge's, which allow
one. A chunk is now embedded, and its entities found, with its document's title first; the chunk alone is stored and
injected.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from chatrecall.core import ChatRecall, Route
from chatrecall.testing import HashEmbedder, fake_engine

_RULES = {
    "Northside Climbing Wall: house rules": (
        "Chalk balls only, no loose chalk. Towels are handed out free at the desk. Children under 14 climb with an "
        "adult on the same wall. The bouldering area closes at 21:00 on weekdays."),
    "Riverside Climbing Wall: house rules": (
        "Liquid chalk or chalk balls are fine. Bring your own towel: the desk does not hand any out. Children under "
        "16 climb with an adult on the same wall. The bouldering area closes at 22:00 on weekdays."),
}


class _SpyEmbedder(HashEmbedder):
    """The hash embedder, recording every text it embeds for documents."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed_documents(self, texts: Any) -> np.ndarray:
        self.seen.extend(texts)
        return super().embed_documents(texts)


def test_a_chunk_is_embedded_with_its_title_and_stored_without_it() -> None:
    spy = _SpyEmbedder()
    with fake_engine(embedder=spy) as cr:
        cr.add_documents([{"id": "n", "title": "Northside Climbing Wall: house rules",
                           "text": _RULES["Northside Climbing Wall: house rules"]},
                          {"id": "plain", "text": "A document without a title is embedded as it is."}])
        assert spy.seen == ["Northside Climbing Wall: house rules\n\n" + _RULES["Northside Climbing Wall: house rules"],
                            "A document without a title is embedded as it is."]
        res = cr.retrieve("towels at Northside?", user_id="u", route=Route.CORPUS)
        passage = res.passages[0]
        assert passage.text == _RULES["Northside Climbing Wall: house rules"]  # the title is not in the text ...
        assert passage.record is not None and passage.record.metadata["title"].startswith("Northside")
        assert res.context.count("Northside Climbing Wall") == 1  # ... and shown once, as the passage's label


def test_every_chunk_of_a_long_document_carries_its_title() -> None:
    spy = _SpyEmbedder()
    text = " ".join(f"Sentence {i} of the handbook says something about shifts." for i in range(80))
    with fake_engine(embedder=spy) as cr:
        ids = cr.add_documents([{"id": "h", "title": "Harbour Cafe handbook", "text": text}], max_words=60,
                               overlap_words=10)
    assert len(ids) == len(spy.seen) > 3
    assert all(t.startswith("Harbour Cafe handbook\n\n") for t in spy.seen)


def test_a_name_in_the_title_only_is_an_anchor() -> None:
    # the entities of the title are the chunk's: a query naming one anchors the passage, even on the hash embedder
    docs = [{"id": "stockbridge", "title": "Stockbridge Sunday Market - trader rules",
             "text": "Pitches on Saunders Street cost 45 pounds a day. Generators are allowed if under 60 dB."},
            {"id": "leith", "title": "Leith Saturday Market - trader rules",
             "text": "Pitches on Dock Place cost 38 pounds a day. No generators: power is provided at 15 pounds."}]
    with fake_engine() as cr:
        cr.add_documents(docs)
        res = cr.retrieve("what's the pitch fee at Stockbridge?", user_id="u", route=Route.CORPUS)
        first = res.passages[0]
        assert first.record is not None and first.record.session_id == "stockbridge"
        assert "stockbridge" in first.record.entities
        assert first.components["anchor"] == 1.0
        assert all(p.components["anchor"] == 0.0 for p in res.passages[1:])


def test_a_question_naming_the_title_gets_that_document_first(real_engine: ChatRecall) -> None:
    # the real model and embedded Chroma: the two texts differ in their rules, never name their wall; before T1
    # each question below got the other wall's rules first on one of them
    real_engine.add_documents([{"id": t.split()[0].lower(), "title": t, "text": x} for t, x in _RULES.items()])
    for question, wall in (("Do they give out towels at Riverside?", "riverside"),
                           ("When does bouldering close at Northside?", "northside"),
                           ("how old do kids have to be to climb alone at riverside", "riverside"),
                           ("is loose chalk ok at northside?", "northside")):
        res = real_engine.retrieve(question, user_id="u", route=Route.CORPUS)
        first = res.passages[0]
        assert first.record is not None and first.record.session_id == wall, (question, res.explain())


def test_a_passage_carries_its_title_and_a_memory_none() -> None:
    # nu50 (stop 45): the title was only in record.metadata["title"]; items now carry it, as the LangChain summary
    # and the MCP items do
    from chatrecall.core import ScoredItem
    from chatrecall.core._types import Record

    rec = Record(id="c1", text="Sprinklers are forbidden.", user_id="__shared__", session_id="water", role="document",
                 timestamp=1.0, metadata={"title": "Water use policy"})
    passage = ScoredItem(id="c1", text=rec.text, source="corpus", score=0.5, components={}, tokens=4, record=rec)
    assert passage.title == "Water use policy"
    memory = ScoredItem(id="m1", text="hi", source="memory", score=0.5, components={}, tokens=1,
                        record=dataclasses.replace(rec, metadata={"title": "not a passage"}))
    assert memory.title is None
    untitled = dataclasses.replace(passage, record=dataclasses.replace(rec, metadata={}))
    assert untitled.title is None
