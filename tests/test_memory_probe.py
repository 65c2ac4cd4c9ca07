"""A corpus question about the user's own situation looks in memory first; memories and passages share the budget.

"it's 28 degrees today, is it safe to take him for his walk this afternoon?" reads as a general
question (the gate routes it to the corpus), but "him" is the user's dog, who had knee surgery last
week. On a corpus-only turn the memory fallback's small lookup runs before the corpus
(``RetrievalConfig.memory_probe``): a useful memory is kept and informs the corpus query, so the
document on recovery from that surgery comes first rather than the one on walks in the heat.

Fast tests on the fakes check the mechanism; the test on the real model and embedded Chroma checks
the behaviour a user sees, and that it differs with the probe off (the test can fail).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _corpus import corpus_docs, sent_vectors

from chatrecall import BudgetConfig, ChatRecall, ConfigError, RetrievalConfig, Turn

T0 = 1_735_725_600.0
CHAT = [
    ("s1", "user", "ugh, long day at work"),
    ("s1", "assistant", "Sorry to hear that. Want to talk about it?"),
    ("s1", "user", "nah. my dog Biscuit had surgery on his cruciate ligament last week, the vet says short lead "
                   "walks only for six weeks"),
    ("s1", "assistant", "Poor Biscuit. Short, calm walks will help him heal."),
    ("s1", "user", "he hates the cone lol"),
    ("s1", "assistant", "They usually do!"),
    ("s2", "user", "booked flights to lisbon for march!!"),
    ("s2", "assistant", "Lovely! March is a nice time to go."),
    ("s2", "user", "any tips for keeping basil alive indoors? mine keeps wilting"),
    ("s2", "assistant", "Give it a sunny windowsill and water when the top of the soil is dry."),
]
DOCS = [
    {"id": "heat", "text": "Walking dogs in hot weather: above about 25 degrees, walk early in the morning or late "
                           "in the evening, check the pavement with the back of your hand, carry water and watch for "
                           "heavy panting or stumbling, which are signs of heatstroke."},
    {"id": "cruciate", "text": "Recovery after cruciate ligament surgery in dogs: for the first six weeks only short "
                               "lead walks of five to ten minutes, no running, jumping or stairs; heat and "
                               "overexertion slow healing, so on hot days keep walks to the coolest part of the day "
                               "or rest indoors."},
    {"id": "puppy", "text": "How far can a puppy walk? A common rule is five minutes of walking per month of age, "
                            "twice a day, until the puppy is fully grown."},
    {"id": "cats", "text": "Cats cope with hot weather by resting in shade and drinking more; provide cool water and "
                           "a shaded spot, and never leave a cat in a parked car."},
]
QUESTION = "it's 28 degrees today, is it safe to take him for his walk this afternoon?"
#: The same question in the hash embedder's terms: it shares words with the memory that answers it.
FAKE_QUESTION = "is it safe to take him for his short lead walks after the cruciate ligament surgery?"


def _chat(cr: ChatRecall, user: str = "jo") -> None:
    cr.add_many([Turn(text=t, user_id=user, session_id=s, role=r, timestamp=T0 + i * 600)
                 for i, (s, r, t) in enumerate(CHAT)])
    cr.add_documents(DOCS)






# ----------------------------------------------------------------- configuration
@pytest.mark.parametrize("value", [1, "yes", None])
def test_memory_probe_must_be_a_bool(value: Any) -> None:
    with pytest.raises(ConfigError, match=rf"memory_probe={value!r} is invalid: must be True or False"):
        RetrievalConfig(memory_probe=value)


@pytest.mark.parametrize("value", ["rank", "", None, 1])
def test_mix_must_be_alternate_or_score(value: Any) -> None:
    with pytest.raises(ConfigError, match=rf"mix={value!r} is invalid: must be 'alternate' or 'score'"):
        BudgetConfig(mix=value)


def test_defaults() -> None:
    assert RetrievalConfig().memory_probe is True
    assert BudgetConfig().mix == "alternate"


# ----------------------------------------------------------------- mechanism (fakes)
def test_a_corpus_question_about_the_user_probes_memory_before_the_corpus(
        make_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    eng = make_engine()
    _chat(eng)
    assert eng.gate.decide(FAKE_QUESTION).route.value == "corpus"  # the case this rule is for
    sent = sent_vectors(eng, monkeypatch)
    res = eng.retrieve(FAKE_QUESTION, user_id="jo", session_id="new")
    notes = " ".join(res.notes)
    assert "memory looked at before the corpus (the message mentions 'him'" in notes, res.notes  # what the gate saw
    assert ": useful (" in notes and "memory used" in notes
    mem = [i for i in res.items if i.source == "memory"]
    assert any("cruciate" in i.text for i in mem)
    assert res.route.value == "both"
    # the corpus query is informed by the memories the probe kept, as on a turn that searches both
    assert len(sent) == 1
    want = eng.embedder.embed_query(" ".join([FAKE_QUESTION, *(i.text for i in mem[:eng.retrieval_config
                                                                                   .corpus_memory_items])]))
    np.testing.assert_allclose(sent[0], want, atol=1e-6)
    assert eng.metrics.snapshot()["counters"].get("probes.memory") == 1
    assert not eng.metrics.snapshot()["counters"].get("fallbacks.memory")


def test_a_probe_that_finds_nothing_useful_changes_nothing(make_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another user's history says nothing about the question: no memory is injected, the corpus is queried
    with the message alone, and the fallback does not search memory a second time."""
    eng = make_engine()
    _chat(eng)
    eng.add_many([Turn(text="we went to the harbour for fish and chips", user_id="sam", session_id="x",
                       timestamp=T0), Turn(text="the ferry was late again", user_id="sam", session_id="x",
                                           timestamp=T0 + 60)])
    sent = sent_vectors(eng, monkeypatch)
    res = eng.retrieve(FAKE_QUESTION, user_id="sam", session_id="new")
    assert any(n.startswith("memory looked at before the corpus") and n.endswith(": nothing useful")
               for n in res.notes), res.notes
    assert not [i for i in res.items if i.source == "memory"]
    assert any(i.why == "probe: not useful" for i in res.rejected)
    np.testing.assert_allclose(sent[0], eng.embedder.embed_query(FAKE_QUESTION), atol=1e-6)
    assert not eng.metrics.snapshot()["counters"].get("fallbacks.memory")


