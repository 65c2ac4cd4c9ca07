"""A statement keeps only its strong passages.

nu50 (stop 45, a dog walker's chatbot on LlamaIndex): "Their key safe code is 4417 and it's on the left of the
garage." asked nothing, but memory had nothing outside the recent window, so the documents were tried and every one
of them was injected (the Biscuit care sheet at 0.42, then the council's rules and the terms at 0.2-0.3). Since stop 45
a message that neither asks nor requests anything, and signals no recall, explicit reference or correction, keeps only
passages at ``strong_corpus_score`` or above; a question keeps them as before.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

import chatrecall  # noqa: E402

DOCS = [
    {"title": "Care sheet - Biscuit (Henderson family)",
     "text": "Dog: Biscuit, cocker spaniel. Vet: Oakfield Vets, 01632 960123. Allergic to chicken."},
    {"title": "Northbridge Council - Dog Control Rules",
     "text": "Dogs must be kept on a lead in Victoria Park between 1 May and 30 September. Fouling fine £100."},
    {"title": "Paws & Go Terms and Conditions",
     "text": "Clients must give 24 hours' notice to cancel. Invoices are due within 14 days."},
]


@pytest.fixture
def cr() -> Iterator[chatrecall.ChatRecall]:
    with tempfile.TemporaryDirectory() as d:
        engine = chatrecall.connect(path=d)
        try:
            engine.add_documents(DOCS)
            engine.add("I've just taken on a new client, the Hendersons. Their cocker spaniel is called Biscuit.",
                       user_id="maya", session_id="s1")
            engine.add("Congratulations on the new client!", user_id="maya", session_id="s1", role="assistant")
            yield engine
        finally:
            engine.close()


def test_a_statement_keeps_only_strong_passages(cr: chatrecall.ChatRecall) -> None:
    res = cr.retrieve("Their key safe code is 4417 and it's on the left of the garage.", user_id="maya",
                      session_id="s1")
    strong = cr.retrieval_config.strong_corpus_score
    assert all(p.score >= strong for p in res.passages), res.explain()
    assert any("the message asks nothing" in r.why for r in res.rejected), res.explain()


def test_a_question_keeps_its_passages(cr: chatrecall.ChatRecall) -> None:
    res = cr.retrieve("Do I need to keep the dogs on a lead in Victoria Park?", user_id="maya", session_id="s1")
    assert any("Victoria Park" in p.text for p in res.passages), res.explain()
    assert not any("the message asks nothing" in r.why for r in res.rejected), res.explain()
