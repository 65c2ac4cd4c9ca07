"""Input validation shared by the engine and the adapters.

Everything is checked before anything is written, so bad input never leaves
a half-finished write behind.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import inspect
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from difflib import get_close_matches
from types import MappingProxyType
from typing import Any, ParamSpec, TypeVar, cast

from ._config import StoreLimits
from ._errors import InvalidArgumentError, InvalidInputError
from ._index import PARTS_KEY
from ._types import Scalar, Strategy, Turn

__all__ = ["check_keywords", "keywords_checked", "canonical_role", "check_bool", "check_chunking", "check_id", "check_ids", "check_k", "check_metadata", "check_strategy", "check_text", "check_timestamp",
           "check_turn"]

#: Lone surrogates: valid in a Python str, but not Unicode text (cannot be encoded,
#: stored or hashed), so they are refused up front.
_SURROGATE = re.compile("[\ud800-\udfff]")
_RESERVED = frozenset({"user_id", "session_id", "role", "timestamp", "seq", "entities", "id", "text", PARTS_KEY})


def _short(value: object, n: int = 60) -> str:
    r = repr(value)
    return r if len(r) <= n else r[: n - 3] + "..."


def check_bool(name: str, value: Any) -> bool:
    """``value`` when it is True or False; InvalidInputError naming it otherwise (a string is not a flag)."""
    if not isinstance(value, bool):
        raise InvalidInputError(f"{name}={value!r} is invalid: must be True or False")
    return value


def check_ids(name: str, value: Any) -> frozenset[str]:
    """A collection of record ids (str), e.g. a set of ``ScoredItem.id``; a lone string is refused (it would be
    read as its characters)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Collection) or \
            not all(isinstance(i, str) for i in value):
        raise InvalidInputError(f"{name}={_short(value)} is invalid: pass a collection of record ids (str), "
                                f"e.g. a set of ScoredItem.id")
    return frozenset(value)


def check_text(name: str, value: Any, limits: StoreLimits) -> str:
    """A non-empty string within ``max_text_chars``."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, got {type(value).__name__}: {_short(value)}")
    if not value.strip():
        raise InvalidInputError(f"{name} must not be empty or whitespace, got {_short(value)}")
    if len(value) > limits.max_text_chars:
        raise InvalidInputError(
            f"{name} is {len(value):,} characters, over the limit of {limits.max_text_chars:,} "
            f"(StoreLimits.max_text_chars): {_short(value)}"
        )
    if "\x00" in value:
        raise InvalidInputError(f"{name} contains a NUL character: {_short(value)}")
    _check_unicode(name, value)
    return value


def _check_unicode(name: str, value: str) -> None:
    bad = _SURROGATE.search(value)
    if bad is not None:
        raise InvalidInputError(
            f"{name} contains a lone surrogate U+{ord(bad.group()):04X} at position {bad.start()}, "
            f"which is not valid Unicode text: {_short(value)}"
        )


def check_id(name: str, value: Any, limits: StoreLimits) -> str:
    """A user/session/pin id: non-empty string, no control characters."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, got {type(value).__name__}: {_short(value)}")
    if not value or not value.strip():
        raise InvalidInputError(f"{name} must not be empty, got {_short(value)}")
    if len(value) > limits.max_id_chars:
        raise InvalidInputError(f"{name} is {len(value)} characters, over max_id_chars={limits.max_id_chars}")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InvalidInputError(f"{name} contains control characters: {_short(value)}")
    if value.startswith("__") and value.endswith("__"):
        raise InvalidInputError(f"{name}={_short(value)} is reserved (dunder ids are internal)")
    _check_unicode(name, value)
    return value


#: Epoch seconds of 0001-01-01 and 9999-12-31T23:59:59 UTC: what a datetime can show.
_TS_MIN, _TS_MAX = -62_135_596_800.0, 253_402_300_799.0


