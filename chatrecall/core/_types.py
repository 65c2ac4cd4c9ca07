"""Value types shared by the core and the adapters.

All results are frozen dataclasses: they can be logged, compared and passed
between threads without defensive copies.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Union

__all__ = [
    "COLLECTION_CORPUS",
    "COLLECTION_MEMORIES",
    "COLLECTION_PINS",
    "Entity",
    "ForgetReport",
    "GateDecision",
    "GateReason",
    "Pin",
    "QueryType",
    "Record",
    "RetrievalResult",
    "Route",
    "Scalar",
    "ScoredItem",
    "StoreHit",
    "Strategy",
    "Turn",
    "Where",
]

Scalar = Union[str, int, float, bool]  # noqa: UP007 (a runtime alias: py3.10 needs Union)
#: A store filter: a conjunction of ``field == value`` (scalar) or
#: ``field in values`` (tuple). Filters are data, never strings.
Where = Mapping[str, Scalar | tuple[Scalar, ...]]

COLLECTION_MEMORIES = "memories"
COLLECTION_PINS = "pins"
COLLECTION_CORPUS = "corpus"

#: ``user_id`` given to corpus documents that every user may read.
SHARED_OWNER = "__shared__"

_EMPTY: Mapping[str, Scalar] = MappingProxyType({})


class Route(str, enum.Enum):
    """Where the gate sends a message."""

    NONE = "none"
    MEMORY = "memory"
    CORPUS = "corpus"
    BOTH = "both"

    @property
    def wants_memory(self) -> bool:
        return self in (Route.MEMORY, Route.BOTH)

    @property
    def wants_corpus(self) -> bool:
        return self in (Route.CORPUS, Route.BOTH)


class Strategy(str, enum.Enum):
    """How memory candidates are found and ranked."""

    RECENCY = "recency"
    RELEVANCE = "relevance"
    KEYWORD = "keyword"
    ENTITY = "entity"
    GRAPH = "graph"
    HYBRID = "hybrid"


class QueryType(str, enum.Enum):
    """What the query classifier thinks the user is asking for."""

    RECENT = "recent"
    SPECIFIC = "specific"
    ENTITY = "entity"
    EXPLORATORY = "exploratory"
    HYBRID = "hybrid"


@dataclass(frozen=True, slots=True)
class Entity:
    """An entity found in a text.

    Attributes:
        text: The surface form as written.
        kind: ``name``, ``identifier``, ``path``, ``error``, ``quoted``, ``date``
            or ``quantity``.
        key: The folded form used for lookup (case and plural insensitive).
    """

    text: str
    kind: str
    key: str


@dataclass(frozen=True, slots=True)
class Turn:
    """A conversation turn to store (input of :meth:`ChatRecall.add_many`)."""

    text: str
    user_id: str
    session_id: str
    role: str = "user"
    timestamp: float | None = None
    metadata: Mapping[str, Scalar] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, slots=True)
class Record:
    """A stored item (memory turn, pin or corpus chunk) as the store holds it."""

    id: str
    text: str
    user_id: str
    session_id: str
    role: str
    timestamp: float
    seq: int = 0
    entities: tuple[str, ...] = ()
    metadata: Mapping[str, Scalar] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, slots=True)
class StoreHit:
    """A record returned by a vector query with its cosine similarity."""

    record: Record
    similarity: float


@dataclass(frozen=True, slots=True)
class Pin:
    """A standing constraint that is injected on every turn until unpinned."""

    id: str
    text: str
    user_id: str
    session_id: str | None
    created_at: float
    tokens: int


@dataclass(frozen=True, slots=True)
class GateReason:
    """One trigger pattern that fired, with its signed weight.

    Attributes:
        category: The pattern's category (``personal``, ``recall``...).
        pattern: The regex (long; shown only when asked for).
        weight: Signed weight after category multipliers.
        match: The words of the message that matched.
        name: The pattern's short name.
    """

    category: str
    pattern: str = field(repr=False)
    weight: float
    match: str
    name: str = ""

    def __str__(self) -> str:
        """``category:'match'(+weight)``, as :meth:`GateDecision.explain` and the adapters' metadata show it."""
        return f"{self.category}:{self.match!r}({self.weight:+.2f})"


@dataclass(frozen=True, slots=True)
class GateDecision:
    """The gate's verdict for one message.

    Attributes:
        route: none / memory / corpus / both.
        confidence: 0..1, how sure the gate is of ``route``.
        memory_score: Sum of the weights of memory patterns that fired.
        corpus_score: Sum of the weights of corpus patterns that fired.
        reasons: Every pattern that fired.
        correction: True when the message corrects an earlier answer.
        memory_probability: The learned combiner's P(needs memory), or None
            when the gate routes on pattern scores alone (``learned=False``).
        corpus_probability: Its P(needs the corpus), or None.
        rule: ``"question"`` when the question rule decided: a question the
            combiner would leave unsearched, though not sure of it, keeps the
            pattern scores' route (so the route can search with both
            probabilities under their thresholds); ``""`` otherwise.
    """

    route: Route
    confidence: float
    memory_score: float
    corpus_score: float
    reasons: tuple[GateReason, ...] = ()
    correction: bool = False
    memory_probability: float | None = None
    corpus_probability: float | None = None
    rule: str = ""

    def explain(self) -> str:
        """One line per reason, for logs and the CLI."""
        learned = ""
        if self.memory_probability is not None and self.corpus_probability is not None:
            learned = f" p(memory)={self.memory_probability:.2f} p(corpus)={self.corpus_probability:.2f}"
        if self.rule == "question":
            learned += " (question rule: a question the combiner was unsure of keeps the pattern scores' route)"
        if not self.reasons:
            return f"route={self.route.value}{learned}: no trigger pattern fired"
        parts = [str(r) for r in self.reasons]
        return f"route={self.route.value} conf={self.confidence:.2f}{learned}: " + ", ".join(parts)


