"""Query classifier: which memory strategy suits a message (no LLM)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._types import Entity, QueryType, Strategy

__all__ = ["STRATEGY_FOR", "classify_query"]

_RECENT = re.compile(
    r"\b(just now|a moment ago|a minute ago|last (?:thing|message|answer|one)|you just|i just|"
    r"most recent|latest|earlier today|so far|before that|previous (?:message|answer))\b",
    re.I,
)
_EXPLORE = re.compile(
    r"\b(everything|all (?:the )?(?:things|times|stuff)|overview|summar(?:y|ise|ize)|what (?:have|did) we "
    r"(?:talk|discuss)|anything (?:about|else)|list (?:all|every)|topics?)\b",
    re.I,
)
_SPECIFIC_KINDS = frozenset({"identifier", "path", "error", "quoted"})

#: The strategy the classifier picks for each query type.
STRATEGY_FOR = {
    QueryType.RECENT: Strategy.RECENCY,
    QueryType.SPECIFIC: Strategy.HYBRID,
    QueryType.ENTITY: Strategy.HYBRID,
    QueryType.EXPLORATORY: Strategy.GRAPH,
    QueryType.HYBRID: Strategy.HYBRID,
}


def classify_query(message: str, entities: Sequence[Entity]) -> QueryType:
    """Classify ``message`` given the entities found in it.

    Recency wording wins (the user asks about the last thing said); then
    exact anchors (identifiers, paths, error codes, quotes) make a query
    specific; named entities make it an entity query; survey wording makes it
    exploratory; anything else is hybrid.
    """
    if _RECENT.search(message):
        return QueryType.RECENT
    if any(e.kind in _SPECIFIC_KINDS for e in entities):
        return QueryType.SPECIFIC
    if _EXPLORE.search(message):
        return QueryType.EXPLORATORY
    if any(e.kind == "name" for e in entities):
        return QueryType.ENTITY
    return QueryType.HYBRID