def check_timestamp(value: Any, name: str = "timestamp") -> float | None:
    """None, an epoch number in datetime's range (years 1 to 9999), a datetime, or an ISO 8601 string
    ("2025-01-06T09:00:00Z"; naive = UTC). ``name``: the argument named in the error."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise InvalidInputError(
                f"{name}={_short(value)} is neither epoch seconds, a datetime nor ISO 8601 "
                "(e.g. '2025-01-06T09:00:00Z')"
            ) from None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return value.timestamp()
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        if not _TS_MIN <= value <= _TS_MAX:
            # JavaScript's Date.now() and many APIs give milliseconds (nu49 tried far-off dates)
            hint = ("; it looks like milliseconds: divide by 1000" if _TS_MIN <= value / 1000 <= _TS_MAX else "")
            raise InvalidInputError(
                f"{name}={_short(value)} is out of range: epoch seconds between {_TS_MIN:.0f} (year 1) "
                f"and {_TS_MAX:.0f} (year 9999){hint}"
            )
        return float(value)
    raise InvalidInputError(f"{name} must be a finite number, a datetime or an ISO 8601 string, got {_short(value)}")


def check_metadata(value: Any, limits: StoreLimits) -> Mapping[str, Scalar]:
    """Flat mapping of str keys to scalars; keys may not look like filter operators."""
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"metadata must be a mapping, got {type(value).__name__}")
    if len(value) > limits.max_metadata_keys:
        raise InvalidInputError(f"metadata has {len(value)} keys, over max_metadata_keys={limits.max_metadata_keys}")
    out: dict[str, Scalar] = {}
    for k, v in value.items():
        if not isinstance(k, str) or not k or len(k) > 128:
            raise InvalidInputError(f"metadata key {_short(k)} must be a non-empty str of at most 128 chars")
        if k.startswith("$") or k in _RESERVED or any(ord(c) < 32 for c in k):
            raise InvalidInputError(f"metadata key {k!r} is reserved or looks like a filter operator")
        _check_unicode("metadata key", k)
        if isinstance(v, (bool, int, str)):
            if isinstance(v, str) and len(v) > limits.max_text_chars:
                raise InvalidInputError(f"metadata[{k!r}] is too long ({len(v):,} characters)")
            if isinstance(v, str):
                _check_unicode(f"metadata[{k!r}]", v)
            if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**63 - 1:
                raise InvalidInputError(f"metadata[{k!r}]={v} does not fit in 64 bits")
            out[k] = v
        elif isinstance(v, float) and math.isfinite(v):
            out[k] = v
        else:
            raise InvalidInputError(f"metadata[{k!r}]={_short(v)} must be a str, int, finite float or bool")
    return MappingProxyType(out)


def check_k(value: Any, name: str = "k") -> int | None:
    """None (use the default), or a result count: an int from 1 to 1000.

    Example:
        >>> check_k(5), check_k(None)
        (5, None)
    """
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 1000:
        raise InvalidInputError(f"{name}={value!r} is invalid: must be an int from 1 to 1000")
    return value


def check_chunking(max_words: Any, overlap_words: Any) -> None:
    """``add_documents``' chunk sizes: ``max_words`` an int of at least 1, ``overlap_words`` one of at least 0
    and under ``max_words``.

    Example:
        >>> check_chunking(160, 30)
    """
    for name, value, low in (("max_words", max_words, 1), ("overlap_words", overlap_words, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise InvalidInputError(f"{name}={value!r} is invalid: must be an int of at least {low}")
    if overlap_words >= max_words:
        raise InvalidInputError(f"overlap_words={overlap_words!r} is invalid: must be less than "
                                f"max_words={max_words!r} (a chunk repeats at most that many words of the one before)")


def check_strategy(value: Any) -> Strategy | None:
    """None (use the default), or a :class:`Strategy` (or its value), else InvalidInputError."""
    if value is None or isinstance(value, Strategy):
        return value
    try:
        return Strategy(value)
    except ValueError:
        known = ", ".join(s.value for s in Strategy)
        raise InvalidInputError(f"strategy={_short(value)} is unknown; use one of: {known}") from None


def _content_as_text(value: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A copy of a turn's or document's fields with ``content`` read as ``text`` (never both)."""
    fields = dict(value)
    if "content" in fields:
        if "text" in fields:
            raise InvalidInputError(f"{where} has both 'text' and 'content': give one ('content' is an alias of 'text')")
        fields["text"] = fields.pop("content")
    return fields


_TURN_FIELDS = tuple(f.name for f in dataclasses.fields(Turn))
_TURN_REQUIRED = ("text", "user_id", "session_id")


def check_turn(value: Any, limits: StoreLimits) -> Turn:
    """A :class:`Turn`, or a mapping of its fields (``content`` is accepted for ``text``), validated.

    Example:
        >>> check_turn({"content": "hi", "user_id": "u1", "session_id": "s1"}, StoreLimits()).text
        'hi'
    """
    if isinstance(value, Mapping):
        fields = _content_as_text(value, "turn")
        unknown = [k for k in fields if k not in _TURN_FIELDS]
        if unknown:
            raise InvalidInputError(
                f"turn has unknown field(s) {', '.join(_short(k) for k in unknown)}; "
                f"known: {', '.join(_TURN_FIELDS)} (and 'content' for 'text')"
            )
        missing = [k for k in _TURN_REQUIRED if k not in fields]
        if missing:
            raise InvalidInputError(f"turn is missing {', '.join(map(repr, missing))} (required: {', '.join(_TURN_REQUIRED)})")
        value = Turn(**fields)
    if not isinstance(value, Turn):
        raise InvalidInputError(f"turn must be a Turn or a mapping, got {type(value).__name__}: {_short(value)}")
    check_text("text", value.text, limits)
    check_id("user_id", value.user_id, limits)
    check_id("session_id", value.session_id, limits)
    check_id("role", value.role, limits)
    role = canonical_role(value.role)
    _check_role_spelling(role)
    ts = check_timestamp(value.timestamp)
    md = check_metadata(value.metadata, limits)
    return dataclasses.replace(value, role=role, timestamp=ts, metadata=md)


