"""Which words can a regex match begin with: the index that makes the gate fast.

The gate merges every pattern that can start at a given word into one regex,
so a message costs one ``match`` call per word. This module derives those
first words by walking the regex parser's output (``re._parser``, private but
stable across CPython 3.11-3.13); where the analysis fails a pattern is simply
searched on every message, so indexing never changes what matches.

The same walk, started inside the regex wherever a word must begin, gives the
words a match requires (:func:`required_words`): the gate skips a pattern when
the message holds none of the words of one of its sets. The matches that begin
with a given word may require more (:func:`required_by_first_word`), and a
regex that must match a whole message may only hold words of a set known from
the regex (:func:`closed_words`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = ["COMPUTED", "MODE_AT", "MODE_FIRST", "MODE_SEARCH", "Trigger", "analyse", "ascii_safe", "closed_words",
           "compute", "encode", "needs_ignorecase", "required_by_first_word", "required_chars", "required_words",
           "table_key"]

# --- first-word analysis ----------------------------------------------------
#
# For each pattern we compute the set of words a match can begin with, by
# walking the parsed regex, and where the match starts relative to that word:
#
# * ``at``: exactly at the word, so the pattern is only tried at tokens that
#   are one of its first words;
# * ``first``: at the start of the message (``^``), so it is only tried when
#   the message's first token is one of its first words;
# * anything else (or a regex we cannot analyse, e.g. one that may begin
#   mid-word or with an arbitrary word) is searched as usual.
#
# The analysis is conservative, so indexing never changes what matches.

_sp: Any
_sc: Any
try:  # the parser is private but stable across 3.11-3.13
    _sp = importlib.import_module("re._parser")
    _sc = importlib.import_module("re._constants")
except ImportError:  # pragma: no cover - other interpreters: index nothing
    _sp = _sc = None


class _Unknown(Exception):
    pass


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


_MAX_STATES = 4096
# A walk state: (partial first word, anchored at a word start,
# consumed a char before the word, passed a ^ before the word).
_State = tuple[str, bool, bool, bool]
_MODE_AT, _MODE_FIRST, _MODE_SEARCH = "at", "first", "search"


@dataclass(frozen=True, slots=True)
class _Trigger:
    words: frozenset[str]
    mode: str


def _parse(regex: str, flags: int) -> Any:
    """``regex`` parsed by Python's own regex parser, or None when this Python has none (the walks then give no
    answer, which is never wrong)."""
    if _sp is None or _sc is None:
        return None
    try:
        return _sp.parse(regex, flags)
    except Exception:  # pragma: no cover - the regex compiled already
        return None


@functools.lru_cache(maxsize=4096)  # pure and immutable: every Gate of a process shares the analysis
def _analyse(regex: str, flags: int = 0) -> _Trigger | None:
    """First words of every match of ``regex`` (lowercase) and the match mode, or None."""
    parsed = _parse(regex, flags)
    if parsed is None:
        return None
    done = _walk(list(parsed))
    if done is None:
        return None
    words = frozenset(w for w, _, _ in done)
    if all(b for _, _, b in done):
        return _Trigger(words, _MODE_FIRST)
    if not any(c for _, c, _ in done):
        return _Trigger(words, _MODE_AT)
    return _Trigger(words, _MODE_SEARCH)


def _walk(items: list[tuple[Any, Any]]) -> set[tuple[str, bool, bool]] | None:
    """(first word, consumed a char before it, passed a ^ before it) of every match of the parsed regex
    ``items``, or None when some match may begin mid-word, end mid-word, hold no word, or the walk fails."""
    done: set[tuple[str, bool, bool]] = set()
    sc = _sc

    def set_kind(items: list[tuple[Any, Any]]) -> tuple[bool, list[str]]:
        """(matches a non-word char, word chars it may match) for an IN set."""
        nonword = False
        words: list[str] = []
        for op, av in items:
            if op is sc.LITERAL:
                ch = chr(av).lower()  # type: ignore[call-overload]
                if _is_word_char(ch):
                    words.append(ch)
                else:
                    nonword = True
            elif op is sc.CATEGORY and av in (sc.CATEGORY_SPACE, sc.CATEGORY_NOT_WORD):
                nonword = True
            else:  # NEGATE, RANGE, \w, \d, ...: could be any word char
                raise _Unknown
        if len(words) > 16:
            raise _Unknown
        return nonword, words

    def consume(states: set[_State], nonword: bool, chars: list[str]) -> set[_State]:
        out: set[_State] = set()
        for p, anchored, consumed, begin in states:
            if nonword:
                if p:
                    done.add((p, consumed, begin))
                else:
                    out.add(("", True, True, begin))
            for ch in chars:
                if not p and not anchored:
                    raise _Unknown  # the match could start inside a word
                out.add((p + ch, anchored, consumed, begin))
        return out

    def walk(items: list[tuple[Any, Any]], states: set[_State]) -> set[_State]:
        for op, av in items:
            if not states:
                return states
            if len(states) > _MAX_STATES:
                raise _Unknown
            if op is sc.AT:
                nxt: set[_State] = set()
                for p, _anchored, consumed, begin in states:
                    if av in (sc.AT_BEGINNING, sc.AT_BEGINNING_STRING):
                        if p:
                            raise _Unknown  # "^" after a word char never matches
                        nxt.add(("", True, consumed, True))
                    elif av is sc.AT_BOUNDARY:
                        if p:
                            done.add((p, consumed, begin))
                        else:
                            nxt.add(("", True, consumed, begin))
                    elif av in (sc.AT_END, sc.AT_END_STRING) and p:
                        done.add((p, consumed, begin))
                    else:
                        raise _Unknown
                states = nxt
            elif op in (sc.ASSERT, sc.ASSERT_NOT):
                direction, sub = av  # type: ignore[misc]
                if op is sc.ASSERT and direction == -1 and sub:
                    last_op, last_av = list(sub)[-1]
                    if last_op is sc.LITERAL:
                        boundary = not _is_word_char(chr(last_av).lower())
                    elif last_op is sc.IN:
                        try:
                            boundary = set_kind(last_av) == (True, [])
                        except _Unknown:
                            boundary = False
                    else:
                        boundary = False
                    if boundary:  # preceded by a non-word char: a word starts here
                        states = {("", True, c, b) if not p else (p, a, c, b) for p, a, c, b in states}
                # other lookarounds are zero-width filters: nothing to do
            elif op is sc.LITERAL:
                ch = chr(av).lower()  # type: ignore[call-overload]
                word = _is_word_char(ch)
                states = consume(states, not word, [ch] if word else [])
            elif op is sc.IN:
                nonword, chars = set_kind(av)  # type: ignore[arg-type]
                states = consume(states, nonword, chars)
            elif op is sc.SUBPATTERN:
                states = walk(list(av[3]), states)  # type: ignore[index]
            elif op is sc.ATOMIC_GROUP:
                states = walk(list(av), states)  # type: ignore[call-overload]
            elif op is sc.BRANCH:
                nxt = set()
                for alt in av[1]:  # type: ignore[index]
                    nxt |= walk(list(alt), set(states))
                states = nxt
            elif op in (sc.MAX_REPEAT, sc.MIN_REPEAT, sc.POSSESSIVE_REPEAT):
                lo, hi, sub = av  # type: ignore[misc]
                if lo > 16:
                    raise _Unknown
                result = set(states) if lo == 0 else set()
                seen = set(states)
                cur = states
                k = 0
                while cur and k < hi:
                    cur = walk(list(sub), set(cur))
                    k += 1
                    if k >= lo:  # states seen before lead to the same words
                        cur = cur - seen
                        seen |= cur
                        result |= cur
                    if k > 32:
                        raise _Unknown
                states = result
            else:
                raise _Unknown
        return states

    try:
        open_states = walk(items, {("", False, False, False)})
    except (_Unknown, RecursionError):
        return None
    if open_states or not done:
        return None  # a match may end mid-word, or contain no word at all
    return done


def _needs_ignorecase(regex: str) -> bool:
    """Uppercase letters outside escapes (\\W, \\S...) would never match lowercased text."""
    return any(ch.isupper() for ch in re.sub(r"\\.", "", regex))



#: Words most messages hold: a word set holding one of them rules out little (only a heuristic for
#: choosing among sound sets; any choice is correct).
_COMMON = frozenset((
    "a", "an", "the", "and", "or", "but", "so", "to", "of", "in", "on", "at", "for", "with", "from", "by", "about",
    "as", "is", "are", "was", "were", "be", "been", "am", "do", "does", "did", "have", "has", "had", "i", "me", "my",
    "we", "our", "us", "you", "your", "it", "its", "this", "that", "these", "those", "what", "how", "when", "where",
    "who", "why", "which", "can", "could", "would", "should", "will", "not", "no", "yes"))


def _rarity(words: Iterable[str]) -> tuple[int, int]:
    """Sort key: sets with fewer common words, then fewer words, first."""
    ws = frozenset(words)
    return len(ws & _COMMON), len(ws)


def _required(regex: str, flags: int = 0, items: list[tuple[Any, Any]] | None = None) -> tuple[frozenset[str], ...]:
    """:func:`_required_words`, or the same for ``items``, a part of the parsed ``regex`` (see
    :func:`_required_by_first_word`)."""
    if items is None:
        return _required_words(regex, flags)
    return _required_sets(regex, flags, items)


@functools.lru_cache(maxsize=4096)  # pure: a process's later Gates (other configs, tests) do not walk it again
def _required_words(regex: str, flags: int = 0) -> tuple[frozenset[str], ...]:
    return _required_sets(regex, flags, None)


def _required_sets(regex: str, flags: int, items: list[tuple[Any, Any]] | None) -> tuple[frozenset[str], ...]:
    """Word sets (lowercase) such that every match of ``regex`` (of the parsed ``items`` when given) holds a
    whole word of each set.

    A set comes from a part of the regex that every match goes through and that starts at a word
    boundary: the first words of that part, by the walk of :func:`_analyse`. Parts the walk cannot read
    give no set, so the answer may be empty but never wrong.
    """
    if items is None:
        parsed = _parse(regex, flags)
        if parsed is None:
            return ()
        items = list(parsed)
    sc = _sc
    out: list[frozenset[str]] = []

    def ends_nonword(items: list[tuple[Any, Any]]) -> bool:
        """Whether a word char right after the sequence ``items`` always starts a word: the sequence ends
        with a non-word char, a ``\\b``, a ``^`` or a lookbehind for a non-word char."""
        for op, av in reversed(items):
            if op is sc.AT:
                return av in (sc.AT_BOUNDARY, sc.AT_BEGINNING, sc.AT_BEGINNING_STRING)
            if op is sc.ASSERT and av[0] == -1 and ends_nonword(list(av[1])):
                return True
            if op in (sc.ASSERT, sc.ASSERT_NOT):
                continue  # zero-width: the char before it is the last consumed
            if op is sc.LITERAL:
                return not _is_word_char(chr(av).lower())
            if op is sc.IN:
                return all((o is sc.LITERAL and not _is_word_char(chr(a).lower()))
                           or (o is sc.CATEGORY and a in (sc.CATEGORY_SPACE, sc.CATEGORY_NOT_WORD)) for o, a in av)
            if op in (sc.MAX_REPEAT, sc.MIN_REPEAT, sc.POSSESSIVE_REPEAT):
                if not ends_nonword(list(av[2])):
                    return False
                if av[0] >= 1:
                    return True
                continue  # may repeat zero times: then the items before it must end so
            if op is sc.SUBPATTERN:
                return ends_nonword(list(av[3]))
            if op is sc.ATOMIC_GROUP:
                return ends_nonword(list(av))
            if op is sc.BRANCH:
                return all(ends_nonword(list(alt)) for alt in av[1])
            return False
        return False

    def sets_of(items: list[tuple[Any, Any]], after: list[tuple[Any, Any]], word_starts: bool) -> list[frozenset[str]]:
        """Sets for the sequence ``items``, followed in the regex by ``after``; ``word_starts``: a char
        before the sequence always ends with a non-word char (or a word starts at it)."""
        found: list[frozenset[str]] = []
        for k, (op, av) in enumerate(items):
            rest = items[k + 1:] + after
            if (op is sc.AT and av is sc.AT_BOUNDARY) or (op is sc.ASSERT and av[0] == -1):
                done = _walk(items[k:] + after)
                if done is not None:
                    found.append(frozenset(w for w, _, _ in done))
            elif ends_nonword(items[:k]) if k else word_starts:  # a word starts here: as if a \b were written
                done = _walk([(sc.AT, sc.AT_BOUNDARY), *items[k:], *after])
                if done is not None:
                    found.append(frozenset(w for w, _, _ in done))
            starts = ends_nonword(items[:k]) if k else word_starts
            if op is sc.SUBPATTERN:
                found += sets_of(list(av[3]), rest, starts)
            elif op is sc.ATOMIC_GROUP:
                found += sets_of(list(av), rest, starts)
            elif op in (sc.MAX_REPEAT, sc.MIN_REPEAT, sc.POSSESSIVE_REPEAT) and av[0] >= 1:
                found += sets_of(list(av[2]), [], False)  # an iteration may be followed by another one
            elif op is sc.BRANCH:
                # one set per alternative, united; two ways to pick it (rarest-looking, last found) give
                # two sets, both required
                rarest: set[str] = set()
                last: set[str] = set()
                for alt in av[1]:
                    alt_sets = sets_of(list(alt), rest, starts)
                    if not alt_sets:
                        break
                    rarest |= min(alt_sets, key=_rarity)
                    last |= alt_sets[-1]
                else:
                    found += [frozenset(rarest), frozenset(last)]
        return found

    try:
        out = sets_of(items, [], False)
    except RecursionError:  # pragma: no cover - absurdly nested regex
        return ()
    return tuple(dict.fromkeys(out))


def _first_branch(items: list[tuple[Any, Any]]) -> tuple[list[tuple[Any, Any]], list[Any], list[tuple[Any, Any]]] | None:
    """(what comes before, the alternatives, what comes after) of the alternation a match of ``items`` reads
    first: after zero-width parts (anchors, lookarounds) and runs of non-word chars (``^\\W*``) only, through
    non-capturing groups without flags; None when something else comes first."""
    sc = _sc
    nonword_run = [(sc.IN, [(sc.CATEGORY, sc.CATEGORY_NOT_WORD)])]
    prefix: list[tuple[Any, Any]] = []
    rest = list(items)
    while rest:
        op, av = rest[0]
        if op in (sc.AT, sc.ASSERT, sc.ASSERT_NOT) or (op is sc.MAX_REPEAT and list(av[2]) == nonword_run):
            prefix.append(rest.pop(0))
        elif op is sc.SUBPATTERN and av[0] is None and not av[1] and not av[2]:
            rest = list(av[3]) + rest[1:]  # (?:...) read as its content: the same matches
        elif op is sc.BRANCH:
            return prefix, list(av[1]), rest[1:]
        else:
            return None
    return None


@functools.lru_cache(maxsize=4096)  # pure, as _required
def _required_by_first_word(regex: str, flags: int = 0) -> dict[str, tuple[frozenset[str], ...]]:
    """:func:`_required`'s word sets for the matches that begin with each first word (by :func:`_analyse`),
    where they differ from the sets of every match.

    A pattern is tried at one of its first words (an anchored one when the message begins with it), and
    there only the alternatives of its first alternation that can begin with that word can match (``\\b(?:am|was)\\s+(?:i|we)\\b|\\bdo\\s+i\\s+(?:have|own)\\b``
    tried at "was" needs "i" or "we"; at "do", "have" or "own"). The sets are those of the regex without
    the other alternatives (an alternative whose first words the walk cannot tell is kept), so they hold
    for every match at the word. Words whose alternatives are all kept are left out (use
    :func:`_required`); the returned dict is shared: do not change it.
    """
    trig = _analyse(regex, flags)
    parsed = _parse(regex, flags)
    if trig is None or parsed is None or trig.mode == _MODE_SEARCH:
        return {}
    split = _first_branch(list(parsed))
    if split is None:
        return {}
    prefix, alts, after = split
    alt_words: list[frozenset[str] | None] = []
    for alt in alts:
        done = _walk(prefix + list(alt) + after)
        alt_words.append(None if done is None else frozenset(w for w, _, _ in done))
    sc = _sc
    by_kept: dict[tuple[int, ...], tuple[frozenset[str], ...]] = {}
    out: dict[str, tuple[frozenset[str], ...]] = {}
    for word in trig.words:
        kept = tuple(j for j, ws in enumerate(alt_words) if ws is None or word in ws)
        if len(kept) == len(alts) or not kept:
            continue
        sets = by_kept.get(kept)
        if sets is None:
            middle = list(alts[kept[0]]) if len(kept) == 1 else [(sc.BRANCH, (None, [alts[j] for j in kept]))]
            items = prefix + middle + after
            sets = by_kept[kept] = _required(regex, flags, items)
        out[word] = sets
    return out


def _punctuation(code: int) -> str | None:
    """The char of ``code`` if it is ASCII punctuation (not a word char, not a space), else None."""
    ch = chr(code)
    return ch if ch.isascii() and not _is_word_char(ch) and not ch.isspace() else None


@functools.lru_cache(maxsize=4096)  # pure, as _required
def _required_chars(regex: str, flags: int = 0) -> tuple[frozenset[str], ...]:
    """Sets of ASCII punctuation chars such that every string ``regex`` matches in holds a char of each set.

    A set comes from a literal char (or a class of literal chars) that every match goes through, the text a
    positive lookahead or lookbehind reads included (it is part of the string too: ``knowledge.2`` looks
    behind for one of ``.!?;:``), or from a branch whose every alternative has a set (their union). The
    words of :func:`required_words` cannot say "the message holds a ?" (``continuity.22`` ends with
    ``\\?\\s*$``); these sets can. ASCII punctuation has no other case, so ``IGNORECASE`` changes
    nothing. Parts the walk does not read (negative lookarounds, conditionals, optional parts) give no
    set, so the answer may be empty but never wrong.
    """
    parsed = _parse(regex, flags)
    if parsed is None:
        return ()
    sc = _sc

    def sets_in(items: Iterable[tuple[Any, Any]]) -> list[frozenset[str]]:
        found: list[frozenset[str]] = []
        for op, av in items:
            if op is sc.LITERAL:
                ch = _punctuation(av)
                if ch is not None:
                    found.append(frozenset(ch))
            elif op is sc.IN:
                chars = [_punctuation(a) if o is sc.LITERAL else None for o, a in av]
                if chars and all(c is not None for c in chars):
                    found.append(frozenset(c for c in chars if c is not None))
            elif op is sc.SUBPATTERN:
                found += sets_in(av[3])
            elif op is sc.ATOMIC_GROUP:
                found += sets_in(av)
            elif op in (sc.MAX_REPEAT, sc.MIN_REPEAT, sc.POSSESSIVE_REPEAT) and av[0] >= 1:
                found += sets_in(av[2])
            elif op is sc.ASSERT:  # positive lookahead or lookbehind: what it reads is in the string
                found += sets_in(av[1])
            elif op is sc.BRANCH:
                union: set[str] = set()
                for alt in av[1]:
                    alt_sets = sets_in(alt)
                    if not alt_sets:
                        break
                    union |= min(alt_sets, key=len)
                else:
                    found.append(frozenset(union))
        return found

    try:
        out = sets_in(parsed)
    except RecursionError:  # pragma: no cover - absurdly nested regex
        return ()
    return tuple(dict.fromkeys(out))


#: Bounds of the :func:`_closed_words` walk (past them it gives no answer, never a wrong one).
_MAX_CLOSED_STATES = 4096
_MAX_CLOSED_WORD = 64


@functools.lru_cache(maxsize=4096)  # pure, as _required
def _closed_words(regex: str, flags: int = 0) -> frozenset[str] | None:
    """The words (lowercase) of every string ``regex`` matches when it must match a whole string, or None.

    A regex that starts with ``^`` and ends with ``$`` (no ``MULTILINE``) matches the whole message (``$``
    may leave out a final newline, which is no word char), so the message's words (its runs of word chars)
    are those of the matched text. When every word char the regex consumes is a literal (a message of
    small talk: ``^\\W*(?:thanks|ok)\\W*$``), the words of the text it matches form a set known from the
    regex alone, and a message holding a word outside it cannot match. The walk follows the regex's paths
    building the word in progress; zero-width parts (lookarounds, other anchors) are read as matching
    anywhere, which only adds paths, so the set may be too large but never misses a word. A regex whose
    word chars may come from a class (``\\w``, ``[a-z]``, ``.``) or a backreference gives None.
    """
    parsed = _parse(regex, flags)
    if parsed is None:
        return None
    sc = _sc
    items = list(parsed)
    if (len(items) < 2 or parsed.state.flags & re.MULTILINE
            or items[0] != (sc.AT, sc.AT_BEGINNING) and items[0] != (sc.AT, sc.AT_BEGINNING_STRING)
            or items[-1] != (sc.AT, sc.AT_END) and items[-1] != (sc.AT, sc.AT_END_STRING)):
        return None
    words: set[str] = set()
    # A state: (the word in progress, "" between words; whether a \b ended a word, so that no word char may
    # follow before a non-word char).
    _St = tuple[str, bool]

    def set_kind(av: Any) -> tuple[bool, list[str]]:
        """(may match a non-word char, the word chars it may match) of an IN set, as in :func:`_walk`; a
        negated set that holds ``\\w`` (``[^\\w?]``) matches non-word chars only."""
        if av and av[0] == (sc.NEGATE, None):
            if (sc.CATEGORY, sc.CATEGORY_WORD) in av[1:]:
                return True, []
            raise _Unknown
        nonword = False
        chars: list[str] = []
        for op, a in av:
            if op is sc.LITERAL:
                ch = literal(a)
                if _is_word_char(ch):
                    chars.append(ch)
                else:
                    nonword = True
            elif op is sc.CATEGORY and a in (sc.CATEGORY_SPACE, sc.CATEGORY_NOT_WORD):
                nonword = True
            else:  # NEGATE, RANGE, \w, \d, ...: could be any word char
                raise _Unknown
        return nonword, chars

    def literal(code: int) -> str:
        """A literal char, lowercase. A non-ASCII one may match an ASCII letter under IGNORECASE (the Kelvin
        sign matches "k", "\u017f" matches "s"): no answer then."""
        if code >= 128:
            raise _Unknown
        return chr(code).lower()

    def consume(states: set[_St], nonword: bool, chars: list[str]) -> set[_St]:
        out: set[_St] = set()
        for p, ended in states:
            if nonword:
                if p:
                    words.add(p)
                out.add(("", False))
            if not ended:
                for ch in chars:
                    if len(p) >= _MAX_CLOSED_WORD:
                        raise _Unknown
                    out.add((p + ch, False))
        return out

    def walk(items: list[tuple[Any, Any]], states: set[_St]) -> set[_St]:
        for op, av in items:
            if not states:
                return states
            if len(states) > _MAX_CLOSED_STATES:
                raise _Unknown
            if op is sc.LITERAL:
                ch = literal(av)  # type: ignore[arg-type]
                states = consume(states, not _is_word_char(ch), [ch] if _is_word_char(ch) else [])
            elif op is sc.IN:
                states = consume(states, *set_kind(av))
            elif op is sc.AT:
                if av is sc.AT_BOUNDARY:  # after a word char: the word ends here
                    nxt: set[_St] = set()
                    for p, ended in states:
                        if p:
                            words.add(p)
                            nxt.add(("", True))
                        else:
                            nxt.add((p, ended))
                    states = nxt
                # other anchors are zero-width: read as always passing
            elif op in (sc.ASSERT, sc.ASSERT_NOT):
                pass  # zero-width: read as always passing
            elif op is sc.SUBPATTERN:
                if av[1] & re.MULTILINE:  # type: ignore[index]
                    raise _Unknown
                states = walk(list(av[3]), states)  # type: ignore[index]
            elif op is sc.ATOMIC_GROUP:
                states = walk(list(av), states)  # type: ignore[call-overload]
            elif op is sc.BRANCH:
                nxt = set()
                for alt in av[1]:  # type: ignore[index]
                    nxt |= walk(list(alt), set(states))
                states = nxt
            elif op in (sc.MAX_REPEAT, sc.MIN_REPEAT, sc.POSSESSIVE_REPEAT):
                lo, hi, sub = av  # type: ignore[misc]
                # the states after k >= lo repeats; one already found after fewer (but at least lo) repeats
                # leads to the same words, so it is not followed again. (Before lo repeats nothing is a
                # result yet: a state equal to one before the loop is still followed.)
                result = set(states) if lo == 0 else set()
                cur = states
                k = 0
                while cur and k < hi:
                    cur = walk(list(sub), set(cur))
                    k += 1
                    if k >= lo:
                        cur = cur - result
                        result |= cur
                    elif k > 64:
                        raise _Unknown
                    if len(result) > _MAX_CLOSED_STATES:
                        raise _Unknown
                states = result
            else:  # ANY, NOT_LITERAL, CATEGORY, GROUPREF, ...: could be a word char
                raise _Unknown
        return states

    try:
        end = walk(items[1:-1], {("", False)})
    except (_Unknown, RecursionError):
        return None
    words.update(p for p, _ in end if p)
    return frozenset(words)


@functools.lru_cache(maxsize=4096)  # pure, as _required
def _ascii_safe(regex: str, flags: int = 0) -> bool:
    """Whether ``regex`` compiled with ``re.ASCII`` matches exactly as compiled without it in every string of
    ASCII chars but ``\\x1c``-``\\x1f``.

    ``re.ASCII`` changes two things (the ``re`` docs): ``\\w``, ``\\b``, ``\\d``, ``\\s`` and their
    negations test ASCII only, and ``IGNORECASE`` folds ASCII letters only. On ASCII chars the classes agree
    but for ``\\s``, which in Unicode also holds ``\\x1c``-``\\x1f`` (the caller rules those strings out);
    folding differs only for a non-ASCII char of the regex (the Kelvin sign matches "k" in Unicode), so a
    regex holding any char past ASCII (literal, negated or in a range) is not safe. Neither is one that
    does not compile with ``re.ASCII`` (an inline ``(?u)``).
    """
    if _sp is None or _sc is None:
        return False
    try:
        parsed = _sp.parse(regex, flags)
        re.compile(regex, (flags & ~re.UNICODE) | re.ASCII)
    except Exception:
        return False
    sc = _sc

    def ascii_only(node: Any) -> bool:
        if isinstance(node, _sp.SubPattern):
            return all(ascii_only(item) for item in node)
        if isinstance(node, (list, tuple)):
            if len(node) == 2 and (node[0] is sc.LITERAL or node[0] is sc.NOT_LITERAL):
                return bool(node[1] < 128)
            if len(node) == 2 and node[0] is sc.RANGE:
                return bool(node[1][1] < 128)
            return all(ascii_only(x) for x in node)
        return True

    try:
        return ascii_only(parsed)
    except RecursionError:  # pragma: no cover - absurdly nested regex
        return False


# --- the shipped analysis ---------------------------------------------------
#
# The analysis of the default patterns takes about 2 s (the first gate of every process waited for it). Its
# results ship in ``chatrecall/data/gate_analysis.json``, written by ``benchmarks/build_gate_analysis.py`` from
# these same functions; a regex found there is read, any other is analysed as above. The file is used only on
# the Python version that wrote it (the walks read ``re._parser``'s output), and tests/test_gate_analysis.py
# checks every entry against a fresh analysis, so the shipped table never changes what a gate decides.

_TABLE_FILE = "gate_analysis.json"
_MISS = object()
#: (function name, flags, regex) -> result, of every analysis computed in this process (the build script's record).
COMPUTED: dict[tuple[str, int, str], Any] = {}


def _python() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


@functools.cache
def _table() -> dict[str, dict[str, Any]]:
    """The shipped entries by function name, keyed by :func:`table_key`; empty when the file is missing,
    unreadable or written by another Python version."""
    try:
        raw = json.loads(resources.files("chatrecall").joinpath("data", _TABLE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # pragma: no cover - a broken install: analyse instead
        return {}
    if not isinstance(raw, dict) or raw.get("python") != _python() or not isinstance(raw.get("entries"), dict):
        return {}
    return raw["entries"]


def _sets(v: Any) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(ws) for ws in v)


def _sorted_sets(sets: tuple[frozenset[str], ...]) -> list[list[str]]:
    return [sorted(ws) for ws in sets]


def _encode_by_word(d: dict[str, tuple[frozenset[str], ...]]) -> dict[str, Any]:
    """{word: sets} as the distinct sets once and each word's set numbers (a name list's 800 first words share a
    handful of sets)."""
    number: dict[frozenset[str], int] = {}
    by_word = {w: [number.setdefault(ws, len(number)) for ws in word_sets] for w, word_sets in sorted(d.items())}
    return {"sets": _sorted_sets(tuple(number)), "by_word": by_word}


def _decode_by_word(v: dict[str, Any]) -> dict[str, tuple[frozenset[str], ...]]:
    sets = [frozenset(ws) for ws in v["sets"]]
    return {w: tuple(sets[n] for n in nums) for w, nums in v["by_word"].items()}


#: function name -> (compute, encode for JSON, decode)
_CODECS: dict[str, tuple[Any, Any, Any]] = {
    "analyse": (_analyse, lambda t: None if t is None else [sorted(t.words), t.mode],
                lambda v: None if v is None else _Trigger(frozenset(v[0]), v[1])),
    "ascii_safe": (_ascii_safe, bool, bool),
    "closed_words": (_closed_words, lambda ws: None if ws is None else sorted(ws),
                     lambda v: None if v is None else frozenset(v)),
    "required_words": (_required_words, _sorted_sets, _sets),
    "required_chars": (_required_chars, _sorted_sets, _sets),
    "required_by_first_word": (_required_by_first_word, _encode_by_word, _decode_by_word),
}


def table_key(regex: str, flags: int = 0) -> str:
    """The shipped table's key of ``regex`` compiled with ``flags``."""
    return hashlib.sha1(f"{flags}:{regex}".encode()).hexdigest()


