"""The corpus query of a turn that searches both is informed by the memories found for it.

Fast tests on the fakes check the mechanism (which vector is sent, when, and what the result says);
the test on the real model and embedded Chroma checks the behaviour a user sees: "what should my
class watch out for in the practical?" gets the document on the practical the memories name.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _corpus import corpus_docs, sent_vectors

from chatrecall import ChatRecall, ConfigError, RetrievalConfig, Turn
from chatrecall.core._tuned import CORPUS_MEMORY_ITEMS, CORPUS_RECENT_CONTEXT

T0 = 1_735_725_600.0
CHAT = [
    ("s1", "user", "hi! long week already"),
    ("s1", "assistant", "Hi! Hope it gets lighter. What's up?"),
    ("s1", "user", "I'm running the titration practical with my year 11s on Friday, first time teaching it"),
    ("s1", "assistant", "Exciting! Good luck with the practical."),
    ("s1", "user", "also my sister's wedding is in June and I still haven't paid the venue deposit"),
    ("s1", "assistant", "Worth sorting out soon, venues fill up."),
    ("s2", "user", "the movers quoted 900 cedis for the flat move, seems high"),
    ("s2", "assistant", "You could ask for a second quote."),
]
DOCS = [
    {"id": "titration", "text": "Titration practical: common errors are reading the burette meniscus from above "
                                "or below eye level, not rinsing the burette with the titrant, air bubbles in the "
                                "burette tip, and overshooting the end point; add the titrant dropwise near the "
                                "colour change of the indicator."},
    {"id": "chromatography", "text": "Chromatography practical: students should draw the baseline in pencil, keep "
                                     "it above the solvent level, avoid touching the paper, and cover the beaker so "
                                     "the solvent does not evaporate before the front has moved."},
    {"id": "flame", "text": "Flame test practical: students should clean the nichrome wire loop in hydrochloric "
                            "acid between samples, use a blue Bunsen flame and view the colour against a dark "
                            "background; sodium contamination masks other colours."},
    {"id": "rates", "text": "Rates of reaction practical: students should watch out for timing the disappearing "
                            "cross inconsistently, using solutions at different temperatures, and not washing the "
                            "flask between runs."},
]
QUESTION = "what should my class watch out for in the practical?"


def _chat(cr: ChatRecall, user: str = "ama") -> None:
    cr.add_many([Turn(text=t, user_id=user, session_id=s, role=r, timestamp=T0 + i * 600)
                 for i, (s, r, t) in enumerate(CHAT)])
    cr.add_documents(DOCS)




# ----------------------------------------------------------------- configuration
@pytest.mark.parametrize("value", [-1, 9, 1.0, True, "2", None])
def test_bad_settings_fail_at_once_naming_the_value(value: Any) -> None:
    with pytest.raises(ConfigError, match=rf"corpus_memory_items={value!r} is invalid: must be an int from 0"):
        RetrievalConfig(corpus_memory_items=value)


@pytest.mark.parametrize("value", [1, "yes", None])
def test_recent_context_must_be_a_bool(value: Any) -> None:
    with pytest.raises(ConfigError, match=rf"corpus_recent_context={value!r} is invalid: must be True or False"):
        RetrievalConfig(corpus_recent_context=value)


def test_defaults_are_the_tuned_constants() -> None:
    cfg = RetrievalConfig()
    assert cfg.corpus_memory_items == CORPUS_MEMORY_ITEMS > 0
    assert cfg.corpus_recent_context is CORPUS_RECENT_CONTEXT


# ----------------------------------------------------------------- mechanism (fakes)


@pytest.mark.parametrize("items", [1, 3])
def test_both_turn_queries_the_corpus_with_the_message_and_the_top_memories(
        make_engine: Any, monkeypatch: pytest.MonkeyPatch, items: int) -> None:
    eng = make_engine(retrieval=RetrievalConfig(corpus_memory_items=items))
    _chat(eng)
    sent = sent_vectors(eng, monkeypatch)
    res = eng.retrieve(QUESTION, user_id="ama", session_id="new", route="both")
    mem = [i for i in res.items if i.source == "memory"] + [i for i in res.rejected if i.source == "memory"]
    mem.sort(key=lambda i: -i.score)
    want = eng.embedder.embed_query(" ".join([QUESTION, *(i.text for i in mem[:items])]))
    assert len(sent) == 1
    np.testing.assert_allclose(sent[0], want, atol=1e-6)
    assert not np.allclose(sent[0], eng.embedder.embed_query(QUESTION), atol=1e-3)
    assert f"corpus query: the message plus its top {items} memor" in " ".join(res.notes)
    assert all("(with memory context)" in i.why for i in (*res.items, *res.rejected) if i.source == "corpus")


def test_zero_items_sends_the_message_alone(make_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    eng = make_engine(retrieval=RetrievalConfig(corpus_memory_items=0))
    _chat(eng)
    sent = sent_vectors(eng, monkeypatch)
    res = eng.retrieve(QUESTION, user_id="ama", session_id="new", route="both")
    np.testing.assert_allclose(sent[0], eng.embedder.embed_query(QUESTION), atol=1e-6)
    assert not any("corpus query" in n for n in res.notes)


@pytest.mark.parametrize("recent", [True, False])
def test_in_session_the_user_turns_of_the_recent_window_inform_the_corpus(
        make_engine: Any, monkeypatch: pytest.MonkeyPatch, recent: bool) -> None:
    """Asked at the end of session s2, whose turns are the recent window (not searched as memories)."""
    eng = make_engine(retrieval=RetrievalConfig(corpus_memory_items=0, corpus_recent_context=recent))
    _chat(eng)
    sent = sent_vectors(eng, monkeypatch)
    res = eng.retrieve(QUESTION, user_id="ama", session_id="s2", route="both")
    users = [t for s, r, t in CHAT if s == "s2" and r == "user"]
    assert [i.text for i in res.recent] == [t for s, _, t in CHAT if s == "s2"]
    want = " ".join([QUESTION, *users]) if recent else QUESTION
    np.testing.assert_allclose(sent[0], eng.embedder.embed_query(want), atol=1e-6)
    assert ("corpus query: the message plus 1 recent turn" in " ".join(res.notes)) is recent


@pytest.mark.parametrize("route", ["corpus", "memory"])
def test_only_memories_found_for_a_both_turn_inform_the_corpus(
        make_engine: Any, monkeypatch: pytest.MonkeyPatch, route: str) -> None:
    """A corpus route has no memories; a memory route reaches the corpus only after its small lookup was
    judged not useful, and those set-aside memories inform nothing."""
    eng = make_engine(retrieval=RetrievalConfig(corpus_memory_items=4))
    _chat(eng)
    sent = sent_vectors(eng, monkeypatch)
    res = eng.retrieve("quantum chromodynamics lattice spacing", user_id="ama", session_id="new", route=route)
    for v in sent:
        np.testing.assert_allclose(v, eng.embedder.embed_query("quantum chromodynamics lattice spacing"), atol=1e-6)
    assert not any("corpus query" in n for n in res.notes)


def test_a_user_with_no_memories_gets_the_message_alone(make_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    eng = make_engine(retrieval=RetrievalConfig(corpus_memory_items=4))
    eng.add_documents(DOCS)
    sent = sent_vectors(eng, monkeypatch)
    res = eng.retrieve(QUESTION, user_id="nobody", session_id="new", route="both")
    np.testing.assert_allclose(sent[0], eng.embedder.embed_query(QUESTION), atol=1e-6)
    assert corpus_docs(res)  # the corpus is still searched


# ----------------------------------------------------------------- behaviour (real model, embedded Chroma)
@pytest.mark.model
def test_the_practical_the_memories_name_comes_first(real_engine: ChatRecall) -> None:
    cr = real_engine
    _chat(cr)
    res = cr.retrieve(QUESTION, user_id="ama", session_id="new")
    assert res.gate.route.value == "both"
    assert corpus_docs(res)[0] == "titration", [(i.why, i.text[:40]) for i in res.items]
    assert any("titration" in i.text.lower() and i.source == "corpus" for i in res.items)
    # asked at the end of the session that named it: that turn is in the recent window, not in memory
    same = cr.retrieve(QUESTION, user_id="ama", session_id="s1")
    assert any("titration" in i.text for i in same.recent)
    assert corpus_docs(same)[0] == "titration", same.notes
    # the message alone (the behaviour before) does not single it out: the tests can fail
    cr.retrieval_config = RetrievalConfig(corpus_memory_items=0, corpus_recent_context=False)
    for session in ("new", "s1"):
        before = cr.retrieve(QUESTION, user_id="ama", session_id=session)
        assert corpus_docs(before)[0] != "titration"
