"""A statement's memory turn does not probe the documents (stop 48, P1).

A memory turn whose memories pass the usefulness check also searches the documents and keeps strong passages
(``RetrievalConfig.corpus_probe``). A statement asks the documents nothing: "Also, Pixel has a new name - she's
Noodle now" went to memory, its memories named the user's new client, and the client's contract came back as a
strong passage (tests/test_freelancer_chat.py, 0.401 against the 0.4 bar on one machine's query vectors). The
probe now runs only when the message asks or requests something (``asks_or_requests``). Fakes here (the decision
does not depend on the model); the real-model case is the freelancer chat's.
"""

from __future__ import annotations

from chatrecall import ChatRecall, RetrievalConfig
from chatrecall.testing import HashEmbedder, InMemoryStore

T0 = 1_780_000_000.0
DOC = {"id": "marlow", "title": "Marlow Tea - web development agreement",
       "text": "Web development agreement for Marlow Tea. Payment terms: 30% deposit, 40% at beta, 30% on launch."}


def _engine(*, corpus_probe: bool = True) -> ChatRecall:
    # low bars: every memory found is useful and every passage found is strong, so only the rule decides
    cr = ChatRecall(store=InMemoryStore(), embedder=HashEmbedder(),
                    retrieval=RetrievalConfig(useful_score=0.0, strong_corpus_score=0.0, corpus_probe=corpus_probe))
    cr.add_documents([DOC])
    for i, text in enumerate(["My cat Pixel walked across the keyboard during the Marlow Tea call.",
                              "I signed Marlow Tea as a new client last night."]):
        cr.add(text, user_id="u", session_id="s1", timestamp=T0 + 60 * i)
    return cr


def test_a_statement_on_a_memory_turn_gets_no_passage() -> None:
    cr = _engine()
    res = cr.retrieve("Also, Pixel has a new name, she's Noodle now.", user_id="u", session_id="s2", route="memory")
    assert res.memories and not res.passages, res.explain()
    assert any("a statement asks the documents nothing" in n for n in res.notes), res.notes
    cr.close()


def test_a_question_on_a_memory_turn_still_probes_the_documents() -> None:
    cr = _engine()
    res = cr.retrieve("what are the Marlow Tea payment terms?", user_id="u", session_id="s2", route="memory")
    assert [p.title for p in res.passages] == [DOC["title"]], res.explain()
    assert any("documents searched, strong passages kept" in n for n in res.notes), res.notes
    cr.close()


def test_without_the_probe_nothing_is_said_of_statements() -> None:
    cr = _engine(corpus_probe=False)
    res = cr.retrieve("Also, Pixel has a new name, she's Noodle now.", user_id="u", session_id="s2", route="memory")
    assert not res.passages
    assert not any("a statement asks" in n for n in res.notes), res.notes
    cr.close()
