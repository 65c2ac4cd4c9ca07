"""core._rerank: hybrid re-ranking of upstream candidates (what the framework postprocessors call)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatrecall import ConfigError, InvalidInputError
from chatrecall.core._rerank import Candidate, rerank
from chatrecall.core._tokens import ApproxTokenCounter
from chatrecall.testing import HashEmbedder

NOW = 1_700_000_000.0
DAY = 86400.0


def ids(items: Any) -> list[str]:
    return [it.id for it in items]


def test_keyword_evidence_beats_upstream_order() -> None:
    cands = [
        Candidate(id="a", text="The weather in Lyon was sunny all week.", score=0.8),
        Candidate(id="b", text="The import script failed with ECONNREFUSED on startup.", score=0.8),
        Candidate(id="c", text="We talked about French cheeses and wine.", score=0.8),
    ]
    out = rerank("why did the import script fail?", cands)
    assert ids(out)[0] == "b"
    assert out[0].components["keyword"] == pytest.approx(1.0)
    assert out[1].components["keyword"] == 0.0
    assert "keyword" in out[0].why and "upstream #2" in out[0].why


def test_entity_overlap_is_idf_weighted() -> None:
    # Both mention parse_tasting_notes(); only one also mentions the rarer ECONNREFUSED.
    cands = [
        Candidate(id="common", text="parse_tasting_notes() splits aroma and finish."),
        Candidate(id="both", text="parse_tasting_notes() raised ECONNREFUSED yesterday."),
        Candidate(id="other", text="parse_tasting_notes() handles empty fields."),
        Candidate(id="none", text="Nothing relevant here at all."),
    ]
    out = rerank("parse_tasting_notes() and ECONNREFUSED", cands, weights={"entity": 1.0})
    assert ids(out)[0] == "both"
    ent = {it.id: it.components["entity"] for it in out}
    assert ent["both"] == pytest.approx(1.0)
    assert 0.0 < ent["common"] < 0.5 < ent["both"]
    assert ent["none"] == 0.0
    assert "entity" in out[0].why


def test_upstream_scores_normalised() -> None:
    def rel(scores: list[float]) -> list[float]:
        cands = [Candidate(id=str(i), text=f"text number {i}", score=s) for i, s in enumerate(scores)]
        out = rerank("zzz", cands, weights={"relevance": 1.0})
        by_id = {it.id: it.components["relevance"] for it in out}
        return [by_id[str(i)] for i in range(len(scores))]

    assert rel([0.9, 0.5, 0.1]) == pytest.approx([0.9, 0.5, 0.1])  # cosine-like: kept as is
    assert rel([12.0, 6.0, 3.0]) == pytest.approx([1.0, 0.5, 0.25])  # BM25-like: divided by the best
    assert rel([-2.0, 0.0, 2.0]) == pytest.approx([0.0, 0.5, 1.0])  # logits: min-max


def test_embedder_gives_cosine_relevance_and_reuses_given_embeddings() -> None:
    emb = HashEmbedder(dim=64)
    given_vec = emb.embed_documents(["postgres database billing"])[0]
    cands = [
        Candidate(id="x", text="cats and dogs", score=0.99),
        Candidate(id="y", text="ignored text", score=0.01, embedding=given_vec * 3.0),  # not unit: normalised
    ]
    calls = emb.calls
    out = rerank("postgres database billing", cands, embedder=emb, weights={"relevance": 1.0})
    assert ids(out) == ["y", "x"]
    assert out[0].components["relevance"] == pytest.approx(1.0, abs=1e-5)
    assert emb.calls - calls == 2  # the query and "cats and dogs"; y's vector was given
    assert "cosine" in out[0].why


def test_embedding_dimension_mismatch_names_the_candidate() -> None:
    cands = [Candidate(id="bad", text="t", embedding=np.ones(3, dtype=np.float32))]
    with pytest.raises(InvalidInputError, match="'bad'.*dimension 3"):
        rerank("q", cands, embedder=HashEmbedder(dim=16))


def test_recency_component_when_timestamps_given() -> None:
    cands = [
        Candidate(id="old", text="deploy notes", timestamp=NOW - 30 * DAY),
        Candidate(id="new", text="deploy notes again", timestamp=NOW - DAY),
        Candidate(id="undated", text="deploy notes undated"),
    ]
    out = rerank("zzz", cands, weights={"recency": 1.0}, now=NOW, half_life_s=7 * DAY, diversity_threshold=1.0)
    assert ids(out) == ["new", "old", "undated"]
    rec = {it.id: it.components["recency"] for it in out}
    assert rec["new"] == pytest.approx(0.5 ** (1 / 7), rel=1e-4)
    assert rec["old"] == pytest.approx(0.5 ** (30 / 7), rel=1e-3)
    assert rec["undated"] == 0.0


def test_missing_components_are_dropped_and_weights_renormalised() -> None:
    # No embedder, no upstream score, no timestamps, no entities: only keyword is available.
    cands = [Candidate(id="a", text="helm chart deploy"), Candidate(id="b", text="cheese")]
    out = rerank("helm chart", cands)
    assert set(out[0].components) == {"keyword"}
    assert out[0].score == pytest.approx(1.0)  # renormalised: keyword carries the whole weight
    # Weights only on a missing component: the available ones count equally instead of all scoring 0.
    out = rerank("helm chart", cands, weights={"recency": 1.0})
    assert ids(out)[0] == "a" and out[0].score > 0


def test_near_duplicates_dropped() -> None:
    cands = [
        Candidate(id="a", text="We deploy the billing service with Helm on Kubernetes.", score=0.9),
        Candidate(id="a2", text="We deploy the billing service with Helm on Kubernetes!", score=0.85),
        Candidate(id="b", text="Billing runs on Postgres.", score=0.5),
    ]
    out = rerank("how do we deploy billing?", cands)
    assert ids(out) == ["a", "b"]
    kept_all = rerank("how do we deploy billing?", cands, diversity_threshold=1.0)
    assert ids(kept_all) == ["a", "b"]  # identical word sets: Jaccard 1.0 still a duplicate
    cands[1] = Candidate(id="a2", text="We deploy the billing service with Helm on bare metal.", score=0.85)
    assert "a2" in ids(rerank("how do we deploy billing?", cands, diversity_threshold=1.0))


def test_budget_and_top_n() -> None:
    counter = ApproxTokenCounter()
    cands = [Candidate(id=f"c{i}", text=f"topic{i} " + "word " * (5 + i), score=1.0 - i * 0.05) for i in range(10)]
    out = rerank("word", cands, budget_tokens=30, token_counter=counter)
    assert out and sum(it.tokens for it in out) <= 30
    assert all(it.tokens == counter.count(it.text) for it in out)
    assert len(rerank("word", cands, top_n=3, diversity_threshold=1.0)) == 3


def test_top_n_widens_past_duplicates() -> None:
    # The 20 best are near-identical: top_n=2 must still find the distinct one further down.
    cands = [Candidate(id=f"d{i}", text="same words about helm deploy", score=0.99) for i in range(20)]
    cands.append(Candidate(id="distinct", text="postgres billing", score=0.1))
    out = rerank("helm deploy postgres", cands, top_n=2)
    assert ids(out) == ["d0", "distinct"]


def test_duplicate_ids_keep_first_and_ties_keep_input_order() -> None:
    cands = [
        Candidate(id="a", text="alpha one", score=0.5),
        Candidate(id="b", text="beta two", score=0.5),
        Candidate(id="a", text="alpha duplicate", score=0.9),
        Candidate(id="c", text="gamma three", score=0.5),
    ]
    out = rerank("zzz", cands)
    assert ids(out) == ["a", "b", "c"]
    assert out[0].text == "alpha one"


def test_empty_candidates() -> None:
    assert rerank("anything", []) == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"top_n": 0}, "top_n=0"),
        ({"budget_tokens": -1}, "budget_tokens=-1"),
        ({"diversity_threshold": 1.5}, "diversity_threshold=1.5"),
        ({"half_life_s": 0}, "half_life_s=0"),
        ({"now": math.nan}, "now=nan"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        rerank("q", [Candidate(id="a", text="t")], **kwargs)


def test_bad_input_is_named() -> None:
    with pytest.raises(InvalidInputError, match="query"):
        rerank("  ", [])
    with pytest.raises(InvalidInputError, match=r"candidates\[0\]"):
        rerank("q", [{"id": "a", "text": "t"}])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="unknown component"):
        rerank("q", [], weights={"vibes": 1.0})
    with pytest.raises(InvalidInputError, match="score"):
        Candidate(id="a", text="t", score=math.inf)
    with pytest.raises(InvalidInputError, match="id"):
        Candidate(id="", text="t")
    with pytest.raises(InvalidInputError, match="embedding"):
        Candidate(id="a", text="t", embedding=np.ones((2, 2)))


_words = st.sampled_from(["helm", "deploy", "postgres", "billing", "cheese", "lyon", "marie", "error", "script"])


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.lists(_words, min_size=1, max_size=8).map(" ".join), min_size=0, max_size=12),
    scores=st.lists(st.one_of(st.none(), st.floats(-5, 5)), min_size=12, max_size=12),
    top_n=st.one_of(st.none(), st.integers(1, 6)),
    budget=st.one_of(st.none(), st.integers(0, 40)),
)
def test_properties(texts: list[str], scores: list[float | None], top_n: int | None, budget: int | None) -> None:
    cands = [Candidate(id=f"n{i}", text=t, score=scores[i]) for i, t in enumerate(texts)]
    out = rerank("helm deploy billing", cands, top_n=top_n, budget_tokens=budget)
    got = ids(out)
    assert len(got) == len(set(got)) and set(got) <= {c.id for c in cands}
    assert [it.score for it in out] == sorted((it.score for it in out), reverse=True)
    assert all(0.0 <= it.score <= 1.0 + 1e-6 for it in out)
    if top_n is not None:
        assert len(out) <= top_n
    if budget is not None:
        assert sum(it.tokens for it in out) <= budget
    if cands and budget is None:
        assert out  # something always survives when nothing caps it


@pytest.mark.model
def test_real_model_paraphrase(st_embedder: Any) -> None:
    cands = [
        Candidate(id="weather", text="It was sunny in Lyon all week.", score=0.9),
        Candidate(id="db", text="We run PostgreSQL in production, not SQLite.", score=0.2),
        Candidate(id="cheese", text="Comté pairs well with a dry white wine.", score=0.8),
    ]
    out = rerank("Which database engine do we use?", cands, embedder=st_embedder, weights={"relevance": 1.0})
    assert ids(out)[0] == "db"
    assert out[0].components["relevance"] > out[1].components["relevance"] + 0.1