def _shipped(name: str) -> Any:
    compute, _, decode = _CODECS[name]

    @functools.lru_cache(maxsize=4096)  # pure, as the function it reads for
    def get(regex: str, flags: int = 0) -> Any:
        hit = _table().get(name, {}).get(table_key(regex, flags), _MISS)
        if hit is not _MISS:
            return decode(hit)
        out = compute(regex, flags)
        COMPUTED[(name, flags, regex)] = out
        return out

    get.__name__ = get.__qualname__ = name
    get.__doc__ = compute.__doc__
    return get


def encode(name: str, value: Any) -> Any:
    """``value``, a result of the analysis function ``name``, as the shipped table stores it."""
    return _CODECS[name][1](value)


def compute(name: str, regex: str, flags: int = 0) -> Any:
    """The analysis function ``name`` run on ``regex``, never read from the shipped table (for the build script
    and the test that checks the table)."""
    return _CODECS[name][0](regex, flags)


MODE_AT, MODE_FIRST, MODE_SEARCH = _MODE_AT, _MODE_FIRST, _MODE_SEARCH
Trigger = _Trigger
needs_ignorecase = _needs_ignorecase
analyse = _shipped("analyse")
closed_words = _shipped("closed_words")
required_words = _shipped("required_words")
required_by_first_word = _shipped("required_by_first_word")
required_chars = _shipped("required_chars")
ascii_safe = _shipped("ascii_safe")
