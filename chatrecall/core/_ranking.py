"""Memory ranking: candidates, components, fusion, neighbour / question / session support.

One pure function, :func:`rank_memories`, over a :class:`UserIndex`: the
engine calls it under the user's lock and turns the result into
:class:`ScoredItem` s; the benchmark tuner calls it directly with other
:class:`RankParams`. Every tuned constant comes from :mod:`._tuned`.
numpy and the standard library only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np

from . import _tuned
from ._classifier import STRATEGY_FOR, TimeCue, classify_query, time_cue
from ._config import RetrievalConfig
from ._index import UserIndex, _slots, tokenize
from ._types import Entity, QueryType, Strategy

__all__ = ["COMPONENTS", "DEFAULT_PARAMS", "PRESETS", "RankParams", "Ranking", "rank_memories", "topk",
           "topk_nonzero"]

COMPONENTS = ("recency", "relevance", "keyword", "entity", "graph")
#: Components scored on a turn alone; ``graph`` is computed from them.
BASE = ("recency", "relevance", "keyword", "entity")
#: Strategies whose time component follows the query's time cues ("when", "two weeks ago").
TIME_AWARE = frozenset({Strategy.HYBRID, Strategy.GRAPH, Strategy.ENTITY})
#: Fixed weight presets of the single strategies (hybrid uses the config weights).
PRESETS: Mapping[Strategy, Mapping[str, float]] = MappingProxyType(
    {Strategy(name): MappingProxyType(dict(w)) for name, w in _tuned.PRESETS.items()}
)


def topk(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest scores, best first, ties in index order (argpartition, then sort only k)."""
    if scores.size == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64)
    k = min(k, scores.size)
    part = np.sort(np.argpartition(-scores, k - 1)[:k])
    return part[np.argsort(-scores[part], kind="stable")]


