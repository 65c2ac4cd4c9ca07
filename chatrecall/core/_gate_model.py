"""The gate's learned combiner: two logistic heads over pattern hits and words.

The weighted patterns of :mod:`._gate_patterns` recognise the forms a message
can take; how much each form, word and word pair says about the route is
learned from labelled messages. Two independent logistic heads read the same
features: "needs memory" and "needs the corpus"; the route is ``both`` when
both say yes. The weights are data (``chatrecall/data/gate_model.json``),
produced by ``benchmarks/tune_gate.py`` from the gate's tune split only, with
their provenance in the file.

Features of a message (counts, the same for training and routing: both call
:func:`feature_items`):

- ``P:<pattern name>``: 1 per pattern that fired;
- ``ms`` / ``cs`` / ``ns``: the summed weights of the memory / corpus / none
  patterns that fired (user patterns from ``GateConfig.extra_patterns`` count
  here too);
- ``u:<word>`` and ``b:<word> <word>``: the lowercased words (``\\w+``) and
  adjacent pairs, with ``<s>`` / ``</s>`` marking the message's ends; ``u:?``
  when the message holds a question mark;
- ``nq``: 1 when the message has no question form (no ``?`` and its first word
  is not one of ``QUESTION_OPENERS``): what fired in a statement says less than
  the same words in a question ("van booked, ref SH-4471").
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from importlib import resources
from typing import Any

from ._errors import ConfigError
from ._gate_patterns import QUESTION_OPENERS

__all__ = ["LinearRouter", "RouterTables", "feature_items", "feature_label", "load_default_router"]

MODEL_FILE = "gate_model.json"
_OPENERS = frozenset(QUESTION_OPENERS)
FORMAT = "chatrecall-gate-linear-v1"


def feature_items(words: Sequence[str], has_question_mark: bool, fired: Iterable[str],
                  mem: float, corp: float, none: float) -> Iterator[tuple[str, float]]:
    """Every (feature, value) of one message; a feature may repeat (values add up).

    Args:
        words: The lowercased message's ``\\w+`` words, in order.
        has_question_mark: Whether the message holds ``?``.
        fired: Names of the patterns that fired.
        mem: Summed weight of the memory patterns that fired.
        corp: Summed weight of the corpus patterns that fired.
        none: Summed weight of the none (small talk) patterns that fired.
    """
    for name in fired:
        yield "P:" + name, 1.0
    yield "ms", mem
    yield "cs", corp
    yield "ns", none
    if has_question_mark:
        yield "u:?", 1.0
    elif not words or words[0] not in _OPENERS:
        yield "nq", 1.0
    prev = "<s>"
    for w in words:
        yield "u:" + w, 1.0
        yield "b:" + prev + " " + w, 1.0
        prev = w
    yield "b:" + prev + " </s>", 1.0


def feature_label(feature: str) -> str:
    """A feature of :func:`feature_items` as a reader would name it: a word, a word pair, a pattern, a form."""
    if feature.startswith("u:"):
        return "'?'" if feature == "u:?" else repr(feature[2:])
    if feature.startswith("b:"):
        return repr(feature[2:].replace("<s> ", "^").replace(" </s>", "$"))
    if feature.startswith("P:"):
        return f"pattern {feature[2:]}"
    return {"nq": "no question form", "ms": "memory patterns", "cs": "corpus patterns",
            "ns": "small-talk patterns"}.get(feature, feature)


class LinearRouter:
    """Two logistic heads (needs memory, needs the corpus) over :func:`feature_items`.

    Args:
        weights: Feature -> (memory weight, corpus weight).
        bias: (memory bias, corpus bias).
        provenance: Where the weights came from (script, data, settings).
        question_floor: A question the heads would leave unsearched keeps the route of the pattern
            scores when they search and the likelier head gives it at least this probability (see
            :meth:`Gate.decide`); None: never. Chosen with the weights.

    Example:
        >>> r = LinearRouter({"u:my": (2.0, -1.0)}, (-1.0, 0.5))
        >>> pm, pc = r.probabilities(["my", "cat"], False, (), 0.0, 0.0, 0.0)
        >>> round(pm, 3), round(pc, 3)
        (0.731, 0.378)
    """

    __slots__ = ("_w", "_bias", "provenance", "question_floor")

    def __init__(self, weights: dict[str, tuple[float, float]], bias: tuple[float, float],
                 provenance: dict[str, Any] | None = None, *, question_floor: float | None = 0.0) -> None:
        self._w = weights
        self._bias = (float(bias[0]), float(bias[1]))
        self.provenance = dict(provenance or {})
        if question_floor is not None and not 0.0 <= question_floor < 1.0:
            raise ConfigError(f"question_floor={question_floor!r} is invalid: a probability in [0, 1) or None")
        self.question_floor = None if question_floor is None else float(question_floor)

    def __len__(self) -> int:
        return len(self._w)

    def logits(self, words: Sequence[str], has_question_mark: bool, fired: Iterable[str],
               mem: float, corp: float, none: float) -> tuple[float, float]:
        """(memory logit, corpus logit) of one message's features."""
        lm, lc = self._bias
        get = self._w.get
        for key, value in feature_items(words, has_question_mark, fired, mem, corp, none):
            e = get(key)
            if e is not None:
                lm += value * e[0]
                lc += value * e[1]
        return lm, lc

    def probabilities(self, words: Sequence[str], has_question_mark: bool, fired: Iterable[str],
                      mem: float, corp: float, none: float) -> tuple[float, float]:
        """(P(needs memory), P(needs the corpus)) of one message's features."""
        lm, lc = self.logits(words, has_question_mark, fired, mem, corp, none)
        return _sigmoid(lm), _sigmoid(lc)

    def contributions(self, words: Sequence[str], has_question_mark: bool, fired: Iterable[str],
                      mem: float, corp: float, none: float) -> list[tuple[str, float, float]]:
        """Every known feature's (name, memory contribution, corpus contribution), strongest first."""
        acc: dict[str, list[float]] = {}
        for key, value in feature_items(words, has_question_mark, fired, mem, corp, none):
            e = self._w.get(key)
            if e is not None and value:
                a = acc.setdefault(key, [0.0, 0.0])
                a[0] += value * e[0]
                a[1] += value * e[1]
        out = [(k, v[0], v[1]) for k, v in acc.items()]
        out.sort(key=lambda t: -max(abs(t[1]), abs(t[2])))
        return out

    def tables(self, pattern_names: Sequence[str]) -> RouterTables:
        """The weights regrouped for the gate's hot path (see :class:`RouterTables`).

        Args:
            pattern_names: The gate's patterns in index order.
        """
        w = self._w
        zero = (0.0, 0.0)
        uni: dict[str, tuple[float, float]] = {}
        bi: dict[str, dict[str, tuple[float, float]]] = {}
        for key, e in w.items():
            if key.startswith("u:"):
                uni[key[2:]] = e
            elif key.startswith("b:"):
                a, _, b = key[2:].partition(" ")
                bi.setdefault(a, {})[b] = e
        pats = tuple(w.get("P:" + n, zero) for n in pattern_names)
        return RouterTables(self._bias, uni, bi, pats, w.get("ms", zero), w.get("cs", zero), w.get("ns", zero),
                            w.get("nq", zero))

    def to_json(self) -> dict[str, Any]:
        """The router as the data file stores it."""
        return {"format": FORMAT, "provenance": self.provenance, "bias": list(self._bias),
                "question_floor": self.question_floor,
                "weights": {k: [round(v[0], 5), round(v[1], 5)] for k, v in sorted(self._w.items())}}

    @classmethod
    def from_json(cls, data: dict[str, Any], *, source: str = "<data>") -> LinearRouter:
        """A router from :meth:`to_json`'s form.

        Raises:
            ConfigError: The data is not a gate model of this format.
        """
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            got = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise ConfigError(f"gate model {source} is invalid: format {got!r}, expected {FORMAT!r}; "
                              "regenerate it with benchmarks/tune_gate.py")
        weights = {str(k): (float(v[0]), float(v[1])) for k, v in data["weights"].items()}
        bias = data["bias"]
        floor = data.get("question_floor", 0.0)  # files written before the field: the rule always applied
        if floor is not None and (isinstance(floor, bool) or not isinstance(floor, (int, float))):
            raise ConfigError(f"gate model {source} is invalid: question_floor={floor!r} is not a number or "
                              "null; regenerate it with benchmarks/tune_gate.py")
        return cls(weights, (float(bias[0]), float(bias[1])), data.get("provenance"), question_floor=floor)


