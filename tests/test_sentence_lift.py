"""Sentence vectors on by default (S1f, stop 49): thresholds chosen on whole turns read whole turns.

With sentence vectors a turn's dense relevance is the best of its own vector and its sentences'. Two rules compare
a cosine or a fused score with a constant chosen on whole turns:

* the usefulness check (``useful_score``): it reads ``score - sentence_lift``, the score without what a sentence
  added (a short sentence matches on a coincidental word: "Staging is back up." for "How do I roll back a
  deploy?", the guarantee test in ``test_recall_new_user`` that S1c failed);
* the repeated question (``REPEATED_QUESTION_COS``): a turn that asks the query again in one sentence and answers it
  in the next is the answer, not the user's question asked again.

Written with the change; the mute case fails on S1c (sentence vectors on, the rules reading the sentence's cosine).
"""

from __future__ import annotations

from chatrecall import ChatRecall, RetrievalConfig
from chatrecall.testing import HashEmbedder, InMemoryStore

QUERY = "which marathon is Ana training for in October"


def _engine(**kw: object) -> ChatRecall:
    return ChatRecall(store=InMemoryStore(), embedder=HashEmbedder(), retrieval=RetrievalConfig(**kw))  # type: ignore[arg-type]


def test_sentence_vectors_are_on_by_default() -> None:
    assert RetrievalConfig().sentence_vectors is True


def test_a_turn_found_by_one_sentence_reports_what_the_sentence_added() -> None:
    cr = _engine()
    rid = cr.add("We walked the dogs along the canal and had lunch at the pub by the lock. "
                 "Ana is training for the Lisbon marathon in October.", user_id="u", session_id="s1")
    cr.add("The weather was grey all weekend.", user_id="u", session_id="s1")
    res = cr.retrieve(QUERY + "?", user_id="u", route="memory", include_recent=False)
    item = next(i for i in res.items if i.id == rid)
    assert 0.0 < item.sentence_lift < item.score
    assert "one of its sentences matches better than the whole turn" in item.why
    off = _engine(sentence_vectors=False)
    rid = off.add("We walked the dogs along the canal and had lunch at the pub by the lock. "
                  "Ana is training for the Lisbon marathon in October.", user_id="u", session_id="s1")
    res = off.retrieve(QUERY + "?", user_id="u", route="memory", include_recent=False)
    assert all(i.sentence_lift == 0.0 for i in res.items)
    cr.close()
    off.close()


def test_the_usefulness_check_reads_the_score_without_the_sentence_lift() -> None:
    cr = _engine()
    rid = cr.add("We walked the dogs along the canal and had lunch at the pub by the lock. "
                 "Ana is training for the Lisbon marathon in October.", user_id="u", session_id="s1")
    res = cr.retrieve(QUERY + "?", user_id="u", route="memory", include_recent=False)
    item = next(i for i in res.items if i.id == rid)
    gate = cr.gate.decide(QUERY + "?")
    own = item.score - item.sentence_lift
    # a bar between the turn's own score and the score its sentence gave it: the sentence alone does not pass
    between = RetrievalConfig(useful_score=round((own + item.score) / 2, 4))
    strict = ChatRecall(store=cr.store, embedder=cr.embedder, retrieval=between)
    reason = strict._useful([item], [], gate, QUERY)
    assert reason is None or not reason.startswith("score"), reason
    below = ChatRecall(store=cr.store, embedder=cr.embedder,
                       retrieval=RetrievalConfig(useful_score=round(own - 0.01, 4)))
    reason = below._useful([item], [], gate, QUERY)
    assert reason is not None and reason.startswith(f"score {own:.2f}")
    for e in (cr, strict, below):
        e.close()


def test_a_turn_that_asks_the_query_and_answers_it_is_not_muted() -> None:
    cr = _engine()
    rid = cr.add(f"{QUERY.capitalize()}? It is the Lisbon one, she signed up last week.", user_id="u",
                 session_id="s1")
    cr.add("I bought new running shoes.", user_id="u", session_id="s1")
    res = cr.retrieve(QUERY + "?", user_id="u", route="memory", include_recent=False)
    assert rid in [i.id for i in res.items]
    cr.close()