def topk_nonzero(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the (at most) k largest non-zero scores, best first; sparse-friendly."""
    nz = np.flatnonzero(scores != 0)  # on a bool mask: several times faster than on floats
    if nz.size == 0:
        return nz.astype(np.int64)
    return nz[topk(scores[nz], k)].astype(np.int64)


@dataclasses.dataclass(frozen=True, slots=True)
class RankParams:
    """The knobs of the fusion (defaults: :mod:`._tuned`); the tuner passes others.

    Attributes:
        session_share: Share of the graph component that is session support
            (the best other matching turn of the turn's session); the rest is
            support from conversation neighbours.
        question_pass: Share of its own score a turn that asks something
            hands to the next turn when another person says it (the answer);
            a chatbot's own question hands nothing (its replies often end
            with a question the user's next turn does not answer).
        normalise_relevance: Stretch cosine relevance per query: the dense
            candidates' cut-off maps to 0, the best to its own cosine.
        time_share: Weight of the time / answer-type fit, as a share of
            relevance + keyword, when the query has such a cue.
        error_share: The same fit's weight when the query asks for an error
            and turns that show one (a code, a traceback) should win.
        hop_decay: Neighbour support decay per hop beyond the first.
        specific_boost: Keyword weight added on the auto path for queries with
            exact anchors.
        auto: Strategy per query type on the automatic path.
        assistant_answer_pass: Share handed on when the answer is the chat
            assistant's reply (a chatbot transcript: the user's own question
            is rarely what they want back).
        keyword_scale: ``"max"`` divides BM25 by the best turn's score;
            ``"ideal"`` by the score of a turn holding every query term once.
        extended_cues: Read the newer query cues ("how many days between",
            "last Saturday", errors); False reproduces the older reading.
    """

    session_share: float = _tuned.SESSION_SHARE
    question_pass: float = _tuned.QUESTION_PASS
    normalise_relevance: bool = bool(_tuned.NORMALISE_RELEVANCE)
    time_share: float = _tuned.TIME_SHARE
    error_share: float = _tuned.ERROR_FIT_SHARE
    hop_decay: float = _tuned.HOP_DECAY
    specific_boost: float = _tuned.SPECIFIC_KEYWORD_BOOST
    assistant_answer_pass: float = _tuned.ASSISTANT_ANSWER_PASS
    keyword_scale: str = _tuned.KEYWORD_SCALE
    auto: Mapping[QueryType, Strategy] = dataclasses.field(default_factory=lambda: STRATEGY_FOR)
    extended_cues: bool = True


DEFAULT_PARAMS = RankParams()


@dataclasses.dataclass(frozen=True, slots=True)
class Ranking:
    """What :func:`rank_memories` found.

    Attributes:
        strategy: The strategy used.
        query_type: The classifier's reading of the query.
        positions: Index positions of the ranked turns, best first (``k + 5``
            at most: the tail is what was left out).
        scores: Final score per ranked turn.
        components: Component name -> value per ranked turn (weighted ones only).
        hops: Hop count of the neighbour that carried a real share of the score (0 = none).
        dense_rank: Position -> rank among the dense candidates.
        keys: The query's entity keys.
        related: Entities co-occurring with the query's, used by the entity component.
        time_cue: The query's time / answer-type cue.
        support: Per ranked turn, the score a question handed it as its answer
            (``question_pass`` / ``assistant_answer_pass``; 0 for most), shown in
            the items' ``why``: it is in the final score but no component.
        since_answer: Per ranked turn, whether that score came from the query
            asked again: the turn is what the user said since the chatbot's
            old answer to it (``why`` says so).
        lifted: Per ranked turn, whether it states a change and was moved
            above an earlier turn about the same thing (:func:`_lift_changes`;
            ``why`` says so).
        outranked: Per ranked turn, whether a later change about the same thing
            was moved above it (``why`` says so: the two can show the same score).
        sentence_lift: Per ranked turn, what its best sentence added to its
            weighted relevance over the turn's own vector (0 without sentence
            vectors; ``ScoredItem.sentence_lift``).
    """

    strategy: Strategy
    query_type: QueryType
    positions: np.ndarray
    scores: np.ndarray
    components: Mapping[str, np.ndarray]
    hops: np.ndarray
    dense_rank: Mapping[int, int]
    keys: Sequence[str]
    related: Sequence[str]
    time_cue: TimeCue
    support: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    since_answer: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=bool))
    lifted: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=bool))
    outranked: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=bool))
    sentence_lift: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.float32))


def _weights(strategy: Strategy | None, qtype: QueryType, config: RetrievalConfig,
             weights: Mapping[str, float] | None, params: RankParams) -> tuple[Strategy, dict[str, float]]:
    strat = strategy or params.auto.get(qtype, Strategy.HYBRID)
    raw = weights or (config.weights if strat is Strategy.HYBRID else PRESETS[strat])
    w = {c: float(raw.get(c, 0.0)) for c in COMPONENTS}
    if strategy is None and qtype is QueryType.SPECIFIC and strat is Strategy.HYBRID:
        w["keyword"] += params.specific_boost  # exact anchors: lean on BM25
    return strat, w


def _since_the_answer(idx: UserIndex, cand: np.ndarray, cos: np.ndarray, base: np.ndarray, q: np.ndarray,
                      ans: np.ndarray, to_bot: np.ndarray, bot: np.ndarray) -> np.ndarray:
    """Where each answered question's share goes (slots into ``cand``): its answer, except for the query asked
    again (a stored question at REPEATED_QUESTION_COS or above) answered by the chatbot, whose share goes to the
    user's most relevant later statement about the same thing (a user turn after the reply that asks nothing, is
    not a bare reaction and whose turn cosine to the reply is at least UPDATE_COS), when one is a candidate.
    ``bot``: per candidate, a chatbot's reply."""
    again = to_bot & (cos[q] >= _tuned.REPEATED_QUESTION_COS)
    if not again.any():
        return ans
    said = ~bot & ~idx.asks(cand) & ~idx.bare_reactions(cand) & ~idx.non_answers(cand)
    if not said.any():
        return ans
    out = ans.copy()
    ts = idx.timestamps[cand]
    for j in np.flatnonzero(again).tolist():
        a = int(ans[j])
        later = np.flatnonzero(said & (ts > ts[a]))
        if later.size == 0:
            continue
        same = idx.embeddings[cand[later]] @ idx.embeddings[cand[a]] >= _tuned.UPDATE_COS
        if same.any():
            pick = later[same]
            out[j] = int(pick[np.argmax(base[pick])])
    return out


