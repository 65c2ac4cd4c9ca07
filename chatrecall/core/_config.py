"""Configuration objects: small, keyword-only, validated on construction."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from difflib import get_close_matches
from types import MappingProxyType
from typing import TypeVar

from ._errors import ConfigError
from ._tuned import CORPUS_MEMORY_ITEMS, CORPUS_RECENT_CONTEXT, HYBRID_WEIGHTS, STRONG_CORPUS_SCORE, USEFUL_SCORE

__all__ = ["BudgetConfig", "PinConfig", "RetrievalConfig", "StoreLimits", "as_config"]

_C = TypeVar("_C")

_COMPONENTS = ("recency", "relevance", "keyword", "entity", "graph")


def _check(cond: bool, name: str, value: object, why: str) -> None:
    if not cond:
        raise ConfigError(f"{name}={value!r} is invalid: {why}")


def _one_of(name: str, value: object, options: tuple[str, ...]) -> None:
    """``value`` is one of ``options``; else the error lists them and names the nearest ("tier" -> 'tiers')."""
    if value in options:
        return
    near = get_close_matches(str(value).lower(), options, n=1, cutoff=0.6) if isinstance(value, str) else []
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    _check(False, name, value, f"must be {', '.join(map(repr, options[:-1]))} or {options[-1]!r}{hint}")


def _positive(name: str, value: float) -> None:
    _check(isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0,
           name, value, "must be a positive number")


def _unit(name: str, value: float) -> None:
    _check(isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0,
           name, value, "must be between 0 and 1")


def _weights(name: str, value: Mapping[str, float]) -> Mapping[str, float]:
    _check(isinstance(value, Mapping), name, value, "must be a mapping of component to weight")
    unknown = set(value) - set(_COMPONENTS)
    _check(not unknown, name, value, f"unknown component(s) {sorted(unknown)}; known: {list(_COMPONENTS)}")
    for k, v in value.items():
        _check(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0,
               f"{name}[{k!r}]", v, "must be a finite number >= 0")
    _check(sum(value.values()) > 0, name, value, "at least one weight must be > 0")
    full = {k: float(value.get(k, 0.0)) for k in _COMPONENTS}
    return MappingProxyType(full)


def as_config(name: str, value: object, cls: type[_C], example: str = "") -> _C:
    """``value`` as a ``cls``: None gives the defaults, a mapping gives ``cls(**value)``.

    Example:
        >>> as_config("retrieval", {"top_k": 3}, RetrievalConfig).top_k
        3

    Raises:
        ConfigError: ``value`` is another type, or the mapping has an unknown
            field (the message names it and lists the known ones).
    """
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        known = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        unknown = [k for k in value if k not in known]
        if unknown:
            hints = [m for k in unknown for m in get_close_matches(str(k), known, n=1)]
            also = f" (did you mean {', '.join(map(repr, hints))}?)" if hints else ""
            raise ConfigError(
                f"{name}={_short(value)} is invalid: {cls.__name__} has no field {', '.join(map(repr, unknown))}"
                f"{also}; known fields: {', '.join(known)}"
            )
        return cls(**value)
    ex = example or f"{cls.__name__}(...)"
    raise ConfigError(
        f"{name}={_short(value)} is invalid: pass a {cls.__name__} (e.g. {name}={ex}), "
        f"a dict of its fields, or None for the defaults"
    )


def _short(value: object, n: int = 80) -> str:
    r = repr(value)
    return r if len(r) <= n else r[: n - 3] + "..."


#: Default hybrid weights: ``_tuned.HYBRID_WEIGHTS`` (k-fold tuned by benchmarks/tune_ranking.py).
DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(dict(HYBRID_WEIGHTS))


@dataclass(frozen=True, kw_only=True)
class RetrievalConfig:
    """How memory candidates are found, scored and checked.

    Example:
        >>> cfg = RetrievalConfig(weights={"relevance": 0.7, "keyword": 0.3}, half_life_s=3600)
        >>> cfg.weights["relevance"]
        0.7

    Attributes:
        weights: Hybrid weights per component (recency, relevance, keyword,
            entity, graph); missing components weigh 0.
        half_life_s: Recency half-life in seconds.
        relevance_floor: Cosine similarity under which a dense hit is dropped
            by the relevance strategy.
        candidates: How many candidates each source contributes before fusion.
        top_k: Memories returned by a full memory search.
        phase1_top_k: Memories looked at in the first (memory-only) phase, 2..4.
        phase1_timeout_ms: Latency budget of the first phase; a slower lookup
            is skipped and recorded. It bounds lookups that may wait on the
            store; a cached user whose index is known fresh is searched in
            the calling thread, with no budget to bound.
        useful_score: Final score at which a memory found by the small lookup
            (two-phase, fallback, probe) counts as useful. Chosen by
            ``benchmarks/tune_usefulness.py``.
        strong_corpus_score: Final score at which a corpus passage counts as
            a strong hit (memories set aside by the small lookup are then
            dropped, and a corpus-only turn does not fall back to memory).
            Passage scores (0.8 x cosine, + 0.2 for an anchor) are on another
            scale than fused memory scores, so it has its own value, chosen
            by the same script.
        graph_depth: BFS depth of graph expansion.
        recent_turns: Size of the recent window (always available).
        recent_max_tokens: Token cap of the whole recent window.
        recent_turn_max_tokens: Token cap of one turn in the window (longer
            turns, such as tool outputs, are truncated).
        min_score: Final score under which a found item is not injected; on a
            route that asks for memory, the best memory is kept even under it
            (a new user's few memories score low on every question).
        diversity_threshold: Word-set Jaccard similarity at which a candidate
            counts as a near-duplicate of one already selected.
        corpus_memory_items: On a turn that searches memory and the corpus,
            how many of the top memories found are appended to the message to
            query the corpus (one more query embedding), so "what should my
            class watch out for in the practical?" finds the document on the
            titration practical the memories talk about. 0 queries the corpus
            with the message alone. Chosen by
            ``benchmarks/tune_corpus_context.py``.
        corpus_recent_context: On such a turn, also append the user's turns
            of the recent window (what they just said in this session). Chosen
            by the same script.
        memory_probe: A corpus-only turn looks in memory before the corpus:
            the memory fallback's small lookup and usefulness check, run first
            (an in-process lookup for a cached user; the query vector is the
            one the corpus search uses). Memories that pass it are kept and
            inform the corpus query as on a turn that searches both, so "how
            long does the e-visa take?" finds the document for the user's own
            passport; otherwise nothing changes. False: memory only after a
            weak corpus search (the behaviour before).
        advice_both: A turn the gate routes to memory alone searches the
            corpus too when the message asks for advice, rules or what is
            allowed ("my flight was 4 hours late, what am I owed?", "what
            formatting rules apply to my thesis?"; ``_classifier.asks_advice``)
            and there are documents. False: the gate's memory route (the
            behaviour before).
        corpus_probe: A memory-only turn whose small lookup passes the
            usefulness check still searches the documents when there are any
            (the query informed by the memories found); strong passages
            (``strong_corpus_score``) are kept with the memories, and the best
            passage when it holds a word of the message that no memory found
            holds ("worktop" in "what's the worktop spec in the kitchen
            quote?"). On by default since stop 33 (the README gives its gain
            and its cost); off, a useful memory skips the corpus unless it
            lacks an answer form the message asks for (a clock time, a price).
        passage_floor: Passage score (0.8 x cosine, + 0.2 for an anchor)
            under which a corpus passage is not injected; it is recorded in
            ``rejected`` with the reason. 0 (default) turns it off.
        passage_share: Share of the best passage's score under which a
            corpus passage is not injected (the best one always passes this
            test): weak passages after the right one only cost tokens. 0
            (default) turns it off. Opt-in, both: ``passage_floor=0.18,
            passage_share=0.6`` (what ``benchmarks/bench_passage_floor.py``
            chooses) cut the passage tokens that are not a gold document's by
            19-34 % on three held-out files, at most one gold document in 80
            questions lost per file (``benchmarks/results/passage_floor.md``).
        sentence_vectors: Store a vector for each sentence of a user's
            multi-sentence turn (up to 12 of 3+ words; in the memory's metadata,
            about 1 KB each, one more embedding each at write); a turn's dense
            relevance is then the best of its own and its sentences', so a fact
            inside a long turn about something else is found ("We've got a
            ginger cat called Biscuit" inside a five-sentence introduction, for
            "what's my cat called?"). Turns stored before keep one vector; a
            chatbot's replies get none. On by default since stop 49:
            cross-validated LongMemEval turn recall_all@10 0.875 -> 0.917 and
            a blind set of facts inside long messages 5 -> 13 of 20
            (docs/benchmarks.md, "SV1", "S1f"). The usefulness check reads a
            memory's score without what its sentence added
            (``ScoredItem.sentence_lift``). It costs about 1.7x the write time
            and 3.5x the dense scan at 8,192 turns; ``False`` keeps one vector
            per turn.
    """

    weights: Mapping[str, float] = field(default_factory=lambda: DEFAULT_WEIGHTS)
    half_life_s: float = 7 * 24 * 3600.0
    relevance_floor: float = 0.2
    candidates: int = 50
    top_k: int = 8
    phase1_top_k: int = 3
    phase1_timeout_ms: float = 250.0
    useful_score: float = USEFUL_SCORE
    strong_corpus_score: float = STRONG_CORPUS_SCORE
    graph_depth: int = 2
    recent_turns: int = 6
    recent_max_tokens: int = 600
    recent_turn_max_tokens: int = 200
    diversity_threshold: float = 0.8
    min_score: float = 0.15
    corpus_memory_items: int = CORPUS_MEMORY_ITEMS
    corpus_recent_context: bool = CORPUS_RECENT_CONTEXT
    memory_probe: bool = True
    advice_both: bool = True
    corpus_probe: bool = True
    passage_floor: float = 0.0
    passage_share: float = 0.0
    sentence_vectors: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "weights", _weights("weights", self.weights))
        _positive("half_life_s", self.half_life_s)
        _check(isinstance(self.relevance_floor, (int, float)) and -1 <= self.relevance_floor <= 1,
               "relevance_floor", self.relevance_floor, "must be between -1 and 1")
        for name in ("candidates", "top_k", "recent_max_tokens", "recent_turn_max_tokens"):
            v = getattr(self, name)
            _check(isinstance(v, int) and not isinstance(v, bool) and v >= 1, name, v, "must be an int >= 1")
        _check(isinstance(self.phase1_top_k, int) and 2 <= self.phase1_top_k <= 4,
               "phase1_top_k", self.phase1_top_k, "must be an int from 2 to 4")
        _positive("phase1_timeout_ms", self.phase1_timeout_ms)
        _unit("useful_score", self.useful_score)
        _unit("strong_corpus_score", self.strong_corpus_score)
        _check(isinstance(self.graph_depth, int) and 0 <= self.graph_depth <= 5,
               "graph_depth", self.graph_depth, "must be an int from 0 to 5")
        _check(isinstance(self.recent_turns, int) and 0 <= self.recent_turns <= 1000,
               "recent_turns", self.recent_turns, "must be an int from 0 to 1000")
        _unit("diversity_threshold", self.diversity_threshold)
        _unit("min_score", self.min_score)
        _check(isinstance(self.corpus_memory_items, int) and not isinstance(self.corpus_memory_items, bool)
               and 0 <= self.corpus_memory_items <= 8, "corpus_memory_items", self.corpus_memory_items,
               "must be an int from 0 (the message alone) to 8")
        _check(isinstance(self.corpus_recent_context, bool), "corpus_recent_context", self.corpus_recent_context,
               "must be True or False")
        _check(isinstance(self.memory_probe, bool), "memory_probe", self.memory_probe, "must be True or False")
        _check(isinstance(self.advice_both, bool), "advice_both", self.advice_both, "must be True or False")
        _check(isinstance(self.corpus_probe, bool), "corpus_probe", self.corpus_probe, "must be True or False")
        _unit("passage_floor", self.passage_floor)
        _unit("passage_share", self.passage_share)
        _check(isinstance(self.sentence_vectors, bool), "sentence_vectors", self.sentence_vectors,
               "must be True or False")


@dataclass(frozen=True, kw_only=True)
class BudgetConfig:
    """How many tokens the context block may use, and how they are shared.

    Example:
        >>> BudgetConfig(mode="tiers", max_tokens=1500).mode
        'tiers'

    Attributes:
        mode: ``fixed`` (always ``max_tokens``), ``dynamic`` (between
            ``min_tokens`` and ``max_tokens`` by query complexity) or ``tiers``
            (pins, then critical, relevant and background items in turn).
        max_tokens: Upper bound of the whole context block.
        min_tokens: Lower bound for ``dynamic``.
        critical_score: Final score from which an item is ``critical``.
        relevant_score: Final score from which an item is ``relevant``
            (below: ``background``).
        background_share: Share of the budget background items may take in
            ``tiers`` mode.
        mix: How memories and corpus passages of one turn share the budget:
            ``alternate`` (the best memory, the best passage, the next memory,
            ...: each source in its own score order, since memory scores are
            fused and passage scores a cosine, on different scales) or
            ``score`` (one order by raw score).
    """

    mode: str = "fixed"
    max_tokens: int = 1200
    min_tokens: int = 300
    critical_score: float = 0.6
    relevant_score: float = 0.3
    background_share: float = 0.2
    mix: str = "alternate"

    def __post_init__(self) -> None:
        _one_of("mode", self.mode, ("fixed", "dynamic", "tiers"))
        for name in ("max_tokens", "min_tokens"):
            v = getattr(self, name)
            _check(isinstance(v, int) and not isinstance(v, bool) and v >= 1, name, v, "must be an int >= 1")
        _check(self.min_tokens <= self.max_tokens, "min_tokens", self.min_tokens,
               f"must not exceed max_tokens={self.max_tokens}")
        _unit("critical_score", self.critical_score)
        _unit("relevant_score", self.relevant_score)
        _check(self.relevant_score <= self.critical_score, "relevant_score", self.relevant_score,
               f"must not exceed critical_score={self.critical_score}")
        _unit("background_share", self.background_share)
        _one_of("mix", self.mix, ("alternate", "score"))


@dataclass(frozen=True, kw_only=True)
class PinConfig:
    """Caps on pinned constraints.

    Example:
        >>> PinConfig(max_pins=5, max_tokens=200).max_pins
        5
    """

    max_pins: int = 10
    max_tokens: int = 400

    def __post_init__(self) -> None:
        for name in ("max_pins", "max_tokens"):
            v = getattr(self, name)
            _check(isinstance(v, int) and not isinstance(v, bool) and v >= 1, name, v, "must be an int >= 1")


@dataclass(frozen=True, kw_only=True)
class StoreLimits:
    """Input limits enforced before anything is written.

    Example:
        >>> StoreLimits(max_text_chars=50_000).max_text_chars
        50000
    """

    max_text_chars: int = 200_000
    max_id_chars: int = 256
    max_metadata_keys: int = 32

    def __post_init__(self) -> None:
        for name in ("max_text_chars", "max_id_chars", "max_metadata_keys"):
            v = getattr(self, name)
            _check(isinstance(v, int) and not isinstance(v, bool) and v >= 1, name, v, "must be an int >= 1")