class RouterTables:
    """A :class:`LinearRouter`'s weights keyed for one gate: words, word pairs as nested dicts (no
    string is built per pair), patterns by the gate's index. ``Gate.decide`` sums the same features
    as :func:`feature_items` with them; a test checks both give the same logits."""

    __slots__ = ("bias", "uni", "bi", "pats", "ms", "cs", "ns", "nq", "words", "start")

    def __init__(self, bias: tuple[float, float], uni: dict[str, tuple[float, float]],
                 bi: dict[str, dict[str, tuple[float, float]]], pats: tuple[tuple[float, float], ...],
                 ms: tuple[float, float], cs: tuple[float, float], ns: tuple[float, float],
                 nq: tuple[float, float] = (0.0, 0.0)) -> None:
        self.bias, self.uni, self.bi, self.pats = bias, uni, bi, pats
        self.ms, self.cs, self.ns, self.nq = ms, cs, ns, nq
        # One lookup per word on the hot path: word -> (memory, corpus, the pairs it starts or None)
        zero = (0.0, 0.0)
        self.words: dict[str, tuple[float, float, dict[str, tuple[float, float]] | None]] = {
            w: (*uni.get(w, zero), bi.get(w)) for w in set(uni) | set(bi)}
        self.start: dict[str, tuple[float, float]] | None = bi.get("<s>")


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


_DEFAULT: LinearRouter | None = None


def load_default_router() -> LinearRouter:
    """The shipped router (``chatrecall/data/gate_model.json``), read once per process."""
    global _DEFAULT
    if _DEFAULT is None:
        text = resources.files("chatrecall").joinpath(f"data/{MODEL_FILE}").read_text(encoding="utf-8")
        _DEFAULT = LinearRouter.from_json(json.loads(text), source=f"chatrecall/data/{MODEL_FILE}")
    return _DEFAULT