def _answered_turn_support(idx: UserIndex, cand: np.ndarray, base: np.ndarray, bot: np.ndarray,
                           reply: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per candidate: the base score of the user's turn just before it (the turn a reply answers; 0 where that
    turn is not a candidate or is another reply), and whether there is such a turn. ``bot``: the candidates said
    by the assistant; ``reply``: those that take this support."""
    prev = _slots(cand, idx.previous_positions(cand))
    answers = reply & (prev >= 0) & ~bot[prev.clip(min=0)]
    return np.where(answers, base[prev.clip(min=0)], 0.0).astype(np.float32), answers


def _lift_changes(idx: UserIndex, cand: np.ndarray, final: np.ndarray, bot: np.ndarray, shares: np.ndarray,
                  window: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A user's statement that something changed ranks above the earlier turns about the same thing among the first
    ``window``: "her dose is going up to 3 units from tonight" above "she's on 2 units at 7am and 7pm" and the replies
    to it (helper-118 and helper-119: the old value came first, the update third or lower). Only candidates already
    in the first ``window`` move; scores of the others are kept.

    "The same thing" is either of:

    - the change shares a word with the query (``shares``) and is close to the earlier turn (turn cosine at least
      UPDATE_COS). A change sharing no word with the query does not move this way: an unrelated change, "Swapped my
      Saturday shift with Dana, so I'm on at 19:45 instead.", rose above the memories about "What time does the club
      run start?" without that guard (stop 40's C56c);
    - the change names what it replaces (:meth:`UserIndex.replaced`: "I sold the Eureka and bought a Mahlkönig
      E65S") and the earlier turn names it too and shares a word with the query ("I use a Eureka Mignon Specialita
      grinder" for "Which grinder am I bringing?"; nu45, stop 43: the change says no word of the question).

    A chatbot's replies never move (``bot``). The caller applies it to a chatbot's store only (the candidates hold an
    assistant turn): stop 40's unscoped version (C56) gained on the held-out chats but cost LoCoMo (two people
    narrating, where "now" and "pushing" are not updates) and a LongMemEval tally (C66, stop 42; docs/benchmarks.md).

    Returns:
        The scores, and per candidate whether it was lifted and whether a change was lifted above it.
    """
    lifted = np.zeros(cand.size, dtype=bool)
    outranked = np.zeros(cand.size, dtype=bool)
    top = topk(final, window)
    top = top[final[top] > 0]
    pos = cand[top]
    change = idx.changes(pos) & ~bot[top] & ~idx.asks(pos)
    if not change.any():
        return final, lifted, outranked
    emb = idx.embeddings[pos]
    ts = idx.timestamps[pos]
    on_topic = shares[top]
    out = final.copy()
    for j in np.flatnonzero(change).tolist():
        about = np.zeros(top.size, dtype=bool)
        if on_topic[j]:
            about = emb @ emb[j] >= _tuned.UPDATE_COS
        gone = idx.replaced(int(pos[j]))
        if gone:
            about |= on_topic & idx.naming(pos, gone)
        earlier = about & (ts < ts[j]) & (final[top] >= out[top[j]])
        earlier[j] = False
        if earlier.any():
            out[top[j]] = float(final[top][earlier].max()) + 1e-4
            lifted[top[j]] = True
            outranked[top[earlier]] = True
    return out, lifted, outranked & ~lifted


