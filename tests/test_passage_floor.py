"""The opt-in passage floor: weak corpus passages after the right one are not injected.

A corpus search returns up to ``k`` passages over ``relevance_floor``. After the one that answers, the rest are
the corpus's nearest neighbours on other subjects ("how many days does a landlord have to fix a leaking sink?"
also got the deposit, lease-end and trash documents). With ``passage_floor`` / ``passage_share`` a passage under
``max(passage_floor, passage_share x the best passage's score)`` is recorded in ``rejected`` with that cut.
Off by default (``benchmarks/results/passage_floor.md`` says why and what it measured).

The documents are a new user's, from a scripted chat (a tenant's lease, repairs and pet policy).
"""

from __future__ import annotations

from typing import Any

import pytest
from _corpus import corpus_docs

from chatrecall import ChatRecall, ConfigError, RetrievalConfig

DOCS = [
    {"id": "termination", "text": "Tenants who want to end a lease before its end date must give 60 days' written "
                                  "notice to the landlord and pay an early termination fee equal to one month's rent."},
    {"id": "deposit", "text": "The landlord must return the security deposit within 30 days after the tenant moves "
                              "out, with an itemized list of any deductions. Normal wear and tear cannot be deducted."},
    {"id": "repairs", "text": "Tenants should report repairs to the landlord in writing and keep a copy. The landlord "
                              "has 14 days to fix non-emergency problems such as leaking faucets or sinks, and 24 "
                              "hours for emergencies such as no heat, no water or a gas leak."},
    {"id": "pets", "text": "Cats and small dogs are allowed with a refundable pet deposit of $300 per animal and pet "
                           "rent of $25 per month per animal. A maximum of two pets is allowed per unit."},
    {"id": "trash", "text": "Trash is collected every Monday and recycling every other Thursday. Flatten cardboard "
                            "boxes and rinse containers before putting them in the blue bin."},
]
#: What benchmarks/bench_passage_floor.py chooses on the tune files.
OPT_IN = RetrievalConfig(passage_floor=0.18, passage_share=0.6)


def _passages(res: Any) -> list[str]:
    return [i.record.session_id for i in res.items if i.source == "corpus"]


# ----------------------------------------------------------------- configuration
def test_off_by_default() -> None:
    cfg = RetrievalConfig()
    assert (cfg.passage_floor, cfg.passage_share) == (0.0, 0.0)


@pytest.mark.parametrize("name", ["passage_floor", "passage_share"])
@pytest.mark.parametrize("value", [-0.1, 1.5, "0.5", True])
def test_bad_values_fail_at_once_naming_the_field(name: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=rf"{name}={value!r} is invalid: must be between 0 and 1"):
        RetrievalConfig(**{name: value})


# ----------------------------------------------------------------- mechanism (fakes)
def test_passages_under_the_cut_are_rejected_with_it(make_engine: Any) -> None:
    eng = make_engine()
    eng.add_documents(DOCS)
    q = "landlord days to fix leaking sinks repairs"
    before = eng.retrieve(q, user_id="u", route="corpus")
    scores = sorted((i.score for i in before.items if i.source == "corpus"), reverse=True)
    assert len(scores) >= 2, before.explain()  # the fake embedder finds several passages: the case this is for
    eng.retrieval_config = RetrievalConfig(passage_share=(scores[0] + scores[1]) / (2 * scores[0]))
    res = eng.retrieve(q, user_id="u", route="corpus")
    kept = [i for i in res.items if i.source == "corpus"]
    assert [i.score for i in kept] == scores[:1]  # only the best clears a cut between it and the second
    dropped = [i for i in res.rejected if i.source == "corpus"]
    assert len(dropped) == len(scores) - 1
    assert all("passage_share" in i.why and f"the best {scores[0]:.2f}" in i.why for i in dropped), \
        [i.why for i in dropped]
    # an absolute floor over every passage leaves none (the best is not protected by the floor)
    eng.retrieval_config = RetrievalConfig(passage_floor=1.0)
    res = eng.retrieve(q, user_id="u", route="corpus")
    assert not _passages(res)
    assert len([i for i in res.rejected if i.source == "corpus"]) == len(scores)


# ----------------------------------------------------------------- behaviour (real model, embedded Chroma)
@pytest.mark.model
def test_the_repair_question_gets_the_repair_document_alone(real_engine: ChatRecall) -> None:
    cr = real_engine
    cr.add_documents(DOCS)
    q = "how many days does a landlord have to fix a leaking sink?"
    before = cr.retrieve(q, user_id="u", session_id="s", route="corpus")
    assert _passages(before)[0] == "repairs" and len(_passages(before)) >= 3  # the weak ones ride along today
    cr.retrieval_config = OPT_IN
    res = cr.retrieve(q, user_id="u", session_id="s", route="corpus")
    assert _passages(res) == ["repairs"], res.explain()
    assert corpus_docs(res) == corpus_docs(before)  # the ranking is unchanged: only the injection is cut
    assert res.tokens_used < before.tokens_used


@pytest.mark.model
def test_a_general_question_keeps_at_most_its_best_near_miss(real_engine: ChatRecall) -> None:
    """ "how long do cats usually live?" is not in a tenant's documents: the pet clause is its nearest neighbour
    and stays (over the floor), the repair clause under the floor goes."""
    cr = real_engine
    cr.add_documents(DOCS)
    q = "how long do cats usually live?"
    before = cr.retrieve(q, user_id="u", session_id="s", route="corpus")
    cr.retrieval_config = OPT_IN
    res = cr.retrieve(q, user_id="u", session_id="s", route="corpus")
    assert len(_passages(res)) < len(_passages(before)), (before.explain(), res.explain())
    assert set(_passages(res)) <= {"pets"}
