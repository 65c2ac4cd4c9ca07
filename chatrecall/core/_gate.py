"""The retrieval gate: decide, without an LLM, whether a message needs a search.

The gate scores a message with weighted regular-expression patterns grouped in
categories (explicit references, continuity, temporal markers, recall verbs,
corrections, personal facts, small talk, knowledge questions). Each pattern
pushes toward a target (``memory``, ``corpus`` or ``none``); the summed scores
are compared with thresholds to pick a :class:`Route`.

Scoring: ``memory_score``/``corpus_score`` are the summed weights of the
memory/corpus patterns that fired. By default (``GateConfig.learned``) a learned
combiner (:mod:`._gate_model`: two logistic heads over the patterns that fired,
those sums and the message's words, trained on the tune split) turns them into
P(needs memory) and P(needs the corpus), each compared with its threshold.
With ``learned=False`` the sums decide alone: small-talk (``none``) weights are
subtracted from both before comparing with the thresholds. Either way a
correction always searches memory, and the route is ``both`` when both pass.

Speed (pure Python; p50 about 19.5 µs per message with the learned combiner on a noisy 2-core VM, against
25 µs without the required-word masks below, interleaved): the message is lowercased and split into words once. Each pattern is indexed by
the words a match can begin with, derived from the parsed regex. Patterns anchored with ``^`` are tried on
their own, and only when the first word fits. The patterns that can start at a later word and are indexed
by that word are tried at its position: one by one when few of them can match the message (most words),
else merged into one regex of lookaheads, so the word costs one ``match`` call whatever the number of
such patterns (``_MERGE_FROM``); a long one (a word list inside) is always tried on its own, since every
merge would parse it again. Patterns whose first word cannot be derived are searched on every message
(correct, just slower). On top of that index, each pattern's required words (sets of words every match
holds, also derived from the parsed regex: ``_regex_index.required_words``) and required punctuation
(``_regex_index.required_chars``: a "?", a ",") become bits; the word pass ORs the bits of the message's
words into a mask, the message's punctuation adds its bits, and the patterns are tried after the pass,
leaving out those whose required words or chars the message lacks: an anchored pattern is skipped, and a
word's patterns are tried without them (a merged regex is rebuilt without them: one compiled regex per
subset, on first use). Skipping never changes what matches; the spans are found in the same order as when
each word was tried during the pass. An ASCII message (most) runs the patterns compiled with ``re.ASCII``,
which match there exactly as the Unicode ones (``_regex_index.ascii_safe``) and faster. These last three
(one by one, punctuation, ``re.ASCII``) took the p50 to about 0.9 of what it was, in alternating processes.
The words come from one ``bytes.translate`` (non-word chars to spaces) and a split, not a match object per
word, and a word's position is looked up (``str.find`` of " word ") only when it has patterns left to try;
with per-pattern reason caches this took the p50 to about 0.93 of that (interleaved in one process).
Then: a pattern tried at a word needs the required words of the alternatives that can begin with that word
only (``_regex_index.required_by_first_word``: "\\bwas\\s+(?:i|we)" at "was" needs "i" or "we"); an
anchored whole-message pattern whose words all come from the regex (small talk, "why?":
``_regex_index.closed_words``) is skipped when the message holds another word (an "outside" bit); the
combiner's sums are two floats, not one complex; the routes are module globals: about 0.92-0.93 of that
(interleaved, on a loaded VM).
"""


from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from math import exp
from operator import itemgetter
from types import MappingProxyType
from typing import Any

from ._errors import ConfigError, InvalidInputError
from ._gate_model import LinearRouter, RouterTables, load_default_router
from ._gate_pattern import CORRECTION, TARGET_CORPUS, TARGET_MEMORY, TARGET_NONE, GatePattern
from ._gate_patterns import (
    DEFAULT_PATTERNS,
    QUESTION_OPENERS,
    RECALL_REQUEST_OPENERS,
    REQUEST_LEAD_WORDS,
    REQUEST_OPENERS,
)
from ._regex_index import MODE_AT as _MODE_AT
from ._regex_index import MODE_SEARCH as _MODE_SEARCH
from ._regex_index import analyse as _analyse
from ._regex_index import ascii_safe as _ascii_safe
from ._regex_index import closed_words as _closed_words
from ._regex_index import needs_ignorecase as _needs_ignorecase
from ._regex_index import required_by_first_word as _required_by_first_word
from ._regex_index import required_chars as _required_chars
from ._regex_index import required_words as _required_words
from ._tuned import (
    GATE_BOTH_MARGIN,
    GATE_CATEGORY_WEIGHTS,
    GATE_CORPUS_PROBABILITY,
    GATE_CORPUS_THRESHOLD,
    GATE_EXTRA_PATTERN_LOGIT,
    GATE_MEMORY_PROBABILITY,
    GATE_MEMORY_THRESHOLD,
)
from ._types import GateDecision, GateReason, Route

__all__ = [
    "CORRECTION",
    "DEFAULT_PATTERNS",
    "Gate",
    "GateConfig",
    "GatePattern",
    "TARGET_CORPUS",
    "TARGET_MEMORY",
    "TARGET_NONE",
]


