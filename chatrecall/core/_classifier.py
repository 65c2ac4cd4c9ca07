"""Query classifier: which memory strategy suits a message (no LLM)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from ._entities import _word_file
from ._index import tokenize
from ._tuned import AUTO_STRATEGY
from ._types import Entity, QueryType, Strategy

__all__ = ["STRATEGY_FOR", "TimeCue", "asks_advice", "asked_for", "classify_query", "drop_negated", "names_own",
           "other_than", "ruled_out", "time_cue"]

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
#: A possessive that speaks of the user's own things ("my guest", "our hotel"; a bare "I" does not).
_POSSESSIVE = re.compile(r"\b(?:my|mine|our|ours)\b", re.I)
_SPECIFIC_KINDS = frozenset({"identifier", "path", "error", "quoted"})

#: The strategy the classifier picks for each query type (from ``_tuned.AUTO_STRATEGY``).
STRATEGY_FOR = {QueryType(t): Strategy(s) for t, s in AUTO_STRATEGY.items()}


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


# ----------------------------------------------------------------- time cues
_WHEN = re.compile(
    r"^\s*(?:when\b|what (?:time|date|day|year|month)\b|which (?:day|date|year|month|week)\b|"
    r"how long ago\b|since when\b)|\bwhen did\b|\bon what (?:date|day)\b",
    re.I,
)
#: "How many days between...", "how long ago...": the answer is computed from dates, so turns that carry one help.
_HOW_LONG = re.compile(
    r"\bhow (?:many|much) (?:days|weeks|months|years|time)\b|\bhow long (?:ago|since|before|after|had|have|did|was|"
    r"were|has)\b|\bin what order\b|\bwhich (?:\w+ ){0,3}(?:first|earlier|later|last)\b",
    re.I,
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_LAST_WEEKDAY = re.compile(r"\b(?:last|this past|past|on)\s+(" + "|".join(_WEEKDAYS) + r")\b", re.I)
#: The query asks about an error ("what was that error again?"): turns that show one are likelier answers.
_ASKS_ERROR = re.compile(r"\b(?:error|exception|traceback|stack ?trace|crash(?:ed)?|failure)\b", re.I)
_UNIT_S = {"day": 86400.0, "week": 7 * 86400.0, "weekend": 7 * 86400.0, "month": 30.44 * 86400.0,
           "year": 365.25 * 86400.0}
_NUMBER = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "few": 3, "couple": 2,
           "a few": 3, "a couple": 2, "a couple of": 2, "couple of": 2, "several": 4}
_AGO = re.compile(r"^(\d+|[a-z]+(?: [a-z]+)*?)\s+(day|week|month|year)s?\s+ago$")
_RELATIVE = {
    "today": (0, "day"), "tonight": (0, "day"), "yesterday": (1, "day"),
    "last week": (1, "week"), "last weekend": (1, "week"), "last month": (1, "month"), "last year": (1, "year"),
    "this week": (0, "week"), "this weekend": (0, "week"), "this month": (0, "month"), "this year": (0, "year"),
}
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_ISO = re.compile(r"^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?$")


@dataclass(frozen=True, slots=True)
class TimeCue:
    """What a query says about time.

    Attributes:
        asks_when: The query asks for a time ("When did...", "What year...",
            "How many days between..."); memories that mention a time are
            likelier answers.
        window: ``(start, end)`` POSIX seconds of the period the query names
            ("two weeks ago", "in March", "8 May 2023", "last Saturday"), or None.
        asks_error: The query asks about an error; memories that show one
            (an exception name, an error code) are likelier answers.
    """

    asks_when: bool = False
    window: tuple[float, float] | None = None
    asks_error: bool = False

    def __bool__(self) -> bool:
        return self.asks_when or self.window is not None or self.asks_error


def _month_window(year: int, month: int) -> tuple[float, float]:
    start = datetime(year, month, 1, tzinfo=timezone.utc).timestamp()
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=timezone.utc).timestamp()
    return start, end


def _window(key: str, now: float) -> tuple[float, float] | None:
    """The period a date entity key names, relative to ``now`` (None if it names none)."""
    if key in _RELATIVE:
        n, unit = _RELATIVE[key]
        span = _UNIT_S[unit]
        centre = now - n * span
        return centre - span, centre + (0.0 if n == 0 else span / 2)
    m = _AGO.match(key)
    if m:
        word = m.group(1)
        count = int(word) if word.isdigit() else _NUMBER.get(word)
        if count is None:
            return None
        span = _UNIT_S[m.group(2)]
        centre = now - count * span
        return centre - span / 2, centre + span / 2
    if key in _MONTHS:  # the last such month before now
        today = datetime.fromtimestamp(now, timezone.utc)
        month = _MONTHS.index(key) + 1
        return _month_window(today.year if month <= today.month else today.year - 1, month)
    m = _ISO.match(key)
    if m:
        year, mon, day = int(m.group(1)), m.group(2), m.group(3)
        try:
            if mon and day:
                start = datetime(year, int(mon), int(day), tzinfo=timezone.utc).timestamp()
                return start, start + 86400.0
            if mon:
                return _month_window(year, int(mon))
            return (datetime(year, 1, 1, tzinfo=timezone.utc).timestamp(),
                    datetime(year + 1, 1, 1, tzinfo=timezone.utc).timestamp())
        except ValueError:
            return None
    return None


def _weekday_window(name: str, now: float) -> tuple[float, float]:
    """The last ``name`` day strictly before ``now``'s day, widened by a day each side (dates drift)."""
    today = datetime.fromtimestamp(now, timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    back = (today.weekday() - _WEEKDAYS.index(name.casefold())) % 7 or 7
    start = today.timestamp() - back * 86400.0
    return start - 86400.0, start + 2 * 86400.0


def time_cue(message: str, entities: Sequence[Entity], now: float, *, extended: bool = True) -> TimeCue:
    """Read the time cues of a query: does it ask *when*, does it name a period.

    Example:
        >>> from chatrecall.core._types import Entity
        >>> cue = time_cue("What did I do two weeks ago?", [Entity("two weeks ago", "date", "two weeks ago")], 1e9)
        >>> round((cue.window[1] - cue.window[0]) / 86400)
        7

    Args:
        message: The query.
        entities: Its entities (date entities name periods).
        now: The reference time ("two weeks ago" of when).
        extended: Also read "how many days between", "last Saturday" and
            error questions (False: the pre-2025 cues only, for comparisons).
    """
    window = None
    for e in entities:
        if e.kind == "date":
            window = _window(e.key, now)
            if window is not None:
                break
    asks_when = bool(_WHEN.search(message))
    asks_error = False
    if extended:
        asks_when = asks_when or bool(_HOW_LONG.search(message))
        if window is None and (m := _LAST_WEEKDAY.search(message)):
            window = _weekday_window(m.group(1), now)
        asks_error = bool(_ASKS_ERROR.search(message))
    return TimeCue(asks_when=asks_when, window=window, asks_error=asks_error)


# ----------------------------------------------------------------- advice
#: The message asks for advice, rules or what is allowed: what the user said is part of the answer, a document
#: the rest ("my flight was 4 hours late, what am I owed?", "can I sell my sourdough under the cottage-food
#: rules?", "is it safe to give him ibuprofen?"). Written from the new-user chats' misses.
_ADVICE = re.compile(
    r"\bis (?:it|that|this|he|she|they) (?:safe|ok|okay|dangerous|legal|allowed|normal|bad|fine|worth)\b|"
    r"\b(?:am i|are we|is (?:he|she)) (?:allowed|owed|entitled|supposed|required|eligible)\b|"
    r"\b(?:can|could|may) (?:i|we) (?:legally )?(?:sell|take|bring|claim|use|get|give|put|keep|leave|park|fly|"
    r"drive|travel|eat|drink|mix|combine|run|install|remove|rent|sublet|return|refund|cancel|deduct)\b|"
    r"\bshould (?:i|we)\b|\bdo (?:i|we) (?:need|have) to\b|\bdo (?:i|we) need (?:a|an|to)\b|"
    r"\bwhat (?:[\w-]+ )?(?:rules?|regulations?|requirements?|laws?|documents?|paperwork) (?:apply|do|does|are|is|"
    r"should)\b|\bwhich [\w-]+(?: [\w-]+)? (?:can|should|may) (?:i|we|go|be)\b|"
    r"\bwhat am i (?:owed|entitled to)\b|\bwhat (?:applies|is allowed)\b|"
    r"\bhow (?:much|long|often|many) should\b|\bunder the [\w\s-]{1,30}(?:rules?|laws?|regulations?)\b|"
    # stop 27, from a new-user chat ("how long does he legally have to fix it?") and forms like it
    r"\blegally\b|\bby law\b|\bwhat are (?:my|our) rights\b|\bhow much notice\b|"
    r"\bhow (?:long|many days|much time) (?:does|do) (?:he|she|they|my [\w-]+|our [\w-]+|the [\w-]+) "
    r"(?:have|get|need) to\b|"
    r"\b(?:is|are) (?:my|our|the) [\w-]+ (?:allowed|entitled|required|obliged|supposed) to\b|"
    r"\b(?:does|do) (?:my|our|the) [\w-]+ have to (?:pay|give|refund|return|fix|repair|cover|let|tell)\b|"
    r"\b(?:can|could|may) (?:they|he|she|my [\w-]+|our [\w-]+|the [\w-]+) (?:legally )?(?:keep|charge|evict|fire|"
    r"refuse|withhold|deduct|raise|increase|cancel|enter|sue|bill|fine|tow|ban)\b|"
    r"\bwhat happens if (?:i|we) (?:miss|don't|do not|fail|forget|cancel|break|quit|exceed|go over)\b|"
    # stop 28, from a new-user chat ("what jars do I need for my show entry?"): what an event or a rule requires
    r"\bwhat [\w-]+(?: [\w-]+)? (?:do|does) (?:i|we|my [\w-]+|our [\w-]+) need (?:for|to (?:bring|submit|file|fill|show))\b|"
    # stop 41 (C58), from a new-user chat ("if it's still raining this afternoon, can I still do my long ride?"):
    # whether the user's own plan still holds, which a rule or a plan's small print decides
    r"\b(?:can|could) (?:i|we) still (?!remember\b|recall\b)[a-z]|"
    r"^\s*if\b[^?,]{3,80},\s*(?:can|could|should|will|would|do) (?:i|we)\b",
    re.I,
)


def asks_advice(message: str) -> bool:
    """Whether ``message`` asks for advice, rules or what is allowed ("what am I owed?", "should I...")."""
    return _ADVICE.search(message.replace("\u2019", "'")) is not None


# ----------------------------------------------------------------- corrections
#: The part a correction rules out: "no, I meant the kitchen, not the bathroom", "the prod incident instead of
#: staging", "not staging, prod". Only a "not" that opens a clause (after a comma, "but", "and" or at the start) and
#: runs to the clause's end, so "no, I meant it's not working" keeps its "not".
_NEGATED = re.compile(
    r"(?:^|(?<=[,;:])|\b(?:but|and)\b)\s*(?:not|rather than|instead of)\s+"
    r"(?:the |a |an |my |our |that |this )?[\w'’-]+(?:\s+[\w'’-]+){0,3}\s*(?=[,.;:!?]|$)"
    r"|\b(?:rather than|instead of)\s+(?:the |a |an |my |our |that |this )?[\w'’-]+(?:\s+[\w'’-]+){0,3}"
    r"\s*(?=[,.;:!?]|$)",
    re.I,
)


def drop_negated(message: str) -> str:
    """``message`` without the part a correction rules out, for searching: "no, I meant the prod incident, not
    staging" searches for the prod incident, not for staging. The message itself when nothing is ruled out or
    nothing would be left.

    Example:
        >>> drop_negated("no, I meant the kitchen, not the bathroom")
        'no, I meant the kitchen,'
    """
    out = _NEGATED.sub("", message).strip()
    return out if out and out != message.strip() and any(ch.isalnum() for ch in out) else message


#: Correction words that name nothing (data/correction_filler_words.txt), as index terms.
_FILLER = frozenset(t for w in _word_file("correction_filler_words.txt") for t in tokenize(w))


def ruled_out(message: str) -> tuple[frozenset[str], frozenset[str]]:
    """The index terms a correction rules out and the ones it asks for: "no, I meant the other one, Kirkstall, not
    Hartley's" -> ({"hartley"}, {"kirkstall"}). Both empty when nothing is ruled out.

    Example:
        >>> ruled_out("no, I meant the kitchen, not the bathroom")
        (frozenset({'bathroom'}), frozenset({'kitchen'}))
    """
    # "not that card, the other one" points back at what it got ("card" is the kind of thing, not ruled out)
    parts = [m.group(0) for m in _NEGATED.finditer(message) if _NOT_THAT_KIND.fullmatch(m.group(0)) is None]
    ruled = frozenset(t for p in parts for t in tokenize(p)) - _FILLER
    if not ruled:
        return frozenset(), frozenset()
    return ruled, asked_for(drop_negated(message), ruled)


#: "the other client", "the other one", "another one": a correction that asks for something other than what the
#: question it corrects named.
_OTHER = re.compile(r"\bthe\s+other\b|\banother\s+one\b", re.I)
#: A correction that rejects what it was given without naming it: "not that one", "wrong one", "the wrong policy".
_NOT_THAT = re.compile(r"\bnot\s+(?:that|this)(?:\s+one\b|\s*[,.;!-]|\s*$)|\bwrong\s+one\b|\bthe\s+wrong\s+\w+|"
                       r"(?:^|(?<=[,;:]))\W*(?:no\W+)?not\s+(?:that|this)\s+[\w'’-]+\s*(?=[,.;:!?-]|$)", re.I)
#: A ruled-out part that only points back at what was given: "not that card", "not this one" (one word after it).
_NOT_THAT_KIND = re.compile(r"\W*(?:but\s+|and\s+)?\s*not\s+(?:that|this)\s+[\w'’-]+\s*", re.I)
#: A word that points back at what the conversation just named: "that one", "it", "they", "there", "her" (a follow-up
#: "and what's the venue for that one?"; ``refers_back``).
_REFERS_BACK = re.compile(r"\b(?:that|this|those|these)\s+ones?\b|\bthe\s+one\b|"
                          r"\b(?:it|its|they|them|their|there|he|him|his|she|her)\b|\b(?:that|this)\W*$", re.I)
#: A capitalised word that does not open a sentence: a name ("Kestrel", "Anna's", "Lyon").
_NAME = re.compile(r"(?<![.!?:]\s)(?<!^)(?<![.!?:])\b[A-Z][\w'’-]*")


def other_than(message: str, before: str) -> frozenset[str]:
    """The index terms of the names a correction asking for "the other ..." rules out: those of ``before``, the
    question it corrects, that the correction does not name itself ("no, I meant the other client" after "what's
    the Kestrel deadline again?" -> {"kestrel"}; helper-122, stop 41). Empty when the correction says "not X"
    (:func:`ruled_out` has it) or asks for no "other".

    Example:
        >>> sorted(other_than("no, I meant the other client", "what's the Kestrel deadline again?"))
        ['kestrel']
    """
    if not _OTHER.search(message) or ruled_out(message)[0]:
        return frozenset()
    return frozenset(t for n in names_in(before) for t in tokenize(n)) - frozenset(tokenize(message)) - _FILLER


def refers_back(message: str) -> bool:
    """Whether ``message`` points back at something with a pronoun or "that one": "and what's the venue for that
    one?", "where are they staying?" (not "ok and when's my dentist?").

    Example:
        >>> refers_back("and what's the venue for that one?"), refers_back("ok and when's my dentist?")
        (True, False)
    """
    return _REFERS_BACK.search(message.replace("\u2019", "'")) is not None


def names_in(text: str) -> list[str]:
    """The names ``text`` holds: capitalised words that do not open a sentence ("Okafor" in "when is the Okafor
    wedding?"), in order, each once, without a possessive "'s".

    Example:
        >>> names_in("when is the Okafor wedding? And Tom's party?")
        ['Okafor', 'Tom']
    """
    out: list[str] = []
    for m in _NAME.finditer(text.replace("\u2019", "'")):
        name = m.group(0)
        name = name[:-2] if name.endswith("'s") else name.rstrip("'")
        if name != "I" and name not in out:
            out.append(name)
    return out


def asks_other(message: str) -> bool:
    """Whether a correction asks for another one than it got without saying what it rules out: "no, I meant the
    other market, the Sunday one", "no not that one, the Saturday class", "wrong one, I meant the kids' pool" (not
    "the other one, Kirkstall, not Hartley's", which names it)."""
    return (_OTHER.search(message) is not None or _NOT_THAT.search(message) is not None) \
        and not ruled_out(message)[0]


def asked_for(message: str, ruled: frozenset[str]) -> frozenset[str]:
    """The index terms a correction asks for, beside those it rules out: its own words minus filler."""
    return frozenset(tokenize(message)) - _FILLER - ruled


def names_own(text: str) -> bool:
    """Whether ``text`` (a personal pattern's match) speaks of the user's own things with a possessive: "my guest",
    "our hotel"; "how do I say" does not."""
    return _POSSESSIVE.search(text) is not None
