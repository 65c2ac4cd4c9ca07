"""A short name matches the longer name it is part of ("Acme" and "Acme Logistics"), both when a message's name sends
a corpus question to memory too and when only the memories naming it are kept.

nu47 (stop 44, a freelance translator's chatbot): "Acme agreed to a new rate: €0.11 per word from April." named
"acme" from memory (the user's "ok and Acme?"), then kept only that turn and left out the highest-scoring memory,
"Acme Logistics pays €0.09 per word.", for naming none of 'acme': its entity key is "acme logistic", not "acme".
With only the full name stored, the short one was not found at all.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest

from chatrecall.core._index import overlapping_keys

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

import chatrecall  # noqa: E402


@pytest.mark.parametrize(("key", "stored", "found"), [
    ("acme", {"acme logistic"}, {"acme logistic"}),
    ("acme logistic", {"acme"}, {"acme"}),
    ("acme", {"acme", "acme logistic", "zenith"}, {"acme", "acme logistic"}),
    ("john smith", {"john doe", "smith"}, {"smith"}),
    ("acme", {"acmetech", "the acme"}, {"the acme"}),
    ("lisbon", {"porto"}, set()),
])
def test_overlapping_keys(key: str, stored: set[str], found: set[str]) -> None:
    assert set(overlapping_keys(key, stored)) == found


@pytest.fixture
def cr() -> Iterator[chatrecall.ChatRecall]:
    with tempfile.TemporaryDirectory() as d:
        engine = chatrecall.connect(path=d)
        try:
            engine.add_documents([{"title": "Acme Logistics style guide",
                                   "text": "Write in US English spelling. Always use the Oxford comma in lists."}])
            yield engine
        finally:
            engine.close()


def test_the_full_name_is_kept_for_the_short_one(cr: chatrecall.ChatRecall) -> None:
    cr.add("Acme Logistics pays €0.09 per word.", user_id="u1", session_id="s1", role="assistant")
    cr.add("ok and Acme?", user_id="u1", session_id="s1")
    res = cr.retrieve("Acme agreed to a new rate: €0.11 per word from April.", user_id="u1", session_id="s2")
    assert "Acme Logistics pays €0.09 per word." in [i.text for i in res.memories], res.explain()


def test_the_short_name_finds_the_full_one(cr: chatrecall.ChatRecall) -> None:
    cr.add("My biggest client is Acme Logistics, they pay €0.09 per word.", user_id="u2", session_id="s1")
    cr.add("Noted: Acme Logistics, €0.09 per word.", user_id="u2", session_id="s1", role="assistant")
    res = cr.retrieve("Does Acme want the Oxford comma?", user_id="u2", session_id="s2")
    assert res.route.wants_memory, res.explain()
    assert any("Acme Logistics" in i.text for i in res.memories), res.explain()
