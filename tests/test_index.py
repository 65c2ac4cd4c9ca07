"""UserIndex: BM25, entity index with alias folding, co-occurrence, NEXT edges, BFS; chunking; tokens."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chatrecall.core import ApproxTokenCounter, ConfigError, Record, RegexEntityExtractor, UserIndex, as_token_counter
from chatrecall.core._format import chunk_text
from chatrecall.core._index import tokenize
from chatrecall.core._tokens import truncate_to_tokens

EXTRACT = RegexEntityExtractor()


def rec(i: int, text: str, session: str = "s", ts: float | None = None) -> Record:
    keys = tuple(dict.fromkeys(e.key for e in EXTRACT.extract(text)))
    return Record(id=f"r{i}", text=text, user_id="u", session_id=session, role="user",
                  timestamp=ts if ts is not None else 1000.0 + i, seq=i, entities=keys)


def build(texts: list[str], sessions: list[str] | None = None) -> UserIndex:
    idx = UserIndex(dim=4)
    recs = [rec(i, t, (sessions or ["s"] * len(texts))[i]) for i, t in enumerate(texts)]
    idx.add(recs, np.eye(4, dtype=np.float32)[[i % 4 for i in range(len(texts))]])
    return idx


def test_bm25_matches_reference_formula() -> None:
    texts = ["postgres database migration", "cheese catalogue", "postgres postgres tuning tips", "hello"]
    idx = build(texts)
    got = idx.bm25("postgres tuning")
    docs = [tokenize(t) for t in texts]
    n, avgdl = len(docs), sum(map(len, docs)) / len(docs)
    want = []
    for d in docs:
        s = 0.0
        for term in tokenize("postgres tuning"):
            df = sum(term in x for x in docs)
            if df == 0:
                continue
            tf = d.count(term)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            s += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(d) / avgdl))
        want.append(s)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert int(np.argmax(got)) == 2 and got[1] == 0


def test_entity_index_folds_case_and_plural_and_finds_related() -> None:
    idx = build([
        "TriBridConfig sets the MTU for Zanzibar",
        "TRIBRIDCONFIGS are loaded at start",
        "Zanzibar launch is on Friday",
        "unrelated text",
    ])
    key = EXTRACT.extract("TriBridConfig")[0].key
    scores, related = idx.entity_scores([key])
    assert scores[0] > 0 and scores[3] == 0
    assert scores[1] > 0, "plural/lower-case alias must fold to the same key"
    assert "zanzibar" in related
    assert 0 < scores[2] < scores[0], "memories of co-occurring entities score, less than direct ones"


def test_next_edges_and_bfs_depth() -> None:
    idx = build([f"turn {i}" for i in range(6)] + ["other session"], sessions=["a"] * 6 + ["b"])
    g1, hops1 = idx.neighbours(np.array([2]), np.array([1.0], dtype=np.float32), depth=1)
    assert set(np.flatnonzero(g1 > 0)) == {1, 3}
    g3, hops3 = idx.neighbours(np.array([2]), np.array([1.0], dtype=np.float32), depth=3)
    assert set(np.flatnonzero(g3 > 0)) == {0, 1, 3, 4, 5}
    assert hops3[5] == 3 and hops3[6] == -1, "BFS stays inside the session graph"
    assert g3[1] > g3[0], "score decays with hops"


def test_out_of_order_inserts_are_linked_by_time() -> None:
    idx = UserIndex(dim=4)
    idx.add([rec(0, "late", ts=30.0), rec(1, "early", ts=10.0), rec(2, "middle", ts=20.0)],
            np.zeros((3, 4), dtype=np.float32))
    order = [idx.records[p].text for p in idx.session_positions("s")]
    assert order == ["early", "middle", "late"]


def test_remove_rebuilds_everything() -> None:
    idx = build(["Marie visits Lyon", "Lyon cheese shops", "Paris trip"])
    assert idx.remove(["r0"]) == 1
    assert "r0" not in idx and len(idx) == 2
    scores, _ = idx.entity_scores(["marie"])
    assert not scores.any()
    assert idx.bm25("marie").sum() == 0


def test_recency_half_life() -> None:
    idx = build(["a", "b"])
    r = idx.recency(now=1001.0 + 100.0, half_life_s=100.0)
    assert r[1] == pytest.approx(0.5, rel=1e-4)
    assert r[0] < r[1]


def test_chunking_overlaps_and_respects_size() -> None:
    text = " ".join(f"Sentence number {i} talks about topic {i}." for i in range(100))
    chunks = list(chunk_text(text, max_words=50, overlap_words=12))
    assert len(chunks) > 5
    assert all(len(c.split()) <= 50 for c in chunks)
    assert chunks[0].split(".")[-2].strip() in chunks[1], "consecutive chunks overlap"
    giant = "word " * 500
    assert all(len(c.split()) <= 50 for c in chunk_text(giant, max_words=50))


def test_token_counters() -> None:
    c = ApproxTokenCounter()
    assert c.count("hello world") == 2
    assert c.count("") == 0
    assert c.count("supercalifragilisticexpialidocious") > 1
    assert as_token_counter(lambda s: 7).count("x") == 7
    assert as_token_counter(str.split).count("a b c") == 3  # callables returning token lists
    with pytest.raises(ConfigError, match="token_counter=42"):
        as_token_counter(42)
    text, cut = truncate_to_tokens("one two three four five six", 3, c)
    assert cut and c.count(text) <= 3


@pytest.mark.parametrize("family", [
    ("move", "moves", "moving", "moved"),
    ("wedding", "weddings"),
    ("bake", "baking", "baked"),
    ("run", "runs", "running"),
    ("stop", "stopped"),
    ("vaccine", "vaccines"),
])
def test_a_word_family_is_one_bm25_term(family: tuple[str, ...]) -> None:
    # "when is the move" must match "we're moving on the 14th": one stem per word family
    assert len({tokenize(w)[0] for w in family}) == 1, [tokenize(w) for w in family]


@pytest.mark.parametrize("word", ["thing", "string", "need", "class", "ball"])
def test_stemming_leaves_a_word_with_no_ending_to_drop(word: str) -> None:
    assert tokenize(word) == [word]


def test_a_moving_turn_is_found_by_bm25_for_the_move() -> None:
    idx = build(["we're moving flat on the 14th, van at 8am", "the cat hates the vet"])
    scores = idx.bm25("when is the move")
    assert scores[0] > 0.0 and scores[1] == 0.0


def test_dense_topk_among_scores_only_the_given_positions() -> None:
    rng = np.random.default_rng(3)
    n = UserIndex.EXACT_MAX + 2_000
    idx = UserIndex(dim=32)
    vecs = rng.standard_normal((n, 32)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    idx.add([Record(id=f"r{i}", text=f"t {i}", user_id="u", session_id="s", role="user", timestamp=float(i), seq=i)
             for i in range(n)], vecs)
    q = vecs[7] + 0.1 * vecs[8]
    q /= np.linalg.norm(q)
    small = np.arange(0, 400, 2)  # exact: the true top among the given ones
    pos, sims = idx.dense_topk_among(q, small, 5)
    exact = small[np.argsort(-(vecs[small] @ q))[:5]]
    assert pos.tolist() == exact.tolist() and np.all(np.diff(sims) <= 0)
    large = np.arange(n - 1, -1, -1)  # above EXACT_MAX: a sign-bit shortlist of them, still finds the best
    pos, _ = idx.dense_topk_among(q, large, 5)
    assert pos[0] == 7 and set(pos.tolist()) <= set(large.tolist())
    assert idx.dense_topk_among(q, np.zeros(0, dtype=np.int64), 5)[0].size == 0


def test_nearest_codes_equal_the_full_histogram_cut() -> None:
    # The sampled cut is a speed-up only: on every distribution (spread, clumped, all tied, a few near
    # codes the sample misses) it must return exactly what the full histogram gives.
    import numpy as np

    from chatrecall.core._index import UserIndex

    idx = UserIndex(384)

    def reference(dist: np.ndarray, m: int) -> np.ndarray:
        cum = np.cumsum(np.bincount(dist, minlength=385))
        cut = int(np.searchsorted(cum, m))
        inside = np.flatnonzero(dist < cut)
        return np.concatenate([inside, np.flatnonzero(dist == cut)[: m - inside.size]])

    rng = np.random.default_rng(7)
    cases = []
    for n in (500, 20_000, 100_003):
        cases.append(rng.binomial(384, 0.5, n).astype(np.uint16))  # spread around 192
        cases.append(rng.integers(180, 184, n).astype(np.uint16))  # four values: heavy ties
        cases.append(np.full(n, 190, dtype=np.uint16))  # all tied
        few = rng.binomial(384, 0.5, n).astype(np.uint16)
        few[rng.choice(n, 30, replace=False)] = 3  # a few near codes between sample points
        cases.append(few)
    for dist in cases:
        for m in (1, 50, 1000, 1500):
            if m <= dist.size:
                assert np.array_equal(idx._nearest_codes(dist, m), reference(dist, m)), (dist.size, m)


def test_bare_reactions_are_acknowledgements_that_answer_no_question() -> None:
    idx = UserIndex(dim=4)
    turns = [("user", "The plumber is coming on Thursday."), ("assistant", "Got it."),
             ("user", "Did the plumber confirm?"), ("assistant", "Yes!"),
             ("assistant", "Welcome back! 🙂"), ("assistant", "Noted: billing runs on Postgres."),
             ("user", "haha ok, sounds good, thanks"), ("user", "ok twice"),
             ("assistant", "Rice must be chilled within an hour. Anything else?"), ("user", "thanks!")]
    recs = [Record(id=f"r{i}", text=t, user_id="u", session_id="s", role=r, timestamp=1000.0 + i, seq=i)
            for i, (r, t) in enumerate(turns)]
    idx.add(recs, np.eye(4, dtype=np.float32)[[i % 4 for i in range(len(recs))]])
    got = idx.bare_reactions(np.arange(len(recs))).tolist()
    # "Yes!" answers the question before it (another speaker): it is the answer, not a bare reaction; "thanks!"
    # after "Anything else?" answers nothing
    assert got == [False, True, False, False, True, False, True, False, False, True]


def test_non_answers_are_replies_that_open_by_not_knowing() -> None:
    from chatrecall.core._index import _is_non_answer

    assert _is_non_answer("I'm not sure, I don't think you've told me your tutor's name.", "assistant")
    assert _is_non_answer("Sorry, I don’t have that information.", "assistant")
    assert _is_non_answer("You haven't mentioned the plumber's name yet.", "assistant")
    assert not _is_non_answer("I'm not sure about the time, but Dave said Monday 3 March.", "assistant")  # a fact
    assert not _is_non_answer("I don't know why, but the deploy works now.", "assistant")
    assert not _is_non_answer("I don't know what to cook tonight", "user")  # the user's own turn: content
    assert not _is_non_answer("Your tutor is Lucia Ortega.", "assistant")
    assert not _is_non_answer("I'm not sure " + "word " * 60, "assistant")  # a long reply says more


@pytest.mark.parametrize(("text", "shows"), [
    ("we got ERR_PAYMENT_TIMEOUT 504 from the gateway", True), ("ERR_CONN_RESET again", True),
    ("PERMISSION_DENIED on the bucket", True), ("got a DB_CONNECTION_TIMEOUT", True),
    ("status 504 gateway timeout", True), ("ValueError: bad input", True), ("ECONNREFUSED", True),
    ("we set MAX_RETRIES to 5", False), ("the API_KEY is rotated", False), ("deploy went fine", False),
])
def test_turns_that_show_an_error(text: str, shows: bool) -> None:
    idx = UserIndex(dim=4)
    idx.add([Record(id="r", text=text, user_id="u", session_id="s", role="user", timestamp=1.0)],
            np.eye(4, dtype=np.float32)[:1])
    assert bool(idx.has_error[0]) is shows


@pytest.mark.parametrize(("text", "bare"), [("hiya!", True), ("yo, brb", True), ("gotcha, cheers", True),
                                           ("this evening", False), ("hiya, the boiler is leaking again", False),
                                           # helper-96 / helper-101 (stop 33): injected as memories on "both" turns
                                           ("nice one", True), ("ok cool, night", True), ("great stuff, ta", True),
                                           ("brilliant, night night", True), ("no worries", True), ("love it!", True),
                                           ("legend", True), ("I can't sleep", False), ("nothing works", False),
                                           ("nice one, the tiling was 840", False), ("one more question", False),
                                           ("it works with the dishwasher", False), ("I love Biscuit", False),
                                           ("night shift again tomorrow", False), ("the stuff in the loft", False)])
def test_greetings_and_reactions_are_bare(text: str, bare: bool) -> None:
    from chatrecall.core._index import _is_bare

    assert _is_bare(text) is bare
