"""Token budget: how many tokens a turn may inject, and which items fit."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

from ._config import BudgetConfig
from ._types import Entity, Route, ScoredItem

__all__ = ["Selection", "budget_for", "select_items", "tier_of", "trim_overlaps"]

_WORD = re.compile(r"\w+")
_MULTI = re.compile(r"\b(and|compare|versus|vs\.?|both|all|each|every|why|how|explain|difference)\b", re.I)


@dataclasses.dataclass(frozen=True, slots=True)
class Selection:
    """Items that fit the budget, and those left out with the reason."""

    selected: tuple[ScoredItem, ...]
    rejected: tuple[ScoredItem, ...]
    tokens: int


def budget_for(message: str, entities: Sequence[Entity], route: Route, config: BudgetConfig) -> int:
    """Token budget of the whole context block for this message.

    ``fixed`` and ``tiers`` use ``max_tokens``. ``dynamic`` interpolates
    between ``min_tokens`` and ``max_tokens`` by a complexity score: longer
    messages, more entities, comparison words and a both-sources route all
    ask for more context.
    """
    if config.mode != "dynamic":
        return config.max_tokens
    words = len(_WORD.findall(message))
    complexity = min(words / 40.0, 0.4) + min(len(entities) * 0.1, 0.3)
    complexity += 0.15 * min(len(_MULTI.findall(message)), 2)
    if route is Route.BOTH:
        complexity += 0.2
    complexity = min(complexity, 1.0)
    return int(config.min_tokens + (config.max_tokens - config.min_tokens) * complexity)


def tier_of(score: float, config: BudgetConfig) -> str:
    if score >= config.critical_score:
        return "critical"
    if score >= config.relevant_score:
        return "relevant"
    return "background"


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def select_items(
    items: Sequence[ScoredItem],
    *,
    budget: int,
    config: BudgetConfig,
    diversity_threshold: float,
    in_order: bool = False,
) -> Selection:
    """Greedy best-first selection under ``budget`` with near-duplicate suppression.

    Items are taken in score order (``in_order``: in the order given); an
    item whose word set overlaps an already selected one above
    ``diversity_threshold`` (Jaccard) is dropped as a near-duplicate. In
    ``tiers`` mode critical items go first, then relevant, and background
    items may use only ``background_share`` of the budget.
    """
    ordered = list(items) if in_order else sorted(items, key=lambda it: -it.score)
    if config.mode == "tiers":
        rank = {"critical": 0, "relevant": 1, "background": 2}
        ordered.sort(key=lambda it: rank.get(it.tier, 3))
    background_cap = int(budget * config.background_share)
    used = 0
    background_used = 0
    chosen: list[ScoredItem] = []
    words: list[frozenset[str]] = []
    rejected: list[ScoredItem] = []
    for it in ordered:
        ws = frozenset(w.casefold() for w in _WORD.findall(it.text))
        dup = next((c for c, cw in zip(chosen, words) if _jaccard(ws, cw) >= diversity_threshold), None)
        if dup is not None:
            rejected.append(dataclasses.replace(it, why=f"near-duplicate of {dup.id}"))
            continue
        if used + it.tokens > budget:
            rejected.append(dataclasses.replace(it, why=f"over budget ({used}+{it.tokens}>{budget} tokens)"))
            continue
        if config.mode == "tiers" and it.tier == "background":
            if background_used + it.tokens > background_cap:
                rejected.append(dataclasses.replace(it, why=f"background share full ({background_cap} tokens)"))
                continue
            background_used += it.tokens
        chosen.append(it)
        words.append(ws)
        used += it.tokens
    chosen.sort(key=lambda it: -it.score)
    return Selection(tuple(chosen), tuple(rejected), used)


def _shared_run(before: Sequence[str], after: Sequence[str]) -> int:
    """How many words end ``before`` and also start ``after`` (the longest such run; 0 for none)."""
    for m in range(min(len(before), len(after)), 0, -1):
        if before[-m:] == after[:m]:
            return m
    return 0


def trim_overlaps(
    items: Sequence[ScoredItem], count_tokens: Callable[[str], int]
) -> tuple[list[ScoredItem], list[ScoredItem]]:
    """Leave out the words a passage shares with a neighbouring chunk of its document shown before it.

    ``add_documents`` cuts a document into chunks that carry the tail of the chunk before, so an answer
    spanning a cut survives; two neighbouring chunks in one context repeated that tail. Going through
    ``items`` in context order, a passage (``source == "corpus"``) whose chunk before (``seq - 1``) or after
    (``seq + 1``) in the same document is already shown loses the run of words it shares with it (its head,
    its tail, or both), marked with "…"; its tokens are counted again. Memories and passages of other
    documents are untouched.

    Returns:
        (the items in the same order, trimmed where they repeat a neighbour; the passages left with no words of
        their own, with the reason).
    """
    shown: dict[tuple[str, str | None, int], tuple[str, list[str]]] = {}
    kept: list[ScoredItem] = []
    dropped: list[ScoredItem] = []
    for it in items:
        rec = it.record
        if it.source != "corpus" or rec is None:
            kept.append(it)
            continue
        words = it.text.split()
        prev = shown.get((rec.user_id, rec.session_id, rec.seq - 1))
        nxt = shown.get((rec.user_id, rec.session_id, rec.seq + 1))
        head = _shared_run(prev[1], words) if prev else 0
        tail = _shared_run(words, nxt[1]) if nxt else 0
        if head or tail:
            said = " and ".join(f"{where} {n} words repeat {ref[0]}" for n, where, ref in
                                ((head, "first", prev), (tail, "last", nxt)) if n and ref)
            if head + tail >= len(words):
                dropped.append(dataclasses.replace(it, why=f"all its words are shown already: its {said}"))
                continue
            text = ("… " if head else "") + " ".join(words[head:len(words) - tail]) + (" …" if tail else "")
            why = f"{it.why}; " if it.why else ""
            it = dataclasses.replace(it, text=text, tokens=count_tokens(text),  # noqa: PLW2901
                                     why=f"{why}its {said}, shown already: left out")
        kept.append(it)
        shown[(rec.user_id, rec.session_id, rec.seq)] = (it.id, words)
    return kept, dropped
