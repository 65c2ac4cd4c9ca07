"""Code shared by the adapters (LangChain, LlamaIndex, LangGraph) and the MCP server.

Only :mod:`chatrecall.core`'s public surface is used here, and nothing from a
third-party framework, so every adapter can import this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatrecall.core import ChatRecall, ConfigError, ScoredItem, check_keywords

__all__ = ["UNSET", "check_engine", "check_fields", "check_flag", "item_metadata", "with_engine"]

#: "No engine passed first" (see :func:`with_engine`).
UNSET: Any = object()


def check_fields(cls: type, data: Mapping[str, Any]) -> None:
    """Refuse a keyword a pydantic-based adapter class does not take (pydantic would drop it silently:
    ``ChatRecallRetriever(engine=cr, user_id="u", kk=3)`` searched the default ``k``), naming the closest field.

    Raises:
        InvalidArgumentError: the misspelt name and the closest field (:func:`chatrecall.core.check_keywords`).
    """
    fields: Mapping[str, Any] = getattr(cls, "model_fields", {})
    accepted = {*fields, *(f.alias for f in fields.values() if getattr(f, "alias", None))}
    check_keywords(cls.__name__, data, accepted)


def with_engine(engine: Any, data: dict[str, Any], owner: str) -> dict[str, Any]:
    """The keyword arguments of a pydantic-based adapter with the engine passed first (``ChatRecallRetriever(cr,
    user_id="u1")``, as the middleware and the LlamaIndex retriever take it) moved to ``engine=``; ``data`` as
    it is when it was not (helper-122, stop 41: a positional engine met pydantic's bare "takes 1 positional
    argument").

    Raises:
        ConfigError: the engine was passed both ways.
    """
    if engine is UNSET:
        return data
    if "engine" in data:
        raise ConfigError(f"{owner}: the engine was passed twice (first and as engine=): pass it once")
    return {"engine": engine, **data}


def check_flag(owner: str, name: str, value: Any) -> bool:
    """``value`` if it is a bool, else a :class:`ConfigError` naming it (helper-124, stop 42: ``as_context="yes"``
    was taken silently; a string is true whatever it says, and pydantic reads "no" as False).

    Example:
        >>> check_flag("MyRetriever", "as_context", "yes")
        Traceback (most recent call last):
        ...
        chatrecall.core._errors.ConfigError: MyRetriever: as_context='yes' is invalid (a str): pass True or False
    """
    if not isinstance(value, bool):
        raise ConfigError(f"{owner}: {name}={value!r:.60} is invalid (a {type(value).__name__}): pass True or False")
    return value


def check_engine(engine: Any, owner: str) -> ChatRecall:
    """``engine`` if it is a :class:`ChatRecall`, else a :class:`ConfigError` naming the value and the fix.

    Example:
        >>> check_engine("nope", "MyRetriever")
        Traceback (most recent call last):
        ...
        chatrecall.core._errors.ConfigError: MyRetriever: engine='nope' is invalid (a str): pass a ChatRecall, e.g. engine=chatrecall.connect()
    """
    if not isinstance(engine, ChatRecall):
        raise ConfigError(
            f"{owner}: engine={engine!r:.60} is invalid (a {type(engine).__name__}): "
            "pass a ChatRecall, e.g. engine=chatrecall.connect()"
        )
    return engine


def item_metadata(item: ScoredItem) -> dict[str, Any]:
    """The metadata every adapter attaches to a retrieved item.

    ``source``, ``score``, ``components``, ``tier``, ``why`` and ``tokens``;
    for a stored record also its ``user_id``, ``session_id``, ``role`` and
    ``timestamp``. Adapters add their own keys (ids, route, gate reasons).
    """
    md: dict[str, Any] = {
        "source": item.source,
        "score": item.score,
        "components": dict(item.components),
        "tier": item.tier,
        "why": item.why,
        "tokens": item.tokens,
    }
    rec = item.record
    if rec is not None:
        md.update(user_id=rec.user_id, session_id=rec.session_id, role=rec.role, timestamp=rec.timestamp)
    return md
