"""Token counting: an offline default and a way to plug in any tokenizer."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

from ._errors import ConfigError
from ._protocols import TokenCounter

__all__ = ["ApproxTokenCounter", "CallableTokenCounter", "as_token_counter", "truncate_to_tokens"]

# Words, numbers and single punctuation marks; long words cost one token per ~4 chars,
# which tracks cl100k_base within ~10% on English chat text and needs no download.
_PIECE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class ApproxTokenCounter:
    """Offline default: counts BPE-like pieces without any vocabulary file.

    Example:
        >>> ApproxTokenCounter().count("hello world")
        2
    """

    def __init__(self, chars_per_token: int = 4) -> None:
        if not isinstance(chars_per_token, int) or chars_per_token < 1:
            raise ConfigError(f"chars_per_token={chars_per_token!r} is invalid: must be an int >= 1")
        self._cpt = chars_per_token

    def count(self, text: str) -> int:
        cpt = self._cpt
        n = 0
        for piece in _PIECE.findall(text):
            n += 1 if len(piece) <= cpt + 2 else -(-len(piece) // cpt)
        return n


class CallableTokenCounter:
    """Wraps ``fn(text) -> int`` or an encoder with ``.encode(text) -> list``."""

    def __init__(self, fn: Callable[[str], Any]) -> None:
        self._fn = fn

    def count(self, text: str) -> int:
        out = self._fn(text)
        return len(out) if not isinstance(out, int) else out


_PROBE = "How many tokens does this sentence have?"


def as_token_counter(obj: Any) -> TokenCounter:
    """Turn ``obj`` into a :class:`TokenCounter`.

    Accepts ``None`` (the offline default), a tiktoken encoding or OpenAI model
    name (``"cl100k_base"``, ``"gpt-4"``: counted offline with
    :class:`chatrecall.adapters.tiktoken.TiktokenCounter`), an object with
    ``count(text)``, a tiktoken ``Encoding`` or Hugging Face tokenizer (anything
    with ``encode(text)``), or any callable returning an int or a token list.
    The result is tried once on a sample sentence, so a counter that fails or
    counts nothing is refused here rather than ignoring the budget later.

    Example:
        >>> as_token_counter(None).count("hello world")
        2
        >>> as_token_counter(lambda text: len(text.split())).count("hello big world")
        3

    Raises:
        ConfigError: ``obj`` is none of these, or fails on the sample sentence.
    """
    if obj is None:
        return ApproxTokenCounter()
    if isinstance(obj, (str, bytes)):
        counter: TokenCounter = _named_counter(obj)
    elif isinstance(obj, TokenCounter):
        counter = obj
    elif callable(getattr(obj, "encode", None)):
        counter = CallableTokenCounter(obj.encode)
    elif callable(obj):
        counter = CallableTokenCounter(obj)
    else:
        raise ConfigError(
            f"token_counter={_short(obj)} is invalid: pass a tiktoken encoding or model name ('cl100k_base', "
            "'gpt-4'), an object with count(text) or encode(text), a callable text -> int, or None (offline default)"
        )
    _probe(obj, counter)
    return counter


def _short(value: object, n: int = 80) -> str:
    r = repr(value)
    return r if len(r) <= n else r[: n - 3] + "..."


def _named_counter(name: str | bytes) -> TokenCounter:
    """A tiktoken encoding (``cl100k_base``) or model name (``gpt-4``), counted offline."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"token_counter={name!r} is invalid: give a tiktoken encoding or model name such as 'gpt-4'")
    try:
        tiktoken = importlib.import_module("tiktoken")
        adapter = importlib.import_module("chatrecall.adapters.tiktoken")
    except ImportError:
        raise ConfigError(
            f"token_counter={name!r} needs tiktoken: pip install 'chatrecall[tiktoken]' (from a clone of the "
            "repository: pip install -e '.[tiktoken]'), "
            "or leave token_counter unset for the offline approximation"
        ) from None
    known = set(tiktoken.list_encoding_names())
    encoding = name
    if name not in known:
        try:
            encoding = tiktoken.encoding_name_for_model(name)
        except KeyError:
            examples = sorted(n for n in known if not n.endswith("_offline"))
            raise ConfigError(
                f"token_counter={name!r} is neither a tiktoken encoding ({', '.join(examples)}) nor a model name "
                "tiktoken knows (gpt-4, gpt-4o, ...); pass one of those, a tokenizer, or a callable text -> int"
            ) from None
    try:
        return adapter.TiktokenCounter(encoding)  # type: ignore[no-any-return]
    except ConfigError as exc:
        via = f" (model {name!r} uses encoding {encoding!r})" if encoding != name else ""
        raise ConfigError(
            f"token_counter={name!r}{via} cannot be counted offline: {exc}. Use token_counter='cl100k_base' "
            f"(bundled) or TiktokenCounter({encoding!r}, allow_download=True)"
        ) from None


def _probe(obj: Any, counter: TokenCounter) -> None:
    """Count a sample sentence once: the counter must work and return a positive int."""
    try:
        n = counter.count(_PROBE)
    except Exception as exc:  # noqa: BLE001 - any failure of user code means a bad counter
        raise ConfigError(
            f"token_counter={_short(obj)} failed on a sample sentence: {type(exc).__name__}: {exc}"
        ) from exc
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ConfigError(
            f"token_counter={_short(obj)} counted {_short(n)} tokens in {_PROBE!r}: a counter must return "
            "a positive int (or a token list) for non-empty text, or every budget would be ignored"
        )


def truncate_to_tokens(text: str, max_tokens: int, counter: TokenCounter) -> tuple[str, bool]:
    """Cut ``text`` so it counts at most ``max_tokens``; returns (text, truncated)."""
    if counter.count(text) <= max_tokens:
        return text, False
    lo, hi = 0, len(text)
    # Binary search on characters keeps this O(log n) counter calls for any tokenizer.
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(text[:mid]) + 1 <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + "…", True