@dataclass(frozen=True, kw_only=True)
class GateConfig:
    """Patterns and thresholds of the :class:`Gate`.

    Example:
        >>> extra = GatePattern(category="explicit", regex=r"\\bsprint review\\b", weight=1.0, target="memory")
        >>> cfg = GateConfig(extra_patterns=(extra,), memory_threshold=0.6,
        ...                  category_weights={"personal": 0.0})
        >>> Gate(cfg).decide("Sprint review notes, please").route.value
        'memory'

    Attributes:
        patterns: Base patterns (default :data:`DEFAULT_PATTERNS`).
        extra_patterns: Patterns added after ``patterns``.
        memory_threshold: Net memory score (memory minus none) needed to
            search memory.
        corpus_threshold: Net corpus score (corpus minus none) needed to
            search the corpus.
        category_weights: Multiplier per category (missing = 1.0, 0 disables
            the category), to retune without rewriting patterns.
        confidence_slope: Steepness of the logistic mapping from score margin
            (score minus threshold) to confidence.
        both_margin: When memory is searched, the corpus is searched too only
            if its net score passes ``corpus_threshold`` by this margin: a
            question form alone ("what", "is") does not make a memory question
            need documents, an explicit knowledge request on top of it does.
        learned: Route with the learned combiner: P(needs memory) and
            P(needs the corpus) from the patterns that fired, their summed
            weights and the message's words. ``False`` routes on the summed
            pattern weights and the thresholds above alone (fully hand-set).
            ``None`` (default): learned when ``patterns`` is the default set
            (the combiner was trained on its pattern names), pattern scores
            otherwise. Patterns in ``extra_patterns`` count in both modes: in
            learned mode each adds ``GATE_EXTRA_PATTERN_LOGIT`` (4.0) per unit
            of weight to its target's logit (a ``none`` pattern lowers both).
        memory_probability: P(needs memory) at or above which memory is
            searched (``learned`` mode).
        corpus_probability: P(needs the corpus) at or above which the corpus
            is searched (``learned`` mode).
    """

    patterns: tuple[GatePattern, ...] = field(default_factory=lambda: DEFAULT_PATTERNS)  # keeps help() short
    extra_patterns: tuple[GatePattern, ...] = ()
    memory_threshold: float = GATE_MEMORY_THRESHOLD
    corpus_threshold: float = GATE_CORPUS_THRESHOLD
    category_weights: Mapping[str, float] = field(default_factory=lambda: MappingProxyType(dict(GATE_CATEGORY_WEIGHTS)))
    confidence_slope: float = 4.0
    both_margin: float = GATE_BOTH_MARGIN
    learned: bool | None = None
    memory_probability: float = GATE_MEMORY_PROBABILITY
    corpus_probability: float = GATE_CORPUS_PROBABILITY

    def __post_init__(self) -> None:
        if self.learned is not None and not isinstance(self.learned, bool):
            raise ConfigError(f"learned={self.learned!r} is invalid: must be True, False or None (auto)")
        for name in ("memory_probability", "corpus_probability"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0.0 < v < 1.0:
                raise ConfigError(f"{name}={v!r} is invalid: must be a probability strictly between 0 and 1")
        for name in ("patterns", "extra_patterns"):
            value = getattr(self, name)
            if not isinstance(value, (tuple, list)) or not all(isinstance(p, GatePattern) for p in value):
                raise ConfigError(f"{name}={value!r} is invalid: must be a tuple of GatePattern")
            object.__setattr__(self, name, tuple(value))
        if not self.patterns and not self.extra_patterns:
            raise ConfigError("patterns=() is invalid: the gate needs at least one pattern")
        if self.learned is None:
            object.__setattr__(self, "learned", self.patterns is DEFAULT_PATTERNS)
        bm = self.both_margin
        if not isinstance(bm, (int, float)) or isinstance(bm, bool) or not math.isfinite(bm) or bm < 0:
            raise ConfigError(f"both_margin={bm!r} is invalid: must be a finite number >= 0")
        for name in ("memory_threshold", "corpus_threshold", "confidence_slope"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
                raise ConfigError(f"{name}={v!r} is invalid: must be a positive finite number")
        cw = self.category_weights
        if not isinstance(cw, Mapping):
            raise ConfigError(f"category_weights={cw!r} is invalid: must be a mapping of category to multiplier")
        for k, v in cw.items():
            if not isinstance(k, str):
                raise ConfigError(f"category_weights key {k!r} is invalid: must be a str")
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
                raise ConfigError(f"category_weights[{k!r}]={v!r} is invalid: must be a finite number >= 0")
        object.__setattr__(self, "category_weights", MappingProxyType(dict(cw)))

    def __repr__(self) -> str:  # the patterns are long regexes: show counts, not every regex
        pats = "DEFAULT_PATTERNS" if self.patterns is DEFAULT_PATTERNS else f"<{len(self.patterns)} patterns>"
        return (f"GateConfig(patterns={pats}, extra_patterns=<{len(self.extra_patterns)} patterns>, "
                f"memory_threshold={self.memory_threshold!r}, corpus_threshold={self.corpus_threshold!r}, "
                f"category_weights={dict(self.category_weights)!r}, confidence_slope={self.confidence_slope!r}, "
                f"both_margin={self.both_margin!r}, learned={self.learned!r}, "
                f"memory_probability={self.memory_probability!r}, corpus_probability={self.corpus_probability!r})")



# --- the gate --------------------------------------------------------------

_TOKEN = re.compile(r"\w+")
_NON_ASCII_WORD_CHAR = re.compile(r"[^\W\x00-\x7f]")
#: What makes the words of a lowered message the runs of its non-space chars (see Gate.decide): each non-word
#: char (``\W``) to one space, by ``bytes.translate`` for an ASCII message, by ``re.sub`` for any other.
_ASCII_NON_WORD_TO_SPACE = bytes.maketrans(
    bytes(c for c in range(128) if not re.match(r"\w", chr(c), re.ASCII)),
    b" " * sum(1 for c in range(128) if not re.match(r"\w", chr(c), re.ASCII)))
_NON_WORD_CHAR = re.compile(r"\W")
_UNICODE_ONLY_SPACE = re.compile(r"[\x1c-\x1f]")
_QUESTION_OPENERS = frozenset(QUESTION_OPENERS)
_T_MEMORY, _T_CORPUS, _T_NONE = 0, 1, 2
_TARGET_CODE = {TARGET_MEMORY: _T_MEMORY, TARGET_CORPUS: _T_CORPUS, TARGET_NONE: _T_NONE}


def asks_something(low: str) -> bool:
    """Whether the question rule treats a lowered message as asking: a "?", a question word first, or a
    request to be reminded (``RECALL_REQUEST_OPENERS``). ``benchmarks/tune_gate.py`` uses it too."""
    if "?" in low:
        return True
    first = _TOKEN.search(low)
    return (first is not None and first[0] in _QUESTION_OPENERS) or \
        low.lstrip(" \t\n\"'([").startswith(RECALL_REQUEST_OPENERS)


_REQUEST = re.compile(r"^\W*(?:(?:" + "|".join(map(re.escape, REQUEST_LEAD_WORDS)) + r")\b\W*)*(?:"
                      + "|".join(map(re.escape, REQUEST_OPENERS)) + r")\b")


def asks_or_requests(low: str) -> bool:
    """Whether a lowered message asks something (:func:`asks_something`) or requests information without a
    question mark ("tell me more about that one", ``REQUEST_OPENERS``): a statement ("so she's Noodle now")
    does neither."""
    return asks_something(low) or _REQUEST.match(low) is not None


_REASON_CACHE = 16384
#: The reason of a (start, pattern index, reason) that fired.
_REASON_OF = itemgetter(2)
#: A pattern that can start at a later word and is longer than this (a word list inside) is matched on its
#: own at its words instead of merged into each word's regex (each merge parses it again; interleaved A/B on
#: the labelled messages: p50 24.6 -> 22.6 us with this at 2000 against merging every such pattern).
_ALONE_AT_CHARS = 2000
#: GateDecision's fields in order, each set straight through its slot by :func:`_decision`.
_DECISION_FIELDS = ("route", "confidence", "memory_score", "corpus_score", "reasons", "correction",
                    "memory_probability", "corpus_probability", "rule")
_SET = tuple(GateDecision.__dict__[f].__set__ for f in _DECISION_FIELDS)
(_set_route, _set_confidence, _set_memory_score, _set_corpus_score, _set_reasons, _set_correction,
 _set_memory_probability, _set_corpus_probability, _set_rule) = _SET
_new = object.__new__
#: The routes as module globals: ``Route.MEMORY`` is an attribute of an Enum class, about 0.14 us a load on
#: CPython 3.11 against 0.02 for a global.
_NONE, _MEMORY, _CORPUS, _BOTH = Route.NONE, Route.MEMORY, Route.CORPUS, Route.BOTH


def _decision(route: Route, confidence: float, memory_score: float, corpus_score: float,
              reasons: tuple[GateReason, ...], correction: bool, memory_probability: float | None,
              corpus_probability: float | None, rule: str = "") -> GateDecision:
    """``GateDecision(...)`` built the way its frozen dataclass ``__init__`` does, one slot at a time,
    without that ``__init__``'s per-field ``object.__setattr__`` lookups (0.55 against 1.3 µs; the gate's
    budget is 20 µs a message). GateDecision validates nothing on construction; a test checks this
    gives an equal object and that ``_DECISION_FIELDS`` are the class's fields."""
    d = _new(GateDecision)
    s0, s1, s2, s3, s4, s5, s6, s7, s8 = _SET
    s0(d, route)
    s1(d, confidence)
    s2(d, memory_score)
    s3(d, corpus_score)
    s4(d, reasons)
    s5(d, correction)
    s6(d, memory_probability)
    s7(d, corpus_probability)
    s8(d, rule)
    return d


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


class _LazyRegex:
    """A regex compiled on its first ``match``; then ``match`` is the compiled pattern's own method.

    The gate indexes hundreds of words; compiling every merged regex up front
    (:meth:`Gate.warm`, about 0.15 s) is wasted on a process that routes a few
    messages and needs a few of them.
    """

    __slots__ = ("_source", "_flags", "match")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source = source
        self._flags = flags
        self.match: Callable[..., re.Match[str] | None] = self._compile_then_match

    def _compile_then_match(self, string: str, pos: int = 0) -> re.Match[str] | None:
        self.compile()
        return self.match(string, pos)

    def compile(self) -> int:
        """Compile now if not yet done; 1 if this call compiled, else 0."""
        if self.match != self._compile_then_match:
            return 0
        self.match = re.compile(self._source, self._flags).match  # two threads may both compile: same result, harmless
        return 1


#: Masks remembered per merged group or first word (see :class:`_Group`, :class:`_Anchored`): past it the
#: table starts again empty (as the reason cache does; rebuilding an entry compiles nothing).
_MAX_MASKS = 1024
#: Pattern subsets given a regex of their own per merged group (one compile each, about 2 ms); past it a
#: message gets the full regex (slower, same matches).
_MAX_SUBSETS = 64
#: A group's patterns that a message can match are merged into one regex when they are at least this many,
#: else tried one by one (each pattern's own ``match``, skipped once it has fired): after the required-word
#: masks most words try one to three patterns, and one by one is faster there (the wrapping lookaheads and
#: conditionals cost more than the calls they save; per call, merged against one by one, on the labelled
#: messages: 0.86 / 0.73 us for one pattern, 1.79 / 1.56 for two, 3.50 / 3.06 for five, 6.24 / 6.35 for six).
_MERGE_FROM = 6

_Match = Callable[..., "re.Match[str] | None"]
#: What a word runs for a message's mask: a merged regex and its (group, id) pairs, or None and the (id,
#: match) pairs of the patterns tried one by one (``(None, ())`` when none can match).
_Variant = tuple[_LazyRegex | None, tuple[tuple[int, Any], ...]]


class _Group:
    """The patterns merged at a word, and their merged regexes by which of them a message can match.

    A pattern whose required words (``_regex_index.required_words``) the message lacks cannot match, so
    it is left out of what runs at the word: ``variants`` maps a message's mask, restricted to the
    group's ``bits``, to the :data:`_Variant` of the patterns that can match: (regex, (group, id) pairs)
    when they are ``_MERGE_FROM`` or more, else (None, (id, match) pairs) tried one by one (``(None, ())``
    when none can). The full set is built up front (what :meth:`Gate.warm` compiles, if merged); a subset
    is built the first time a message needs it (compiled only if merged). ``_MAX_MASKS`` and
    ``_MAX_SUBSETS`` bound the memory and the compiling per group.
    """

    __slots__ = ("bits", "variants", "_ids", "_needs", "_merged", "_subsets", "_ascii_bit")

    def __init__(self, ids: tuple[int, ...], needs: tuple[int, ...],
                 merged: Callable[[tuple[int, ...], bool], _Variant], ascii_bit: int) -> None:
        self._ids = ids
        self._needs = needs
        self._merged = merged
        self._ascii_bit = ascii_bit
        bits = ascii_bit  # the key also says which regexes to run (see Gate._ascii_bit)
        for n in needs:
            bits |= n
        self.bits = bits
        self.variants = {bits: merged(ids, True)}  # a full mask: every pattern can match
        self._subsets = {(ids, True): self.variants[bits], (ids, False): merged(ids, False)}

    def variant(self, key: int) -> _Variant:
        """The (regex, pairs) for the patterns whose required bits are all in ``key``; built on first use."""
        ids = tuple(i for i, n in zip(self._ids, self._needs) if key & n == n)
        ascii = key & self._ascii_bit != 0
        v = self._subsets.get((ids, ascii))
        if v is None:
            if len(self._subsets) >= _MAX_SUBSETS:
                v = self._subsets[(self._ids, ascii)]  # the full regex
            else:
                v = self._subsets[(ids, ascii)] = self._merged(ids, ascii)
        if len(self.variants) >= _MAX_MASKS:
            self.variants.clear()
        self.variants[key] = v
        return v


#: What the word pass keeps for a word (see ``Gate.__init__``'s table).
_WordWork = tuple[str, int, int, dict[int, _Variant] | None, _Group | None,
                  tuple[tuple[tuple[int, int, _Match, _Match], ...], frozenset[int]] | None]


#: A word's entry on the hot path (see ``Gate.__init__``) and the pairs it starts.
_Entry = tuple[float, "_Pairs", "_WordWork | None", int, float, float, float]
_Pairs = dict[str, _Entry]
#: The pairs of a word that starts none (shared, never filled); the entry of a word the gate does not know is
#: per gate (``Gate._unknown``: it sets every outside bit).
_NO_PAIRS: _Pairs = {}


class _Anchored:
    """The anchored patterns of one first word, and which of them to try by the message's mask.

    ``runs`` maps the mask restricted to ``bits`` to the (id, match) of the patterns whose required bits
    it holds and whose outside bit it lacks (see ``Gate.__init__``: a whole-message pattern whose words
    the message does not all hold), filled on first use (plain tuples, nothing to compile; ``_MAX_MASKS``
    bounds it), so the gate loops over the patterns it tries only.
    """

    __slots__ = ("bits", "runs", "_pats", "_ascii_bit")

    def __init__(self, pats: tuple[tuple[int, int, int, _Match, _Match], ...], ascii_bit: int) -> None:
        self._pats = pats  # (id, required bits, outside bit or 0, ASCII match, match)
        self._ascii_bit = ascii_bit
        bits = ascii_bit  # the key also says which regexes to run (see Gate._ascii_bit)
        for _, n, out, _, _ in pats:
            bits |= n | out
        self.bits = bits
        self.runs: dict[int, tuple[tuple[int, _Match], ...]] = {}

    def run(self, key: int) -> tuple[tuple[int, _Match], ...]:
        """The (id, match) of the patterns whose required bits are all in ``key``."""
        ascii = key & self._ascii_bit != 0
        r = tuple((i, a if ascii else u) for i, n, out, a, u in self._pats if key & n == n and not key & out)
        if len(self.runs) >= _MAX_MASKS:
            self.runs.clear()
        self.runs[key] = r
        return r


class Gate:
    """Decides whether a message needs memory, corpus, both or no search.

    Build it once and share it: construction compiles and indexes the
    patterns; :meth:`decide` is thread-safe and needs no lock.

    Example:
        >>> gate = Gate()
        >>> gate.decide("Remember that cheese project?").route.value
        'memory'
        >>> gate.decide("thanks!").route.value
        'none'
        >>> d = gate.decide("no, I meant the earlier thing")
        >>> d.route.value, d.correction
        ('memory', True)
    """

    __slots__ = ("_always", "_config", "_fallback", "_first", "_lazy", "_pats", "_reasons", "_words", "_mt", "_ct",
                 "_slope", "_bm", "_unless", "_unless_ids", "_router", "_tables", "_pm_logit", "_pc_logit", "_lookup",
                 "_question_floor",
                 "_start", "_by_index", "_qmark", "_lin", "_char_bits", "_ascii_bit", "_unless_ascii",
                 "_fallback_ascii", "_n_reasons", "_unknown", "_wide_mask")

    def __init__(self, config: GateConfig | None = None) -> None:
        if config is None:
            config = GateConfig()
        elif not isinstance(config, GateConfig):
            raise ConfigError(f"config={config!r} is invalid: must be a GateConfig or None")
        self._config = config
        cw = config.category_weights
        pats: list[tuple[re.Pattern[str], str, str, float, int, bool, str]] = []
        wrapped: list[str | None] = []  # regex ready to merge, None if it must run alone
        at: dict[str, list[int]] = {}
        first: dict[str, list[int]] = {}
        required: dict[int, list[frozenset[str]]] = {}  # indexed pattern -> word sets every match holds
        required_at: dict[tuple[int, str], list[frozenset[str]]] = {}  # (pattern, word): sets there
        required_chars: dict[int, tuple[frozenset[str], ...]] = {}  # and punctuation sets
        closed: dict[int, frozenset[str]] = {}  # anchored whole-message pattern -> every word it can match
        ascii_rx: list[re.Pattern[str]] = []  # each pattern compiled with re.ASCII, or itself if not safe
        at_alone: dict[str, list[int]] = {}
        search: dict[str, list[int]] = {"": []}
        fallback: list[int] = []
        unless: dict[int, re.Pattern[str]] = {}
        unless_ascii: dict[int, re.Pattern[str]] = {}  # as ascii_rx below
        extra_from = len(config.patterns)
        extras: list[tuple[int, int, float]] = []  # (index, target, weight) of the user's extra patterns
        for n_pat, pat in enumerate(config.patterns + config.extra_patterns):
            w = round(float(pat.weight) * float(cw.get(pat.category, 1.0)), 6)  # 0.72, not 0.7200000000000001
            if w == 0.0:
                continue  # disabled category: do not even run it
            i = len(pats)
            if n_pat >= extra_from:
                extras.append((i, _TARGET_CODE[pat.target], w))
            flags = re.IGNORECASE if _needs_ignorecase(pat.regex) else 0
            rx = re.compile(pat.regex, flags)
            ascii_rx.append(re.compile(pat.regex, flags | re.ASCII) if _ascii_safe(pat.regex, flags) else rx)
            pats.append((rx, pat.category, pat.regex, w, _TARGET_CODE[pat.target], pat.category == CORRECTION,
                         pat.name))
            if pat.unless_before:
                unless[i] = re.compile(pat.unless_before, re.IGNORECASE)
                unless_ascii[i] = re.compile(pat.unless_before, re.IGNORECASE | re.ASCII) \
                    if _ascii_safe(pat.unless_before, re.IGNORECASE) else unless[i]
            # Merging (patterns that start at a later word) wraps the regex in a group: own groups
            # (backrefs) or global inline flags would break, so such patterns run alone.
            mergeable = rx.groups == 0 and (re.compile(pat.regex).flags & ~re.UNICODE) == 0
            wrapped.append(((f"(?i:{pat.regex})" if flags else pat.regex)) if mergeable else None)
            if pat.fallback:
                fallback.append(i)
                continue
            trig = _analyse(pat.regex, flags)
            if trig is None:
                search[""].append(i)
                continue
            if trig.mode == _MODE_SEARCH:
                index = search
            else:
                if trig.mode == _MODE_AT:
                    index = at if mergeable and len(pat.regex) <= _ALONE_AT_CHARS else at_alone
                else:
                    # anchored (^): tried on its own when the first word fits (one match call each; merged into
                    # a regex of lookaheads per first word they cost more: p50 33 -> 25 us in an interleaved A/B)
                    index = first
                    vocab = _closed_words(pat.regex, flags)
                    if vocab is not None:
                        closed[i] = vocab
                # Sets holding every first word hold the word the pattern is tried at: they rule out nothing.
                # Non-ASCII words are dropped: IGNORECASE lets "s" match "\u017f", which lowering keeps.
                required[i] = [ws for ws in _required_words(pat.regex, flags)
                               if not trig.words <= ws and all(w.isascii() for w in ws)]
                # Tried at one of its words (an anchored one: when the message begins with it), a pattern can
                # match there by the alternatives that can begin with that word only: their sets, when
                # stronger ("\bwas\s+(?:i|we)\b" at "was"). A set holding the word itself rules out nothing.
                for word, word_sets in _required_by_first_word(pat.regex, flags).items():
                    required_at[(i, word)] = [ws for ws in word_sets
                                              if word not in ws and all(w.isascii() for w in ws)]
                required_chars[i] = _required_chars(pat.regex, flags)
            for word in trig.words:
                index.setdefault(word, []).append(i)
        self._pats = tuple(pats)

        # A pattern is tried only when the message holds a word of each set it requires (derived from the
        # parsed regex, so skipping never changes what matches). Each distinct set is a bit, each word carries
        # the bits of the sets holding it, and the word pass ORs them into the message's mask; the patterns
        # are tried after that pass. On the tune messages it skips about 60% of the anchored calls and
        # halves the time in merged regexes.
        set_bit: dict[frozenset[str], int] = {}
        word_bits: dict[str, int] = {}
        need: dict[int, int] = dict.fromkeys(required, 0)
        # A message of ASCII chars (but \x1c-\x1f) sets bit 0, and the patterns it tries are then compiled
        # with re.ASCII, which matches there as without (``_regex_index.ascii_safe``; a pattern that is not
        # safe stays as it is) and faster: \w, \b, \s test a table instead of the Unicode database (the
        # labelled messages' match calls: 1.8 against 2.6 us). The bit is in every word group's and first
        # word's ``bits``, so their tables keep the two kinds of runs apart. It and the few punctuation
        # sets below come first: a group that needs only those has small keys (cached small ints).
        ascii_bit = self._ascii_bit = 1
        # The same for punctuation every match holds (``_regex_index.required_chars``: a "?", a ","): a set
        # is a bit too, set when the message holds a char of it (one ``in`` per char after the word pass,
        # about 0.25 us; on the labelled messages it skips 1.4 of the 6.5 match calls a message made).
        char_bits: dict[str, int] = {}
        # An anchored pattern that must match the whole message (``^...$``) and whose every word comes from
        # the regex (``_regex_index.closed_words``: "thanks, see you", "why not?") cannot match a message
        # holding any other word. Such a pattern has an outside bit, which every word outside its set sets
        # (a word the gate does not know too: ``_unknown``), and is tried only when the mask lacks it. On
        # the labelled messages it skips 0.9 of the 2.8 anchored calls a message made (1.7 of which missed).
        # These bits come right after bit 0: most words carry them all, and they stay small.
        outside_bit = {i: 2 << k for k, i in enumerate(sorted(closed))}
        all_outside = 0
        inside: dict[str, int] = {}  # word -> the outside bits it does not set
        for i, bit in outside_bit.items():
            all_outside |= bit
            for word in closed[i]:
                inside[word] = inside.get(word, 0) | bit
        n_outside = len(outside_bit)

        def bit_of(members: frozenset[str], bits_of: dict[str, int]) -> int:
            """The bit of a required set (a new one the first time), recorded for each of its members."""
            bit = set_bit.get(members)
            if bit is None:
                bit = set_bit[members] = 2 << (len(set_bit) + n_outside)
                for member in members:
                    bits_of[member] = bits_of.get(member, 0) | bit
            return bit

        for i, char_sets in required_chars.items():
            for cs in char_sets:
                need[i] |= bit_of(cs, char_bits)
        self._char_bits = tuple(char_bits.items())
        # the mask of a message with a non-ASCII word char (see decide): every required bit, no outside bit,
        # not the ASCII bit
        self._wide_mask = ~(ascii_bit | all_outside)
        for i, sets in required.items():
            for ws in sets:
                need[i] |= bit_of(ws, word_bits)
        need_at: dict[tuple[int, str], int] = {}  # (pattern, a word it is tried at) -> its bits there
        for (i, word), at_sets in required_at.items():
            bits = need[i]
            for ws in at_sets:
                bits |= bit_of(ws, word_bits)
            if bits != need[i]:
                need_at[(i, word)] = bits

        shared: dict[tuple[tuple[int, ...], bool], _LazyRegex] = {}

        def merged(key: tuple[int, ...], ascii: bool) -> _Variant:
            # One match call evaluates every pattern at a position: each sits in
            # an optional lookahead, so a set group means "this one matched here".
            # The trailing conditionals fail the match when no group is set, so the
            # common case (nothing fires at this word) returns None cheaply.
            # Words indexing the same patterns (hundreds of given names) share one
            # regex, compiled the first time a message needs it. Fewer patterns than
            # _MERGE_FROM are tried one by one instead (see there).
            if len(key) < _MERGE_FROM:
                return None, tuple((i, (ascii_rx[i] if ascii else pats[i][0]).match) for i in key)
            rx = shared.get((key, ascii))
            if rx is None:
                body = "".join(f"(?=({wrapped[i]})|)" for i in key)
                none_set = "".join(f"(?({g})|" for g in range(1, len(key) + 1)) + "(?!)" + ")" * len(key)
                flags = re.ASCII if ascii and all(ascii_rx[i] is not pats[i][0] for i in key) else 0
                rx = shared[(key, ascii)] = _LazyRegex(body + none_set, flags)
            return rx, tuple((g, i) for g, i in enumerate(key, 1))

        # word -> (its merged patterns or None, (id, required bits, match) of the ids tried on their own at
        #          the word, ids searched once when the word occurs)
        groups: dict[tuple[tuple[int, ...], tuple[int, ...]], _Group] = {}  # by (ids, their bits)
        table: dict[str, _WordWork] = {}  # (group bits, its variants, the group, (alone ids, searched ids))
        for word in (set(at) | set(search) | set(at_alone)) - {""}:
            grp = None
            if word in at:
                key = tuple(sorted(set(at[word])))
                needs = tuple(need_at.get((i, word), need.get(i, 0)) for i in key)
                grp = groups.get((key, needs))
                if grp is None:
                    grp = groups[(key, needs)] = _Group(key, needs, merged, ascii_bit)
            aids = tuple((i, need_at.get((i, word), need.get(i, 0)), ascii_rx[i].match, pats[i][0].match)
                         for i in at_alone.get(word, ()))
            sids = frozenset(search.get(word, ()))
            # the rarely set parts share one slot, None for most words: one test for both
            # " word " finds the word's position in the message (see decide), and len(word) + 1 steps past it
            pad, skip = f" {word} ", len(word) + 1
            table[word] = (pad, skip, 0, None, None, (aids, sids) if aids or sids else None) if grp is None else \
                (pad, skip, grp.bits, grp.variants, grp, (aids, sids) if aids or sids else None)
        self._words = table
        self._first = {k: _Anchored(tuple((i, need_at.get((i, k), need.get(i, 0)), outside_bit.get(i, 0),
                                           ascii_rx[i].match, pats[i][0].match) for i in v),
                                    ascii_bit) for k, v in first.items()}
        self._always = frozenset(search[""])
        # (id, regex) of the fallback patterns, as compiled and with re.ASCII (see _ascii_bit)
        self._fallback = tuple((i, pats[i][0]) for i in fallback)
        self._fallback_ascii = tuple((i, ascii_rx[i]) for i in fallback)
        self._unless = unless
        self._unless_ascii = unless_ascii
        self._unless_ids = frozenset(unless)
        # Per pattern: matched text -> its GateReason (a dict per pattern: the hot path hashes the text alone,
        # not an (index, text) tuple); ``_n_reasons`` counts them all, bounded by _REASON_CACHE.
        self._reasons: tuple[dict[str, GateReason], ...] = tuple({} for _ in pats)
        self._n_reasons = 0
        self._mt = float(config.memory_threshold)
        self._ct = float(config.corpus_threshold)
        self._slope = float(config.confidence_slope)
        self._bm = float(config.both_margin)
        self._lazy = tuple(shared.values())
        self._router: LinearRouter | None = load_default_router() if config.learned else None
        self._tables: RouterTables | None = None
        if self._router is not None:
            tb = self._router.tables([p[6] for p in pats])
            push = list(tb.pats)
            for i, target, w in extras:  # a pattern the combiner never saw pushes its target's logit
                x = GATE_EXTRA_PATTERN_LOGIT * w
                push[i] = (x, 0.0) if target == _T_MEMORY else (0.0, x) if target == _T_CORPUS else (-x, -x)
            tb.pats = tuple(push)
            self._tables = tb
        floor = None if self._router is None else self._router.question_floor
        self._question_floor = math.inf if floor is None else -math.inf if floor <= 0.0 else _logit(floor)
        self._pm_logit = _logit(config.memory_probability)
        self._pc_logit = _logit(config.corpus_probability)
        # One lookup per word on the hot path: word -> (combiner memory weight, the word pairs it starts, the
        # word's patterns (see table above) or None, its required-set bits, 0.0, combiner corpus weight, 0.0).
        # The memory and corpus parts are summed as two floats (the 0.0s are the pair weights, below): four
        # float adds cost less than two adds of complex numbers (memory + corpus * 1j, each part rounded as
        # its own float add, so the same sums), which allocate (interleaved, the word loop: 0.84 of the time).
        # Without the combiner the weights are zero. A word known only for its bits adds 0.0 weights, which
        # leaves the sums as they were (no sum is ever -0.0, the one float that adding 0.0 changes).
        lw = self._tables.words if self._tables is not None else {}
        # A word's pairs map the next word to that word's entry with the pair weight in place of the 0.0s: a
        # word that follows a known pair (most do) costs one dict lookup, not two. A word that starts no
        # pairs has the shared empty dict, an unknown word the entry self._unknown: the word loop has one path and
        # no test for None (the 0.0s these add change no sum, as above; interleaved A/B: about 2% of decide).
        no_w: tuple[float, float, dict[str, tuple[float, float]] | None] = (0.0, 0.0, None)
        pairs_of: dict[int, _Pairs] = {}  # the combiner's pair dicts, rebuilt, by identity
        to_fill: list[tuple[dict[str, tuple[float, float]], _Pairs]] = []

        def pairs_for(d: dict[str, tuple[float, float]] | None) -> _Pairs:
            if d is None:
                return _NO_PAIRS
            c = pairs_of.get(id(d))
            if c is None:
                c = pairs_of[id(d)] = {}
                to_fill.append((d, c))
            return c

        self._lookup: dict[str, _Entry] = {}
        # the words of the closed sets are known too: a word the gate does not know sets every outside bit
        self._unknown: _Entry = (0.0, _NO_PAIRS, None, all_outside, 0.0, 0.0, 0.0)
        for word in set(lw) | set(table) | set(word_bits) | set(inside):
            m_w, c_w, nxt_w = lw.get(word, no_w)
            self._lookup[word] = (m_w, pairs_for(nxt_w), table.get(word),
                                  word_bits.get(word, 0) | (all_outside & ~inside.get(word, 0)), 0.0, c_w, 0.0)
        self._start = pairs_for(self._tables.start) if self._tables is not None else _NO_PAIRS
        for d, c in to_fill:
            for next_word, (m, k) in d.items():
                w_m, w_nxt, w_work, w_bits, _, w_c, _ = self._lookup.get(next_word, self._unknown)
                c[next_word] = (w_m, w_nxt, w_work, w_bits, m, w_c, k)
        self._qmark = self._tables.uni.get("?") if self._tables is not None else None
        # the combiner's bias and sum weights in one tuple: one attribute load in decide
        tbl = self._tables
        self._lin = (0.0,) * 8 if tbl is None else (*tbl.bias, tbl.ms[0], tbl.ms[1], tbl.cs[0], tbl.cs[1],
                                                    tbl.ns[0], tbl.ns[1])
        # pattern index -> (combiner memory weight, combiner corpus weight, its weight as memory, as corpus, as
        # none (0.0 but for its target), counts as a correction, its reasons by matched text (self._reasons[i]))
        tp = self._tables.pats if self._tables is not None else ((0.0, 0.0),) * len(pats)
        self._by_index = tuple(
            (tp[i][0], tp[i][1], p[3] if p[4] == _T_MEMORY else 0.0, p[3] if p[4] == _T_CORPUS else 0.0,
             p[3] if p[4] == _T_NONE else 0.0, p[5] and p[3] > 0, self._reasons[i])
            for i, p in enumerate(pats))

    def warm(self) -> int:
        """Compile every merged regex now instead of on first use (about 0.15 s on a 2-core VM).

        A new gate compiles the merged regex of a word the first time a message
        needs it, which adds a few milliseconds to the first messages a process
        routes. A server that wants even first-message latency calls this once
        at start-up.

        Returns:
            How many regexes were compiled by this call.
        """
        compiled = 0
        for rx in self._lazy:
            compiled += rx.compile()
        return compiled

    @property
    def config(self) -> GateConfig:
        return self._config

    def decide(self, message: str) -> GateDecision:
        """Route one user message.

        Args:
            message: The raw user message.

        Returns:
            The decision with route, confidence, scores and every reason.

        Raises:
            InvalidInputError: ``message`` is not a str, or is empty/whitespace.
        """
        if not isinstance(message, str):
            raise InvalidInputError(f"message must be str, got {type(message).__name__}: {message!r:.80}")
        if not message or message.isspace():
            raise InvalidInputError(f"message={message!r} is invalid: empty or whitespace-only")
        if "\u2019" in message:
            message = message.replace("\u2019", "'")
        low = message.lower()
        lookup = self._lookup.get
        unknown = self._unknown
        spans: dict[int, tuple[int, int]] = {}
        searched = self._always
        # the learned combiner's word, word-pair and pattern part (memory, corpus), summed on the way (see the
        # logits below)
        wl = 0.0
        wc = 0.0
        mask = 0  # bits of the word sets the patterns require that the message's words fill
        pending: list[_WordWork] = []  # the patterns of the words that have some, in the words' order
        add_pending = pending.append
        nxt = self._start
        # The words (``\w+``) are the message's runs of word chars once every other char is a space: for an
        # ASCII message a bytes translate and a split, several times faster than ``finditer`` and a match
        # object per word. Each char keeps its offset, so a word's position is where " word " occurs in the
        # padded ``spaced`` (found below for the words that have patterns only).
        ascii_only = low.isascii()
        if ascii_only:
            spaced = low.encode().translate(_ASCII_NON_WORD_TO_SPACE).decode()
        else:
            spaced = _NON_WORD_CHAR.sub(" ", low)
        words = spaced.split()
        first_word = words[0] if words else ""
        spaced = f" {spaced} "
        # One pass over the words: the combiner's weights, the mask, and the words that have patterns to try
        # (tried below, once the mask is complete).
        for word in words:
            # an entry is a 5-tuple, never false: ``or`` is the "not a known pair" test, one jump less
            w_m, nxt, work, bits, p_m, w_c, p_c = nxt.get(word) or lookup(word, unknown)
            wl = wl + p_m + w_m
            wc = wc + p_c + w_c
            mask |= bits
            if work is not None:
                add_pending(work)
        for ch, bits in self._char_bits:
            if ch in low:
                mask |= bits
        if ascii_only:
            # \x1c-\x1f are spaces to Unicode's \s, not to re.ASCII's: such a message runs the patterns as
            # compiled without it
            if low.isprintable() or _UNICODE_ONLY_SPACE.search(low) is None:
                mask |= self._ascii_bit
        elif _NON_ASCII_WORD_CHAR.search(low) is not None:
            # The required words hold for words of ASCII letters: a non-ASCII letter may match an ASCII one
            # under IGNORECASE ("\u017f" for "s"), so try every pattern (as compiled without re.ASCII).
            # Other non-ASCII chars (emoji, punctuation) are non-word chars to the regexes and the words
            # alike, and change nothing.
            mask = self._wide_mask
        # Now that the mask holds every word's bits: first the anchored patterns of the first word, then the
        # patterns of each word in the words' order. That is the order the spans were found in when each
        # word was tried in the pass, and it matters: the sums below add up in the spans' order.
        anchored = self._first.get(first_word)
        if anchored is not None:
            key = mask & anchored.bits
            runs = anchored.runs.get(key)
            if runs is None:
                runs = anchored.run(key)
            for i, match in runs:
                m = match(low)
                if m is not None:
                    spans[i] = m.span()
        cur = 0  # where the next word's " word " can start in ``spaced``
        for pad, skip, gbits, variants, grp, rare in pending:
            if variants is not None:
                key = mask & gbits
                v = variants.get(key)
                if v is None:
                    v = grp.variant(key)  # type: ignore[union-attr]  # set with variants
                rx, pairs = v
                if pairs:  # empty when none of the word's merged patterns can match the message (a third of words)
                    # The first " word " from ``cur`` on is this word: ``cur`` is past the last word whose
                    # position was found, and an earlier occurrence of this word after it would have had the
                    # same patterns to try, so its position found first. (A word without patterns to try needs
                    # no position: its every occurrence is left out alike.)
                    pos = spaced.find(pad, cur)
                    cur = pos + skip
                    if rx is None:
                        for i, match in pairs:  # (id, match) pairs when rx is None
                            if i not in spans:
                                m = match(low, pos)
                                if m is not None:
                                    spans[i] = m.span()
                    else:
                        m = rx.match(low, pos)
                        if m is not None:
                            regs = m.regs
                            for g, i in pairs:
                                if regs[g][0] >= 0 and i not in spans:
                                    spans[i] = regs[g]
            if rare is not None:
                aids, sids = rare
                if aids:
                    if variants is None or not pairs:  # the position is not found yet (``pairs``: this word's)
                        pos = spaced.find(pad, cur)
                        cur = pos + skip
                    for i, need, a_match, u_match in aids:
                        if i not in spans and (mask & need) == need:
                            m = (a_match if mask & self._ascii_bit else u_match)(low, pos)
                            if m is not None:
                                spans[i] = m.span()
                if sids:
                    searched = searched | sids
        for i in searched:
            if i not in spans:
                m = self._pats[i][0].search(low)
                if m is not None:
                    spans[i] = m.span()
        if not self._unless_ids.isdisjoint(spans):
            spans = self._drop_resolved(low, spans, mask & self._ascii_bit != 0)
        if not spans:  # nothing recognised the message: its last reading, by the fallback patterns
            for i, fallback_rx in self._fallback_ascii if mask & self._ascii_bit else self._fallback:
                m = fallback_rx.search(low)
                if m is not None:
                    spans[i] = m.span()
        # Report matched text from the original when lowering kept the offsets.
        src = message if len(low) == len(message) else low
        by_index = self._by_index
        # The memory, corpus and none sums: a pattern adds its weight to its target's and 0.0 to the others,
        # which changes no sum (none of them is ever -0.0, the one float that adding 0.0 changes).
        mem = 0.0
        corp = 0.0
        none = 0.0
        correction = False
        fired: list[tuple[int, int, GateReason]] = []
        for i, (start, end) in spans.items():
            p_m, p_c, w_m, w_c, w_n, is_corr, reasons = by_index[i]
            wl += p_m
            wc += p_c
            mem += w_m
            corp += w_c
            none += w_n
            if is_corr:
                correction = True
            text = src[start:end]
            reason = reasons.get(text)
            if reason is None:  # reasons are immutable: share them across calls
                self._new_reason()
                _, category, regex, w, _, _, name = self._pats[i]
                reason = reasons[text] = GateReason(category, regex, w, text, name)
            fired.append((start, i, reason))
        tb = self._tables
        if tb is None:
            return self._verdict(mem, corp, none, correction, fired)
        e = nxt.get("</s>")
        if e is not None:
            wl += e[4]
            wc += e[6]
        qmark = "?" in low
        question = qmark or first_word in _QUESTION_OPENERS
        # The combiner's (memory, corpus) logits: the features of ``_gate_model.feature_items``, summed over
        # tables keyed for this gate; ``wl`` / ``wc`` are the words', word pairs' and fired patterns' part,
        # summed in the passes above (a test checks both give the same numbers). Inline: one call less on a
        # 20 us budget.
        lm, lc, ms_m, ms_c, cs_m, cs_c, ns_m, ns_c = self._lin
        lm += mem * ms_m + corp * cs_m + none * ns_m + wl
        lc += mem * ms_c + corp * cs_c + none * ns_c + wc
        if qmark:
            eq = self._qmark
            if eq is not None:
                lm += eq[0]
                lc += eq[1]
        elif not question:
            lm += tb.nq[0]
            lc += tb.nq[1]
        pm_logit = self._pm_logit
        pc_logit = self._pc_logit
        if lm < pm_logit and lc < pc_logit and not correction \
                and (lc if lc > lm else lm) >= self._question_floor and (question or asks_something(low)):
            # Question rule: a question ("?", a question word first, or "remind me ...") the combiner would leave
            # unsearched, though not sure of it (the likelier head at least the model's question_floor),
            # keeps the pattern scores' route when they search. The floor is chosen with the weights by
            # leave-one-set-out (benchmarks/tune_gate.py; provenance.question_rule).
            d = self._verdict(mem, corp, none, correction, fired)
            if d.route is not _NONE:
                return dataclasses.replace(d, memory_probability=_sigmoid(lm), corpus_probability=_sigmoid(lc),
                                           rule="question")
        # The learned verdict.
        want_mem = lm >= pm_logit or correction
        want_corp = lc >= pc_logit
        # _sigmoid inline (the same operations, so the same bits): two calls less per message; 0.0, not 0: a
        # float compare with a float is the specialized one (the same answer)
        if lm >= 0.0:
            pm = 1.0 / (1.0 + exp(-lm))
        else:
            e_m = exp(lm)
            pm = e_m / (1.0 + e_m)
        if lc >= 0.0:
            pc = 1.0 / (1.0 + exp(-lc))
        else:
            e_c = exp(lc)
            pc = e_c / (1.0 + e_c)
        # max / min written out (the value the builtin returns: the first argument unless the second is
        # greater / less), the routes as globals (see _NONE): about 0.3 us less per message
        mem_conf = (0.5 if pm < 0.5 else pm) if correction else pm  # a correction searches memory whatever P says
        if want_mem and want_corp:
            route, conf = _BOTH, (pc if pc < mem_conf else mem_conf)
        elif want_mem:
            route, conf = _MEMORY, mem_conf
        elif want_corp:
            route, conf = _CORPUS, pc
        else:
            not_m = 1.0 - pm
            not_c = 1.0 - pc
            route, conf = _NONE, (not_c if not_c < not_m else not_m)
        # the reasons in order
        if not fired:
            found: tuple[GateReason, ...] = ()
        elif len(fired) == 1:
            found = (fired[0][2],)
        else:
            fired.sort()  # by position, then pattern index: (start, index) pairs are unique
            found = tuple(map(_REASON_OF, fired))  # map, not a list comprehension: no function call in 3.11
        # _decision inline: one call less per message
        d = _new(GateDecision)
        _set_route(d, route)
        _set_confidence(d, conf)
        _set_memory_score(d, mem)
        _set_corpus_score(d, corp)
        _set_reasons(d, found)
        _set_correction(d, correction)
        _set_memory_probability(d, pm)
        _set_corpus_probability(d, pc)
        _set_rule(d, "")
        return d

    def explain_learned(self, message: str) -> list[tuple[str, float, float]]:
        """The learned combiner's view of ``message``: (feature, memory logit part, corpus logit part),
        strongest first. Empty when ``GateConfig.learned`` is off.

        Raises:
            InvalidInputError: ``message`` is not a str, or is empty/whitespace.
        """
        if self._router is None:
            self.decide(message)  # validates
            return []
        return self._router.contributions(*self._features(message))

    def _features(self, message: str) -> tuple[list[str], bool, list[str], float, float, float]:
        """The combiner's inputs for ``message`` (what :meth:`decide` feeds it): words, "?", fired
        pattern names and the memory / corpus / none sums. The training script reads them here."""
        d = self.decide(message)
        low = (message.replace("\u2019", "'")).lower()
        sums = [0.0, 0.0, 0.0]  # indexed by _T_MEMORY, _T_CORPUS, _T_NONE
        target_of = {p[6]: p[4] for p in self._pats}
        names = []
        for r in d.reasons:  # a reason carries its pattern's (category-scaled) weight
            names.append(r.name)
            sums[target_of[r.name]] += r.weight
        mem, corp, none = sums[_T_MEMORY], sums[_T_CORPUS], sums[_T_NONE]
        return _TOKEN.findall(low), "?" in low, names, mem, corp, none

    def _new_reason(self) -> None:
        """Count a reason about to be cached; past _REASON_CACHE every pattern's table starts again empty.
        (Two threads may both count or clear: the count is then off by a few, still bounded.)"""
        if self._n_reasons >= _REASON_CACHE:
            for cache in self._reasons:
                cache.clear()
            self._n_reasons = 0
        self._n_reasons += 1

    def _drop_resolved(self, low: str, spans: dict[int, tuple[int, int]], ascii: bool) -> dict[int, tuple[int, int]]:
        """Drop matches whose ``unless_before`` regex is found earlier in the message (``ascii``: with the
        regexes compiled with re.ASCII, see ``Gate._ascii_bit``)."""
        unless = self._unless_ascii if ascii else self._unless
        drop = [i for i in self._unless_ids.intersection(spans) if unless[i].search(low, 0, spans[i][0]) is not None]
        for i in drop:
            del spans[i]
        return spans

    def _verdict(self, mem: float, corp: float, none: float, correction: bool,
                 fired: list[tuple[int, int, GateReason]]) -> GateDecision:
        net_mem = mem - none
        net_corp = corp - none
        mt, ct, slope = self._mt, self._ct, self._slope
        want_mem = net_mem >= mt or correction
        want_corp = net_corp >= (ct + self._bm if want_mem else ct)
        if want_mem and want_corp:
            route = _BOTH
            conf = min(_sigmoid(slope * (max(net_mem, mt) - mt)), _sigmoid(slope * (net_corp - ct)))
        elif want_mem:
            route = _MEMORY
            conf = _sigmoid(slope * (max(net_mem, mt) - mt))
        elif want_corp:
            route = _CORPUS
            conf = _sigmoid(slope * (net_corp - ct))
        else:
            route = _NONE
            conf = 1.0 - _sigmoid(slope * max(net_mem - mt, net_corp - ct))
        if len(fired) > 1:
            fired.sort()  # by position, then pattern index: (start, index) pairs are unique
        return _decision(route, conf, mem, corp, tuple(map(_REASON_OF, fired)), correction, None, None)
