"""Token budget: how many tokens a turn may inject, and which items fit."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from ._config import BudgetConfig
from ._types import Entity, Route, ScoredItem

__all__ = ["Selection", "budget_for", "select_items", "tier_of"]

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