#: Spellings of the two chat roles that frameworks and people use, by their case-folded form: the ranking treats
#: "assistant" turns as the chatbot's replies, so "Assistant " or "ai" stored as such would lose those rules.
_ROLE_ALIASES = {"assistant": "assistant", "ai": "assistant", "bot": "assistant", "model": "assistant",
                 "user": "user", "human": "user"}


def canonical_role(role: str) -> str:
    """``role`` with a chat role's other spellings made canonical ("Assistant ", "ai", "bot", "model" ->
    "assistant"; "User", "human" -> "user"); any other role (a speaker's name in a transcript) is kept as given,
    stripped.

    Example:
        >>> canonical_role("Assistant "), canonical_role("human"), canonical_role("Caroline")
        ('assistant', 'user', 'Caroline')
    """
    stripped = role.strip()
    return _ROLE_ALIASES.get(stripped.casefold(), stripped)


#: The chat roles a misspelling is checked against, with the edits allowed: one for the short ones ("usr", "uesr"),
#: two for "assistant" ("assitant", "asisstant"); a speaker's name is rarely that close to one.
_ROLE_NEAR = (("assistant", 2), ("user", 1), ("system", 1))


def _edits(a: str, b: str, cap: int) -> int:
    """Optimal-string-alignment distance of ``a`` and ``b`` (a swap of neighbours is one edit), or ``cap + 1``
    when it is over ``cap``."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return min(prev[-1], cap + 1)


def _check_role_spelling(role: str) -> None:
    """Refuse a role one or two edits from a chat role ("assitant"): stored as given it would be a new speaker, and
    the bot's replies under it would lose the rules for the assistant's turns."""
    folded = role.casefold()
    for known, cap in _ROLE_NEAR:
        if folded != known and _edits(folded, known, cap) <= cap:
            raise InvalidInputError(
                f"role {role!r} looks like a misspelt {known!r}: pass role={known!r} (a speaker's name is kept as "
                f"given, but this one is too close to a chat role to be taken as one)")


_DOCUMENT_FIELDS = ("text", "id", "title", "metadata")


def check_document_fields(doc: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A document mapping's fields, ``content`` read as ``text`` (as :func:`check_turn` does); unknown fields
    refused, so a misspelt key is not silently dropped. The values are checked by the caller.

    Example:
        >>> check_document_fields({"content": "Opening hours: 9-5"}, "documents[0]")["text"]
        'Opening hours: 9-5'
    """
    fields = _content_as_text(doc, where)
    unknown = [k for k in fields if k not in _DOCUMENT_FIELDS]
    if unknown:
        raise InvalidInputError(f"{where} has unknown field(s) {', '.join(_short(k) for k in unknown)}; known: "
                                f"{', '.join(_DOCUMENT_FIELDS)} (and 'content' for 'text'); put anything else in "
                                "'metadata'")
    return fields


def framework_document(value: Any) -> str | None:
    """``"LlamaIndex"`` or ``"LangChain"`` when ``value`` is a document (or node) of that framework, by its class's
    module or, for a look-alike, its attributes; None otherwise. Nothing is imported.

    Example:
        >>> framework_document({"text": "Opening hours: 9-5"}) is None
        True
    """
    root = type(value).__module__.partition(".")[0]
    if root == "llama_index" or (hasattr(value, "get_content") and hasattr(value, "node_id")):
        return "LlamaIndex"
    if root.startswith("langchain") or hasattr(value, "page_content"):
        return "LangChain"
    return None


_FRAMEWORK_HINTS = {
    "LlamaIndex": "convert LlamaIndex documents and nodes with "
                  "chatrecall.adapters.llamaindex.nodes_to_documents(docs)",
    "LangChain": 'pass a LangChain Document as {"text": doc.page_content, "metadata": doc.metadata}',
}


