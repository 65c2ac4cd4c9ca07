"""The :class:`GatePattern` type and the route targets a pattern can push toward."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ._errors import ConfigError

__all__ = ["CORRECTION", "GatePattern", "TARGET_CORPUS", "TARGET_MEMORY", "TARGET_NONE"]

TARGET_MEMORY = "memory"
TARGET_CORPUS = "corpus"
TARGET_NONE = "none"
_TARGETS = (TARGET_MEMORY, TARGET_CORPUS, TARGET_NONE)

#: Category whose patterns mark a message as a correction of an earlier answer;
#: a correction always routes to memory and sets ``GateDecision.correction``.
CORRECTION = "correction"


@dataclass(frozen=True, kw_only=True)
class GatePattern:
    """One weighted trigger pattern.

    The regex is matched case-insensitively against the message, with curly
    apostrophes replaced by ``'``. Start it with ``\\b`` (or ``^``) and a literal
    word so the gate can index it by that word; other patterns still work but
    are tried on every message.

    Example:
        >>> p = GatePattern(category="explicit", regex=r"\\bsprint review\\b", weight=1.0, target="memory")
        >>> p.target
        'memory'

    Attributes:
        category: Free-form group name (``explicit``, ``continuity``, ...);
            :data:`CORRECTION` is special, see there.
        regex: Python regular expression.
        weight: Signed weight; positive pushes toward ``target``.
        target: ``memory``, ``corpus`` or ``none``.
        name: Short name shown in reasons (``personal.my_thing``); defaults
            to the category.
        fallback: Tried only when no other pattern fired: a last reading of
            a message nothing else recognised (a bare topic such as "tipping
            etiquette in japan", a fragment such as "gate code for mom's
            building"). Fallbacks are searched, not indexed, which is cheap
            because they run only on the messages nothing else matched.
        unless_before: A regex; the match does not count when this regex is
            found earlier in the message. A pronoun whose antecedent is in
            the same message ("how long should you rest a steak after
            grilling it") refers to nothing earlier in the conversation.
    """

    category: str
    regex: str
    weight: float
    target: str
    name: str = ""
    fallback: bool = False
    unless_before: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.category, str) or not self.category.strip():
            raise ConfigError(f"GatePattern.category={self.category!r} is invalid: must be a non-empty str")
        if not isinstance(self.regex, str) or not self.regex:
            raise ConfigError(f"GatePattern.regex={self.regex!r} is invalid: must be a non-empty str")
        try:
            compiled = re.compile(self.regex, re.IGNORECASE)
        except re.error as exc:
            raise ConfigError(f"GatePattern.regex={self.regex!r} is invalid: {exc}") from exc
        if compiled.match("") is not None:
            raise ConfigError(f"GatePattern.regex={self.regex!r} is invalid: it matches the empty string")
        if (not isinstance(self.weight, (int, float)) or isinstance(self.weight, bool)
                or not math.isfinite(self.weight)):
            raise ConfigError(f"GatePattern.weight={self.weight!r} is invalid: must be a finite number")
        if not isinstance(self.fallback, bool):
            raise ConfigError(f"GatePattern.fallback={self.fallback!r} is invalid: must be True or False")
        if not isinstance(self.unless_before, str):
            raise ConfigError(f"GatePattern.unless_before={self.unless_before!r} is invalid: must be a str (a regex)")
        if self.unless_before:
            try:
                re.compile(self.unless_before, re.IGNORECASE)
            except re.error as exc:
                raise ConfigError(f"GatePattern.unless_before={self.unless_before!r} is invalid: {exc}") from exc
        if not isinstance(self.name, str):
            raise ConfigError(f"GatePattern.name={self.name!r} is invalid: must be a str")
        if not self.name:
            object.__setattr__(self, "name", self.category)
        if self.target not in _TARGETS:
            raise ConfigError(f"GatePattern.target={self.target!r} is invalid: must be one of {list(_TARGETS)}")