@dataclass(frozen=True, slots=True)
class ScoredItem:
    """A candidate with every component score and the final score.

    Attributes:
        id: Record id.
        text: Record text.
        source: ``memory``, ``corpus``, ``recent`` or ``pin``.
        score: Final fused score.
        components: Each normalised component (recency, relevance, keyword,
            entity, graph) that contributed. When the query asks *when* or
            names a period, ``time`` (how well the item fits it) takes the
            place of ``recency``.
        tokens: Token count of ``text`` with the configured counter.
        tier: ``pin``, ``critical``, ``relevant`` or ``background``.
        why: Human readable explanation of why the item was found.
        record: The stored record (None for pins).
        sentence_lift: How much of ``score`` a memory owes to one of its
            sentences matching better than the whole turn (sentence vectors;
            0 otherwise). The usefulness check reads ``score - sentence_lift``:
            its threshold was chosen on whole turns, and a short sentence
            matches on a coincidental word more easily.
    """

    id: str
    text: str
    source: str
    score: float
    components: Mapping[str, float]
    tokens: int
    tier: str = "relevant"
    why: str = ""
    record: Record | None = None
    sentence_lift: float = 0.0

    @property
    def title(self) -> str | None:
        """A passage's document title, the label the context shows it under (None for a memory, a pin, or a document
        added without one); nu50 found it only in ``record.metadata["title"]``."""
        if self.source != "corpus" or self.record is None:
            return None
        title = self.record.metadata.get("title")
        return None if title is None else str(title)


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """What :meth:`ChatRecall.forget` removed."""

    user_id: str
    session_id: str | None
    memories: int
    pins: int


@dataclass(frozen=True, slots=True)
class RetrievalResult:
    """Everything :meth:`ChatRecall.retrieve` decided for one message.

    Attributes:
        message: The query message.
        gate: The gate decision (route, confidence, reasons).
        route: The route actually taken (may differ from ``gate.route`` after
            the usefulness check or when a backend was degraded).
        strategy: Memory strategy used.
        query_type: What the classifier decided.
        items: Selected memories and corpus passages, best first.
        recent: The recent window of the session (token capped).
        pins: Pins of the user, always injected.
        rejected: Candidates that were found but not selected, with why.
        tokens_used: Tokens of everything injected (pins + recent + items).
        tokens_left: Budget left.
        timings_ms: Wall time per phase (``gate``, ``state``, ``embed``, ``memory``, ``corpus``, ``select``,
            ``total``); ``warmup`` on an engine's first turn: the wait for its gate to be built (by this
            turn, or by :func:`chatrecall.connect`'s background warm-up).
        notes: Decisions taken on the way (memory useful, timeout, degraded...).
        context: Formatted context block for the prompt.
        at: When it was decided (the engine's clock, POSIX seconds): the moment recency and "last week" were read
            from, and the "now" the context's memory heading states.
    """

    message: str
    gate: GateDecision
    route: Route
    strategy: Strategy | None
    query_type: QueryType | None
    items: tuple[ScoredItem, ...]
    recent: tuple[ScoredItem, ...]
    pins: tuple[Pin, ...]
    rejected: tuple[ScoredItem, ...]
    tokens_used: int
    tokens_left: int
    timings_ms: Mapping[str, float]
    notes: tuple[str, ...]
    context: str
    at: float | None = None

    @property
    def memories(self) -> tuple[ScoredItem, ...]:
        return tuple(i for i in self.items if i.source == "memory")

    @property
    def passages(self) -> tuple[ScoredItem, ...]:
        return tuple(i for i in self.items if i.source == "corpus")

    @property
    def degraded(self) -> bool:
        return any(n.startswith("degraded") for n in self.notes)

    def explain(self) -> str:
        """A multi-line explanation of the whole decision."""
        lines = [self.gate.explain(), f"route taken: {self.route.value}"]
        lines += [f"note: {n}" for n in self.notes]
        for it in self.items:
            comps = " ".join(f"{k}={v:.2f}" for k, v in it.components.items())
            lines.append(f"+ [{it.source}/{it.tier}] {it.score:.3f} {comps} :: {it.text[:60]!r} ({it.why})")
        for it in self.rejected:
            lines.append(f"- [{it.source}] {it.score:.3f} :: {it.text[:60]!r} ({it.why})")
        return "\n".join(lines)