def document_item_error(value: Any, where: str) -> InvalidInputError:
    """The error for an ``add_documents`` item that is neither a str nor a mapping: what is accepted, and how to pass
    a LlamaIndex or LangChain document (the one ``value`` is, when it is one).

    Example:
        >>> str(document_item_error(42, "documents[0]"))[:80]
        "documents[0] must be a str, or a mapping with 'text' (or 'content') and optional"
    """
    kind = framework_document(value)
    hint = (f"it is a {kind} document: {_FRAMEWORK_HINTS[kind]}" if kind is not None
            else f"{_FRAMEWORK_HINTS['LlamaIndex']}; {_FRAMEWORK_HINTS['LangChain']}")
    return InvalidInputError(
        f"{where} must be a str, or a mapping with 'text' (or 'content') and optional 'id', 'title' and 'metadata' "
        f"(a flat mapping of str keys to str, int, float or bool), got {type(value).__name__}: {_short(value)}; "
        f"{hint}")


# ----------------------------------------------------------------- keyword names
_P = ParamSpec("_P")
_R = TypeVar("_R")


#: Names other libraries give an argument of ours, which the closest spelling does not find ("topk" is nearer
#: "top" words than "k"): a refused one points to ours when the call takes it (helper-119: retrieve(topk=3)).
_ARGUMENT_ALIASES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("topk", "top_k", "top_n", "n", "limit", "max_results", "num_results", "n_results"), ("k",)),
    **dict.fromkeys(("query", "text", "message", "prompt", "input"), ("message", "query", "text")),
    **dict.fromkeys(("session", "conversation_id", "thread_id", "chat_id"), ("session_id",)),
    **dict.fromkeys(("user", "uid", "userid"), ("user_id",)),
}


def closest_name(name: str, accepted: Collection[str], cutoff: float = 0.5) -> str | None:
    """The accepted name ``name`` most likely stands for: the one our alias table gives (``userid`` ->
    ``user_id``), else the closest spelling (:func:`difflib.get_close_matches` at ``cutoff``); None when none is
    near. Used for misspelt keyword arguments and misspelt keys of a run's context."""
    alias = [a for a in _ARGUMENT_ALIASES.get(name.lower(), ()) if a in accepted and a != name][:1]
    hint = alias or get_close_matches(name, sorted(accepted), n=1, cutoff=cutoff)
    return hint[0] if hint else None


def check_keywords(owner: str, given: Iterable[str], accepted: Collection[str]) -> None:
    """Refuse a keyword argument ``owner`` does not take, naming it and the closest one it takes.

    Raises:
        InvalidArgumentError: ``retrieve(..., user="u")``: "'user' is not an argument of ChatRecall.retrieve()
            (did you mean 'user_id'?)".
    """
    for name in given:
        if name not in accepted:
            hint = closest_name(name, accepted)
            also = f" (did you mean {hint!r}?)" if hint else ""
            raise InvalidArgumentError(f"{name!r} is not an argument of {owner}{also}; it takes "
                                       f"{', '.join(sorted(accepted))}")


def keywords_checked(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorate a public function or method so that a misspelt keyword argument or a missing required one raises
    :class:`InvalidArgumentError` (naming it, and the closest accepted name) instead of a bare ``TypeError``.

    Costs one pass over the keyword arguments a call gives and its required arguments; a function taking
    ``**kwargs`` is returned as is.
    """
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return fn
    accepted = frozenset(n for n, p in params.items()
                         if n != "self" and p.kind in (inspect.Parameter.KEYWORD_ONLY,
                                                       inspect.Parameter.POSITIONAL_OR_KEYWORD))
    owner = f"{fn.__qualname__.replace('.__init__', '')}()"
    # (position a call may give it by, name) of each argument without a default; keyword-only: no position
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = tuple((i if p.kind in positional else len(params), n) for i, (n, p) in enumerate(params.items())
                     if p.default is p.empty and p.kind in (*positional, inspect.Parameter.KEYWORD_ONLY))

    bound = next(iter(params), None) == "self"

    def named(args: tuple[Any, ...]) -> str:
        """The owner as the caller knows it: a method by its instance's class (``ChatRecall.aadd()``, not the
        private mixin that defines it, ``_AsyncMixin.aadd()``: nu46)."""
        if not bound or not args:
            return owner
        cls = type(args[0]).__name__
        return f"{cls}()" if fn.__name__ == "__init__" else f"{cls}.{fn.__name__}()"

    def check(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if kwargs and not accepted.issuperset(kwargs):
            check_keywords(named(args), kwargs, accepted)
        for i, name in required:
            if i >= len(args) and name not in kwargs:
                raise InvalidArgumentError(f"{named(args)} is missing the argument {name!r}; pass {name}=...")

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def checked_async(*args: Any, **kwargs: Any) -> Any:
            check(args, kwargs)
            return await fn(*args, **kwargs)  # type: ignore[misc]

        return cast(Callable[_P, _R], checked_async)

    @functools.wraps(fn)
    def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        check(args, kwargs)
        return fn(*args, **kwargs)

    return checked