def test_no_probe_when_turned_off(make_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    off = make_engine(retrieval=RetrievalConfig(memory_probe=False))
    _chat(off)
    sent = sent_vectors(off, monkeypatch)
    res = off.retrieve(FAKE_QUESTION, user_id="jo", session_id="new")
    assert not any("before the corpus" in n for n in res.notes)
    np.testing.assert_allclose(sent[0], off.embedder.embed_query(FAKE_QUESTION), atol=1e-6)
    assert not off.metrics.snapshot()["counters"].get("probes.memory")


def test_a_general_question_is_probed_too_and_gets_no_unrelated_memory(make_engine: Any) -> None:
    """No memory pattern fires on "the e-visa" or on a plain general question: every corpus-only turn is
    probed, and the usefulness check keeps what does not answer it out of the prompt."""
    general = "how does photosynthesis work in plants?"
    eng = make_engine()
    _chat(eng)
    d = eng.gate.decide(general)
    assert d.route.value == "corpus" and d.memory_score == 0
    res = eng.retrieve(general, user_id="jo", session_id="new")
    assert "memory looked at before the corpus: nothing useful" in res.notes
    assert not [i for i in res.items if i.source == "memory"]
    assert eng.metrics.snapshot()["counters"].get("probes.memory") == 1


def test_a_forced_corpus_route_is_not_probed(make_engine: Any) -> None:
    eng = make_engine()
    _chat(eng)
    res = eng.retrieve(FAKE_QUESTION, user_id="jo", session_id="new", route="corpus")
    assert not [i for i in res.items if i.source == "memory"]
    assert not any("before the corpus" in n for n in res.notes)


@pytest.mark.parametrize("mix", ["alternate", "score"])
def test_memories_and_passages_take_turns_at_the_budget(make_engine: Any, mix: str) -> None:
    """Passages score 0.8 x cosine, memories a fused score, often lower: by raw score alone a tight budget
    goes to passages and the one memory that says whose dog it is never reaches the prompt."""
    question = "walking dogs in hot weather: is heatstroke a risk on the pavement for him?"
    eng = make_engine(budget=BudgetConfig(mix=mix))
    _chat(eng)
    roomy = eng.retrieve(question, user_id="jo", session_id="new", route="both", budget_tokens=2000)
    top_mem = max((i for i in roomy.items if i.source == "memory"), key=lambda i: i.score)
    above = [i for i in roomy.items if i.source == "corpus" and i.score > top_mem.score]
    assert len(above) >= 2  # the case this is about: passages outscore the best memory
    budget = sum(i.tokens for i in above)  # by raw score, those passages fill it exactly
    res = eng.retrieve(question, user_id="jo", session_id="new", route="both", budget_tokens=budget)
    kept = {i.id for i in res.items}
    assert (top_mem.id in kept) is (mix == "alternate"), res.explain()
    assert above[0].id in kept  # the best passage is kept either way
    assert res.tokens_used <= budget


# ----------------------------------------------------------------- behaviour (real model, embedded Chroma)
@pytest.mark.model
def test_the_dogs_surgery_finds_the_recovery_document(real_engine: ChatRecall) -> None:
    cr = real_engine
    _chat(cr)
    res = cr.retrieve(QUESTION, user_id="jo", session_id="new")
    assert res.gate.route.value == "corpus"
    assert any(n.startswith("memory looked at before the corpus") and ": useful (" in n for n in res.notes), \
        res.notes
    assert corpus_docs(res)[0] == "cruciate", [(i.why, i.text[:40]) for i in res.items]
    assert any("Biscuit had surgery" in i.text for i in res.items if i.source == "memory")
    # without the probe the corpus is searched with the message alone: the heat document wins
    cr.retrieval_config = RetrievalConfig(memory_probe=False)
    before = cr.retrieve(QUESTION, user_id="jo", session_id="new")
    assert corpus_docs(before)[0] != "cruciate"


# ----------------------------------------------------------------- usefulness thresholds
def test_usefulness_thresholds_default_to_the_tuned_constants_and_are_validated() -> None:
    from chatrecall.core._tuned import STRONG_CORPUS_SCORE, USEFUL_SCORE

    cfg = RetrievalConfig()
    assert (cfg.useful_score, cfg.strong_corpus_score) == (USEFUL_SCORE, STRONG_CORPUS_SCORE)
    for name in ("useful_score", "strong_corpus_score"):
        with pytest.raises(ConfigError, match=rf"{name}=1.5 is invalid: must be between 0 and 1"):
            RetrievalConfig(**{name: 1.5})


@pytest.mark.parametrize("strong", [0.0, 1.0])
def test_a_strong_corpus_hit_is_judged_by_its_own_threshold(make_engine: Any, strong: float) -> None:
    """A memory route whose small lookup was not useful tries the corpus: a passage at or above
    ``strong_corpus_score`` replaces the set-aside memories, a weaker one does not (``useful_score`` at 1.0, so
    no memory is ever useful and only the passage threshold decides); then the memories are kept and, since they
    were not useful either, the best passage beside them (stop 32, C16), never more than one."""
    eng = make_engine(retrieval=RetrievalConfig(useful_score=1.0, strong_corpus_score=strong))
    _chat(eng)
    res = eng.retrieve("recovery after cruciate ligament surgery in dogs: stairs, jumping?", user_id="jo",
                       session_id="new", route="memory")
    notes = " ".join(res.notes)
    if strong == 0.0:
        assert "dropped for a strong corpus hit" in notes, res.notes
        assert not [i for i in res.items if i.source == "memory"]
    else:
        assert "the corpus found nothing strong: kept" in notes, res.notes
        assert "the best passage: kept" in notes, res.notes
        assert [i for i in res.items if i.source == "memory"]
        passages = [i for i in res.items if i.source == "corpus"]
        assert len(passages) == 1 and "cruciate" in passages[0].text.casefold()


def test_without_the_probe_a_weak_corpus_search_falls_back_to_memory(make_engine: Any) -> None:
    """The order before the probe, still there with ``memory_probe=False``: corpus first, then the same small
    lookup when no passage is strong (``strong_corpus_score`` at 1.0: none ever is)."""
    eng = make_engine(retrieval=RetrievalConfig(memory_probe=False, strong_corpus_score=1.0))
    _chat(eng)
    res = eng.retrieve(FAKE_QUESTION, user_id="jo", session_id="new")
    assert any(n.startswith("corpus found nothing strong; memory useful") for n in res.notes), res.notes
    assert any("cruciate" in i.text for i in res.items if i.source == "memory")
    counters = eng.metrics.snapshot()["counters"]
    assert counters.get("fallbacks.memory") == 1 and not counters.get("probes.memory")


@pytest.mark.model
def test_what_are_its_side_effects_finds_the_users_own_medicine(real_engine: ChatRecall) -> None:
    """A known gap of earlier releases: "What are its side effects?" went to the corpus with the message alone."""
    chat = [("s1", "user", "rough week. my GP put me on sertraline 50mg for anxiety"),
            ("s1", "assistant", "That's a common starting dose; give it a few weeks."),
            ("s1", "user", "also the cat knocked my coffee over lol"), ("s1", "assistant", "Classic cat behaviour!"),
            ("s2", "user", "what's a good podcast for running"), ("s2", "assistant", "Try 'Marathon Training Academy'.")]
    docs = [{"id": "sertraline", "text": "Sertraline side effects: nausea, diarrhoea, trouble sleeping, dizziness and "
                                         "sexual side effects are common in the first weeks; most ease within a month."},
            {"id": "fluoxetine", "text": "Fluoxetine side effects: headache, nausea, insomnia and anxiety early in "
                                         "treatment; it has a long half-life."},
            {"id": "ibuprofen", "text": "Ibuprofen side effects: stomach pain, heartburn and, rarely, stomach "
                                        "bleeding; take it with food."}]
    cr = real_engine
    cr.add_many([Turn(text=t, user_id="u", session_id=s, role=r, timestamp=T0 + i * 600)
                 for i, (s, r, t) in enumerate(chat)])
    cr.add_documents(docs)
    res = cr.retrieve("What are its side effects?", user_id="u", session_id="new")
    assert res.gate.route.value == "corpus"
    assert corpus_docs(res)[0] == "sertraline", res.notes
    assert any(i.source == "memory" for i in res.items)
    cr.retrieval_config = RetrievalConfig(memory_probe=False)
    assert corpus_docs(cr.retrieve("What are its side effects?", user_id="u", session_id="new"))[0] != "sertraline"