def _told_changes(idx: UserIndex, seen: np.ndarray | None, later: np.ndarray,
                  allowed: np.ndarray | None) -> np.ndarray:
    """The positions among ``seen`` (what the caller already shows: the recent window) where the user states a
    change and asks nothing ("The Hendersons have moved Biscuit to Wednesdays from now on."), stored up to
    ``until`` (not in ``later``) and in ``allowed`` when given."""
    if seen is None or seen.size == 0:
        return np.zeros(0, dtype=np.int64)
    p = np.asarray(seen, dtype=np.int64)
    if later.size:
        p = p[~np.isin(p, later)]
    if allowed is not None:
        p = p[np.isin(p, allowed)]
    return p[idx.changes(p) & ~idx.asks(p) & ~idx.has_role(p, "assistant")]


def _seen_changes_above(idx: UserIndex, told: np.ndarray, told_shares: np.ndarray, cand: np.ndarray,
                        final: np.ndarray, shares: np.ndarray, outranked: np.ndarray,
                        window: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which changes the caller already shows (``told``: the recent window's, :func:`_told_changes`) go with the
    result, just above the earlier ranked turn they change (nu50: "Which day am I walking Biscuit now?" three turns
    after "The Hendersons have moved Biscuit to Wednesdays from now on." got only the Tuesday memories; stop 45's
    U1b, which dropped such memories instead, lost the memories stating two facts).

    "Changes" is :func:`_lift_changes`' rule, over the first ``window`` candidates: the change shares a word with
    the query and is close to the turn (turn cosine at least UPDATE_COS), or names what it replaces and the turn
    names it and shares a word with the query. Among the turns a change is about, it goes just above the one it is
    closest to (turn cosine), not the best-scored one: the loose rule also holds for a neighbour's fact, which may
    rank first (stop 46's U2d). Nothing is dropped: the old turn stays, ranked below.

    Returns:
        The slots into ``told`` that go with the result, their scores (just above the closest turn each changes),
        and ``outranked`` with those turns marked.
    """
    top = topk(final, window)
    top = top[final[top] > 0]
    keep: list[int] = []
    scores: list[float] = []
    if top.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32), outranked
    pos = cand[top]
    emb = idx.embeddings[pos]
    ts = idx.timestamps[pos]
    on_topic = shares[top]
    out = outranked
    for j, p in enumerate(told.tolist()):
        about = np.zeros(top.size, dtype=bool)
        cos = emb @ idx.embeddings[p]
        if told_shares[j]:
            about = cos >= _tuned.UPDATE_COS
        gone = idx.replaced(p)
        if gone:
            about |= on_topic & idx.naming(pos, gone)
        about &= ts < idx.timestamps[p]
        if about.any():
            # above the turn it is closest to: the loose cosine rule also holds for a neighbour's fact ("the window
            # cleaner moved our slot" is about "Marta, the cleaner, comes every other Wednesday" too)
            near = int(np.flatnonzero(about)[np.argmax(cos[about])])
            keep.append(j)
            scores.append(float(final[top[near]]) + 1e-4)
            if out is outranked:
                out = outranked.copy()
            out[top[near]] = True
    return np.asarray(keep, dtype=np.int64), np.asarray(scores, dtype=final.dtype), out


def _error_keyword(keyword: np.ndarray, shows_error: np.ndarray) -> np.ndarray:
    """For "what was that error?": a turn that shows an error (``ERR_CONN_RESET``, a traceback) matches the
    word "error" as fully as a turn that only says it ("the error is gone"), which BM25 alone cannot see."""
    return np.maximum(keyword, shows_error.astype(np.float32))


def rank_memories(
    idx: UserIndex,
    query: str,
    qvec: np.ndarray,
    entities: Sequence[Entity],
    *,
    strategy: Strategy | None,
    k: int,
    now: float,
    config: RetrievalConfig,
    allowed: np.ndarray | None = None,
    exclude: np.ndarray | None = None,
    weights: Mapping[str, float] | None = None,
    params: RankParams = DEFAULT_PARAMS,
    until: float | None = None,
    seen: np.ndarray | None = None,
) -> Ranking:
    """Rank one user's memories for ``query`` (call under the user's lock).

    Candidates: exact cosine top-C, BM25 top-C, entity top-C, the newest C
    (recency strategy) and the turns of a period the query names; each
    candidate's conversation neighbours join them. Every candidate gets the
    base components (relevance, keyword, entity, recency or time / answer-type
    fit). A turn that asks something and is answered by another speaker hands
    ``question_pass`` of its base score to the answer. The graph component
    then adds the support of linked turns: the best neighbour within
    ``graph_depth`` NEXT/PREV hops and the best other turn of the session.

    Args:
        idx: The user's index.
        query: The query text.
        qvec: Its embedding.
        entities: Its entities.
        strategy: A forced strategy, or None for the automatic choice.
        k: Turns wanted (``k + 5`` are ranked; the tail is reported as left out).
        now: Reference time (recency, "two weeks ago").
        config: Weights, candidates, graph depth, half-life, relevance floor.
        allowed: Positions a result may take (a session filter), or None.
        exclude: Positions never returned (the recent window), or None.
        weights: Weights overriding the strategy's.
        params: Fusion knobs.
        until: Epoch seconds: turns stored after it are never candidates, nor fill a candidate list (the dense,
            entity, newest and period lists are taken among the turns up to it), or None.
        seen: Positions the caller already shows with the result (the recent window, ``exclude_ids``; a subset
            of ``exclude``), or None. Never candidates; a user's change among them is returned just above the
            earlier ranked turn it changes (:func:`_seen_changes_above`), in a chatbot's store only.
    """
    qtype = classify_query(query, entities)
    strat, w = _weights(strategy, qtype, config, weights, params)
    cue = time_cue(query, entities, now, extended=params.extended_cues) if strat in TIME_AWARE else TimeCue()
    has_cue = bool(cue)
    if has_cue:
        # The query names a time (or asks for an error): the time component measures fit to it, not recency.
        share = max(params.time_share, params.error_share) if cue.asks_error else params.time_share
        w["recency"] = max(w["recency"], share * (w["relevance"] + w["keyword"]))
    total_w = sum(w.values()) or 1.0
    w = {c: w[c] / total_w for c in COMPONENTS}
    empty = Ranking(strat, qtype, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32), {},
                    np.zeros(0, dtype=np.int64), {}, [e.key for e in entities], [], cue)
    n = len(idx)
    if n == 0:
        return empty
    C = max(config.candidates, k)
    ex = exclude if exclude is not None else np.zeros(0, dtype=np.int64)
    later = np.zeros(0, dtype=np.int64)
    if until is not None:
        later = np.flatnonzero(idx.timestamps > until)
        if later.size:  # the turns up to ``until`` are the allowed ones; the later ones are excluded
            ex = np.union1d(ex, later)
            early = np.flatnonzero(idx.timestamps <= until)
            allowed = early if allowed is None else allowed[np.isin(allowed, early)]
            if allowed.size == 0:
                return empty
    told = _told_changes(idx, seen, later, allowed)

    parts: list[np.ndarray] = []
    dense_rank: dict[int, int] = {}
    dense_cut = 0.0
    if w["relevance"] > 0 or strat is Strategy.HYBRID:
        if allowed is None:
            dpos, dsims = idx.dense_topk(qvec, C)
        else:
            dpos, dsims = idx.dense_topk_among(qvec, allowed, C)
        parts.append(dpos)
        dense_rank = {int(p): r for r, p in enumerate(dpos.tolist())}
        dense_cut = float(dsims[-1]) if dsims.size >= C else 0.0
    keyword: np.ndarray | None = None  # raw BM25 of every position; scaled below for the candidates only
    scale = 1.0
    if w["keyword"] > 0 or strat is Strategy.HYBRID:
        keyword = idx.bm25(query)
        told_kw = keyword[told]  # a copy (fancy indexing)
        if ex.size:
            keyword[ex] = 0.0  # excluded turns (the recent window) must not set the scale
        kmax = float(keyword.max())
        if kmax > 0:
            scale = kmax
            if params.keyword_scale == "ideal":  # coverage of the query, not relative to the best turn
                scale = max(idx.bm25_ideal(query), 1e-9)
            # the top by raw score: the same turns as by the scaled score, without two passes over every memory
            # (where the cap at 1.0 ties several, the order among them is still the raw score's)
            parts.append(topk_nonzero(keyword, C))
        if told.size:  # not candidates, but scaled as they are, should they be returned
            keyword[told] = told_kw
    keys = [e.key for e in entities]
    entity, related = idx.entity_scores(keys)
    if later.size:
        entity[later] = 0.0  # a fresh array: later turns must not fill the entity list
    if w["entity"] > 0:
        parts.append(topk_nonzero(entity, C))
    if strat is Strategy.RECENCY:
        if later.size:
            assert allowed is not None
            parts.append(allowed[topk(idx.timestamps[allowed].astype(np.float64), C)])
        else:
            parts.append(topk(idx.timestamps.astype(np.float64), C))
    if cue.window is not None:
        period = (idx.timestamps >= cue.window[0]) & (idx.timestamps < cue.window[1])
        if until is not None:
            period &= idx.timestamps <= until
        inside = np.flatnonzero(period)
        if inside.size > C:
            inside = idx.dense_topk_among(qvec, inside, C)[0]
        parts.append(inside)
    cand = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    depth = config.graph_depth if w["graph"] > 0 else 0
    if depth and cand.size:
        cand = idx.expand(cand, depth)  # neighbours are scored too: the answer may be the next turn
    if allowed is not None and cand.size:
        cand = cand[np.isin(cand, allowed)]
    if ex.size and cand.size:
        cand = cand[~np.isin(cand, ex)]
    if cand.size == 0:
        return dataclasses.replace(empty, related=related)

    cos, own_cos = (np.clip(c, 0.0, 1.0) for c in idx.dense_with_own(qvec, cand))
    span = None
    if params.normalise_relevance and cos.size:
        # Scale-free relevance: the dense cut-off maps to 0, the best keeps its cosine (absolute
        # confidence stays on the usual scale for the thresholds downstream).
        hi = float(cos.max())
        lo = min(dense_cut, hi)
        if hi - lo > 1e-6:
            span = (lo, hi)

    def stretch(cosines: np.ndarray) -> np.ndarray:
        """The relevance component of ``cosines`` (scale-free when ``normalise_relevance``)."""
        if span is None:
            return cosines
        lo, hi = span
        return (np.clip((cosines - lo) / (hi - lo), 0.0, 1.0) * hi).astype(np.float32)

    def sentence_lift(relevance: np.ndarray, own: np.ndarray) -> np.ndarray:
        """What the best sentence of each turn adds to its weighted relevance over the turn's own vector."""
        return (w["relevance"] * np.maximum(relevance - stretch(own), 0.0)).astype(np.float32)

    def components(pos: np.ndarray, cosines: np.ndarray) -> dict[str, np.ndarray]:
        """The base components of the turns at ``pos`` (and a graph component of 0)."""
        relevance = stretch(cosines)
        if has_cue:
            tfit = np.zeros(pos.size, dtype=np.float32)
            if cue.window is not None:
                ts = idx.timestamps[pos]
                tfit = ((ts >= cue.window[0]) & (ts < cue.window[1])).astype(np.float32)
            if cue.asks_when:
                tfit = np.maximum(tfit, idx.has_time[pos].astype(np.float32))
            if cue.asks_error:
                tfit = np.maximum(tfit, idx.has_error[pos].astype(np.float32))
            time_comp = tfit
        else:
            time_comp = idx.recency(now, config.half_life_s, pos)
        kw = (np.zeros(pos.size, dtype=np.float32) if keyword is None
              else np.minimum(keyword[pos] / np.float32(scale), np.float32(1.0)))
        return {
            "recency": time_comp,
            "relevance": relevance,
            "keyword": _error_keyword(kw, idx.has_error[pos]) if cue.asks_error else kw,
            "entity": entity[pos],
            "graph": np.zeros(pos.size, dtype=np.float32),
        }

    comp = components(cand, cos)
    # Thresholds chosen on whole turns read whole turns: the usefulness check (through the lift) and the repeated
    # question below (a turn that asks the query again in one sentence and answers it in the next is not muted).
    lift = sentence_lift(comp["relevance"], own_cos)
    base = sum(w[c] * comp[c] for c in BASE)
    assert isinstance(base, np.ndarray)
    own = base
    support = np.zeros(cand.size, dtype=np.float32)  # what each turn got as the answer to a question
    since = np.zeros(cand.size, dtype=bool)  # ... as what the user said since the old answer to the query
    bot = idx.has_role(cand, "assistant")  # a chatbot's replies (only chatbot transcripts hold them)
    # A reply the user disputed right away ("that's wrong, it's Thursday"): not returned (below), no share of the
    # question it answered; the dispute asks again, and the reply to it takes that share.
    disputed = idx.disputed(cand)
    if params.question_pass > 0 or params.assistant_answer_pass > 0:
        # A question (or request) answered by another speaker: the answer is what the user wants back,
        # so the question keeps only part of its score and hands the rest to its answer.
        disputing = idx.disputing(cand)
        asks = idx.answered(cand) | disputing
        if asks.any():
            q = np.flatnonzero(asks)
            nxt = idx.next_positions(cand[q])
            ans = _slots(cand, nxt)
            terms = frozenset(tokenize(query))
            wrong = (ans >= 0) & disputed[ans.clip(min=0)]
            if wrong.any():
                # the answer the user disputed is not the answer: the reply to the dispute is (when there is one),
                # except for a query about what the dispute ruled out ("when's mum's appointment?" after "no, I meant
                # the vet appointment, not mum's"): the reply about the vet does not answer it
                disputes = idx.next_positions(nxt[wrong])
                to = _slots(cand, idx.next_positions(disputes))
                to[idx.rules_out(disputes, terms)] = -1
                ans[wrong] = to
            if disputing.any():  # ... nor does the dispute itself hand its share to that reply
                d = np.flatnonzero(disputing[q])
                ans[d[idx.rules_out(cand[q[d]], terms)]] = -1
            ok = ans >= 0
            # A chatbot's reply takes the larger share, unless the user's turn also states something about the
            # user ("Our internet is with Xfinity and it drops every evening. Any ideas?"): that turn is the fact
            # (a dispute, "no, I meant the race", names what was asked, and the reply to it answers).
            to_bot = bot[ans.clip(min=0)] & ok
            # Between two people (LoCoMo) the answer takes question_pass; a chatbot's own question ("What's your
            # budget?") keeps its score: the chatbot benchmarks lost with it passed on.
            passed = np.where(to_bot, np.where(idx.states_own(cand[q]) & ~disputing[q], 0.0,
                                               max(params.question_pass, params.assistant_answer_pass)),
                              np.where(bot[q], 0.0, params.question_pass))
            gift = passed * base[q]
            own = base.copy()
            own[q] -= gift
            # The query asked again: the chatbot's old answer was right when given; what the user said about it
            # since comes first ("so it's 30 kids now" before "28 pupils are coming").
            ans = _since_the_answer(idx, cand, own_cos, base, q, ans, to_bot, bot)
            since[ans[to_bot & ~bot[ans.clip(min=0)]]] = True  # to_bot: answered (ok) by the chatbot at first
            np.add.at(own, ans[ok], gift[ok])
            np.add.at(support, ans[ok], gift[ok])
    hops = np.zeros(cand.size, dtype=np.int64)
    graph_w = w["graph"]
    noans = idx.non_answers(cand)
    if depth:
        b_total = sum(w[c] for c in BASE) or 1.0
        near = (1.0 - params.session_share) * graph_w
        nb, hops = idx.context(cand, base, depth, decay=params.hop_decay)
        nb /= b_total
        step = own + near * nb
        sess = idx.session_context(cand, step) / (b_total + near)
        comp["graph"] = np.minimum((1.0 - params.session_share) * nb + params.session_share * sess, 1.0)
        # A bare acknowledgement ("Got it.", "Welcome back!") would ride on the turn it acknowledges and crowd
        # out turns with content (a later change of plan lost to "Got it." in a new-user chat): it keeps only
        # its own score. A bare reply to a question ("Yes!") keeps its support: it is the answer.
        bare = idx.bare_reactions(cand) | noans
        if bare.any():
            comp["graph"][bare] = 0.0
            hops = np.where(bare, 0, hops)
        # report a hop only where the neighbour carried a real share of the score
        hops = np.where(near * nb >= 0.25 * (step + near * sess), hops, 0)
        # A chatbot's reply restates and discusses the user's turns around it: with their support (the session's,
        # the next turn's) replies crowded the user's own facts out of the first places (a later update lost to
        # the replies around the stale fact). A reply keeps only the neighbour support of the user's turn it
        # answers, so the bot's fix to a problem the user reported stays reachable from that report.
        reply = bot & ~bare
        if reply.any():
            nb_reply, answers = _answered_turn_support(idx, cand, base, bot, reply)
            comp["graph"] = np.where(reply, np.minimum((1.0 - params.session_share) * nb_reply / b_total, 1.0),
                                     comp["graph"])
            hops = np.where(reply, np.where(answers & (near * nb_reply / b_total >= 0.25 * step), 1, 0), hops)
    final = own + graph_w * comp["graph"]
    # Not returned (they lent their support above): a reply that says it does not know, a reply the user disputed,
    # and the user's question asked again (near-identical to the query: the user knows what they asked).
    mute = noans | disputed | (idx.asks(cand) & (own_cos >= _tuned.REPEATED_QUESTION_COS))
    if mute.any():
        final = np.where(mute, 0.0, final)
    if strat is Strategy.RELEVANCE:
        final = np.where(comp["relevance"] >= config.relevance_floor, final, -1.0)
    lifted = np.zeros(cand.size, dtype=bool)
    outranked = np.zeros(cand.size, dtype=bool)
    if strat is not Strategy.RECENCY and cand.size > 1 and bot.any():
        # a change moves when it restates the query's subject (shares a word with it: stop 40's C56c) or names what
        # it replaces in a turn that does
        final, lifted, outranked = _lift_changes(idx, cand, final, bot, comp["keyword"] > 0, k + 5)
        if told.size:
            tcos, town = (np.clip(c, 0.0, 1.0) for c in idx.dense_with_own(qvec, told))
            tcomp = components(told, tcos)
            slot, above, outranked = _seen_changes_above(idx, told, tcomp["keyword"] > 0, cand, final,
                                                         comp["keyword"] > 0, outranked, k + 5)
            if slot.size:  # returned with the candidates: a change is a user's turn, lifted, no support or hop
                n_add = slot.size
                cand = np.concatenate([cand, told[slot]])
                final = np.concatenate([final, above])
                comp = {c: np.concatenate([comp[c], tcomp[c][slot]]) for c in COMPONENTS}
                lift = np.concatenate([lift, sentence_lift(tcomp["relevance"][slot], town[slot])])
                hops = np.concatenate([hops, np.zeros(n_add, dtype=hops.dtype)])
                support = np.concatenate([support, np.zeros(n_add, dtype=support.dtype)])
                since = np.concatenate([since, np.zeros(n_add, dtype=bool)])
                lifted = np.concatenate([lifted, np.ones(n_add, dtype=bool)])
                outranked = np.concatenate([outranked, np.zeros(n_add, dtype=bool)])
                mute = np.concatenate([mute, np.zeros(n_add, dtype=bool)])
    order = topk(final, k + 5)
    if mute.any():  # also on the recency strategy, which keeps scores of 0
        order = order[~mute[order]]
    if strat is not Strategy.RECENCY:
        order = order[final[order] > 0]
    used = {c: comp[c][order] for c in COMPONENTS if w[c] > 0}
    return Ranking(strat, qtype, cand[order], final[order].astype(np.float32), used, hops[order], dense_rank,
                   keys, related, cue, support[order], since[order], lifted[order], outranked[order],
                   np.minimum(lift[order], final[order]).astype(np.float32))
