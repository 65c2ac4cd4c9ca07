"""In-process index of one user's memories: BM25, entity index and graph.

The index is a cache: everything in it can be rebuilt from the store
(records carry their entity keys, timestamps and sequence numbers). All
scoring methods return dense numpy arrays over index positions so the
engine can fuse components without a Python loop over candidates.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import re
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, MutableSequence, Sequence
from importlib import resources
from types import MappingProxyType

import numpy as np

from ._entities import _word_file
from ._protocols import VectorIndex, VectorIndexFactory
from ._replace_patterns import (
    NOT_A_THING,
    OTHER_PEOPLE,
    OTHERS,
    REPLACED_AFTER_VERB,
    REPLACED_BEFORE_END,
    THE_USER,
    THING_ENDS,
)
from ._tuned import ANSWER_TYPE_TERM_WEIGHT, BM25_B, BM25_K1
from ._types import Record

__all__ = ["UserIndex", "overlapping_keys", "tokenize"]

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?|\d+", re.UNICODE)
_STOP = frozenset(
    ["a", "an", "the", "and", "or", "but", "if", "then", "so", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as", "is", "are", "was", "were", "be", "been", "being", "am", "i", "me", "my", "mine", "we", "us", "our", "you", "your", "yours", "he", "him", "his", "she", "her", "hers", "it", "its", "they", "them", "their", "this", "that", "these", "those", "do", "does", "did", "doing", "have", "has", "had", "having", "not", "no", "yes", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "there", "here", "about", "into", "over", "under", "again", "very", "just", "also", "than", "too", "only", "own", "same", "such", "up", "down", "out", "off", "all", "any", "both", "each", "few", "more", "most", "other", "some", "s", "t", "don", "let", "lets", "let's", "i'm", "it's", "that's", "you're", "we're"]
)


#: Time expressions in a memory's text ("yesterday", "last week", "in May", "2023", weekdays...):
#: such memories are likelier answers to "When did...?" questions.
_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|recently|lately|weekends?|"
    r"(?:last|next|this|past|coming) (?:week|weekend|month|year|night|summer|winter|spring|fall|autumn|"
    r"morning|evening|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(?:a|one|two|three|four|five|few|couple of) (?:days?|weeks?|months?|years?)|"
    r"january|february|march|april|june|july|august|september|october|november|december|"
    r"(?:in|of|early|late|mid) may|may \d|"
    r"mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|"
    r"(?:19|20)\d\d|\d{1,2}/\d{1,2}(?:/\d{2,4})?)\b",
    re.IGNORECASE,
)


#: An error in a memory's text (``ValueError``, ``Traceback``, ``ECONNREFUSED``, ``exit code 1``, ``HTTP 502``):
#: such memories answer "what was that error?" better than a turn that only says "the error is gone".
_ERROR = re.compile(
    r"\b[A-Z]?[a-z]+(?:[A-Z][a-z]+)*(?:Error|Exception)\b|\bTraceback\b|\bE[A-Z]{4,}\b|"
    # upper-snake error codes: ERR_CONN_RESET, ERR_PAYMENT_TIMEOUT, DB_CONNECTION_TIMEOUT, PERMISSION_DENIED
    r"\bERR(?:OR)?_[A-Z0-9_]+\b|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:ERROR|FAILED|FAILURE|TIMEOUT|TIMED_OUT|"
    r"EXCEPTION|DENIED|REFUSED|RESET|INVALID|ARGUMENT|UNAVAILABLE|EXCEEDED|NOT_FOUND)\b|"
    r"\b[45]\d\d (?:gateway timeout|service unavailable|internal server error|forbidden|unauthorized)\b|"
    r"(?i:\berrno\b|\b(?:exit|status|error) code\s*-?\d+|\bHTTP\s*[45]\d\d\b|\b[45]\d\d (?:error|bad gateway|"
    r"not found)\b|\bsegmentation fault\b|\bpanic:|\bfailed with\b)"
)


#: Words of a bare acknowledgement or reaction ("Got it.", "Welcome back!"): a turn with no other word but
#: stopwords carries no content of its own (``chatrecall/data/acknowledgement_words.txt``).
_ACK = _word_file("acknowledgement_words.txt")


#: Words that answer a question on their own ("Yes!", "nope"): ``chatrecall/data/yes_no_words.txt``.
_YES_NO = _word_file("yes_no_words.txt")


def _bare_kind(text: str) -> int:
    """0: the text has content; 1: a bare acknowledgement ("Got it.", "thanks!", "🙂"); 2: a bare yes / no
    ("Yes!", "ok sure"), which answers a question asked just before it."""
    words = _WORD.findall(text.casefold())
    if not all(w in _STOP or w in _ACK or w in _YES_NO for w in words):
        return 0
    return 2 if any(w in _YES_NO for w in words) else 1


def _is_bare(text: str) -> bool:
    """No word of ``text`` but stopwords, acknowledgement and yes / no words ("Got it.", "haha ok", "🙂")."""
    return _bare_kind(text) > 0


#: A reply that says it does not know ("I'm not sure, I don't think you've told me your tutor's name."): a chatbot
#: that failed once would otherwise hand its non-answer back when the user asks again. Only at the start of a
#: reply, and not when it goes on with "but" / "however" (a hedge before a fact).
_NON_ANSWER = re.compile(
    r"^\W*(?:(?:hmm+|sorry|unfortunately|apologies|i'?m afraid)\W+)?(?:i don'?t know|i do not know|i'?m not sure|"
    r"i am not sure|i'?m not certain|i don'?t (?:have|recall|remember|see|think you'?ve)|i do not (?:have|recall)|"
    r"i can'?t (?:recall|remember|find|see|tell)|i cannot (?:recall|remember|find|see|tell)|"
    r"you haven'?t (?:told|mentioned|said|shared)|you didn'?t (?:tell|mention|say|share)|"
    r"i have no (?:record|information|memory|idea|way)|there'?s no (?:record|mention))\b",
    re.IGNORECASE,
)
_HEDGE_THEN_FACT = re.compile(r"\b(?:but|however|though|although)\b", re.IGNORECASE)


def _is_non_answer(text: str, role: str) -> bool:
    """A reply (not the user's turn) of at most 40 words that opens by saying it does not know."""
    if role == "user":
        return False
    t = text.replace("\u2019", "'")
    return (_NON_ANSWER.search(t) is not None and _HEDGE_THEN_FACT.search(t) is None
            and len(t.split()) <= 40)


#: Words of a reply that only hands something over ("Here you go.", "Here's what I have."):
#: ``chatrecall/data/handover_words.txt``.
_HANDOVER = _word_file("handover_words.txt")


def _is_handover(text: str, role: str) -> bool:
    """A reply (not the user's turn) that only hands something over: a hand-over word ("here", "here's", "go")
    and otherwise only stopwords, acknowledgement and yes / no words ("Sure, here you go!"). "Here you go: SK19
    XYZ." has content and is not one."""
    if role == "user":
        return False
    words = _plain_words(text)
    return any(w in _HANDOVER for w in words) and all(
        w in _HANDOVER or w in _STOP or w in _ACK or w in _YES_NO for w in words)


#: A turn that disputes the chatbot's reply before it ("that's wrong, it's Thursday", "I said Tuesday, not Monday",
#: "sorry, I meant the green one"): the user has just said the reply is wrong (see :meth:`UserIndex.disputed`).
_DISPUTE = re.compile(
    r"^\W*(?:wrong|incorrect|not quite|not really)\b|"
    r"\b(?:that'?s|thats|that is|you'?re|you are)\s+(?:not\s+(?:right|correct|true|what i (?:said|meant|asked))|"
    r"wrong|incorrect)\b|"
    r"^\W*(?:(?:no|nope|nah|sorry|wait|oops|um+|er+|actually)\W+)*i\s+meant\b(?!\s+to\b)|"
    r"\bi\s+said\s+[^.?!]*?\bnot\b|\bi\s+(?:didn'?t|did\s+not|never)\s+(?:say|said|mean|ask)\b",
    re.IGNORECASE,
)
#: A bare "no, ..." at the start: it disputes a reply that stated something, but answers one that asked
#: ("Is staging back up?" / "no, still down"); "no worries", "no thanks", "no idea why" are not disputes.
_DISPUTE_NO = re.compile(
    r"^\W*(?:no|nope|nah)\b(?!\W*(?:worries|worry|problem|problems|prob|probs|thanks|thank|ty|rush|biggie|idea|"
    r"need|way|pressure|big deal|doubt|kidding|joke|matter|wonder|clue|one|longer|more|time|offence|offense)\b)",
    re.IGNORECASE,
)


def _ruled_out(text: str) -> tuple[frozenset[str], frozenset[str]]:
    from ._classifier import ruled_out  # _classifier tokenizes with this module's tokenize

    return ruled_out(text)


def _dispute_kind(text: str, role: str) -> int:
    """0: the user's turn disputes nothing; 1: it opens with a bare "no" (disputes a reply that did not ask);
    2: it says the reply before it is wrong. Only a user's turn disputes (a chatbot's reply)."""
    if role != "user":
        return 0
    t = text.replace("\u2019", "'")
    if _DISPUTE.search(t) is not None:
        return 2
    return 1 if _DISPUTE_NO.search(t) is not None else 0


#: A turn that asks something (a question, a request): when another speaker's turn follows, that turn answers it.
_ASKS = re.compile(
    r"\?|^\s*(?:[^:\n]{1,40}:\s+)?(?:need|can you|could you|would you|should (?:i|we)|help me|any (?:idea|tips?|"
    r"suggestions?)|what|which|how|why|where|who|when|is there|do you|tell me)\b",
    re.IGNORECASE,
)


#: A first-person word: a clause holding one says something about the speaker.
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|mine|myself|we|we're|we've|we'd|we'll|our|ours|me|us)\b",
                           re.IGNORECASE)
#: Clause openers of a question or a request, not a statement ("what am I owed", "can you help me"), after up to
#: three connectives ("and how did we fix it", "ok so what did we decide").
_ASKING_OPENER = re.compile(r"^\W*(?:(?:and|so|but|or|also|then|ok|okay|oh|right|well|hmm)\W+){0,3}"
                            r"(?:what|what's|which|who|who's|whom|whose|where|where's|when|why|how|is|are|was|"
                            r"were|do|does|did|can|could|would|will|should|shall|any|please|help|tell|give|show|write|"
                            r"make|explain|suggest|recommend|draft|find|list|let)\b", re.IGNORECASE)
#: A clause that only announces the request ("I have a question", "I was wondering", "I need some advice").
_META_CLAUSE = re.compile(r"\b(?:i (?:have|had|got) a (?:quick )?question|i(?: was| am|'m)? wondering|"
                          r"i (?:need|want|would like|'d like) (?:to know|to ask|help|some help|advice|some advice|"
                          r"tips|some tips|ideas|some ideas|a hand))\b", re.IGNORECASE)
#: Clauses: split at sentence ends, line breaks, commas, semicolons and colons.
_CLAUSE = re.compile(r"[^.!?\n,;:]+")


#: A statement that something changed ("the design sync is moving to 3:30pm", "they're raising the rent to $1,975",
#: "her dose is going up to 3 units from tonight", "pushed the deadline back to April 4"): see :meth:`UserIndex.changes`.
_CHANGE = re.compile(
    r"\b(?:now|instead|no longer|anymore|any more|mov(?:ed|ing|es)|chang(?:ed|ing|es)|switch(?:ed|ing)|swapp(?:ed|ing)|"
    r"push(?:ed|ing)|postpon(?:ed|ing)|reschedul(?:ed|ing)|delay(?:ed|ing)|brought forward|bump(?:ed|ing)|"
    r"rais(?:ed|ing)|increas(?:ed|ing)|dropp(?:ed|ing)|lower(?:ed|ing)|reduc(?:ed|ing)|cut (?:to|down)|"
    r"(?:went|going|goes|gone) (?:up|down)|extend(?:ed|ing)|shorten(?:ed|ing)|upgrad(?:ed|ing)|downgrad(?:ed|ing)|"
    r"replac(?:ed|ing)|renam(?:ed|ing)|revis(?:ed|ing)|trad(?:ed|ing)|transferr(?:ed|ing)|promot(?:ed|ing)|relocat(?:ed|ing)|"
    r"updated?|actually|turns out|from now on|from (?:tonight|today|tomorrow|next)|starting (?:next|tomorrow|today)|"
    r"as of|came back with|renewed|renewal|new (?:address|number|job|phone|plan|date|time|deadline|price|rate|"
    r"salary|budget|role|title|team|manager|school|car|place|flat|apartment|house))\b",
    re.IGNORECASE)
#: A change only thought of, asked about or dropped ("thinking about switching to Verizon", "we might move").
_HEDGED = re.compile(
    r"\b(?:thinking (?:about|of)|consider(?:ed|ing)?|might|maybe|could|would|should|if|whether|not sure|"
    r"wonder(?:ed|ing)?|decided (?:not|against)|never mind|nevermind|plann?(?:ed|ing)? to|want(?:ed)? to|hop(?:e|ing) to|"
    r"in the end|kept|keeping|stay(?:ed|ing) with|sticking with|stuck with)\b",
    re.IGNORECASE)


def _states_change(text: str) -> bool:
    """A statement that something changed, not only thought of (:data:`_CHANGE` or a thing replaced, see
    :func:`_replaced_words`; not :data:`_HEDGED`)."""
    t = text.replace("\u2019", "'")
    return (_CHANGE.search(t) is not None or bool(_replaced_words(t))) and _HEDGED.search(t) is None


_NOTHING: frozenset[str] = frozenset()
_USERS_THING = frozenset({"my", "our"})
_GIVEN_NAMES = _word_file("given_names.txt")
_CLAUSE_BREAK = re.compile(r"[.!?;,:\n]")


def _someone_else_does(before: str) -> bool:
    """The clause ending at a replacing verb names another person as its subject ("my roommate", "she", "Jake") and
    not the user ("my wife and I")."""
    words = [w.casefold().strip("'") for w in _CLAUSE_BREAK.split(before)[-1].split()[-6:]]
    if THE_USER.intersection(words):
        return False
    return not OTHER_PEOPLE.isdisjoint(words) or not _GIVEN_NAMES.isdisjoint(words)


def _replaced_words(text: str) -> frozenset[str]:
    """The casefolded words naming what a stated change replaces: "eureka" in "I sold the Eureka and bought a
    Mahlkönig E65S", "vodafone" in "switched from vodafone to three", "thinkpad" in "the ThinkPad finally died"
    (patterns: :mod:`._replace_patterns`). Empty for a change only thought of (:data:`_HEDGED`); someone else's thing
    ("my brother sold his Subaru") is left out."""
    t = text.replace("\u2019", "'")
    found: set[str] = set()
    for rx in (REPLACED_AFTER_VERB, REPLACED_BEFORE_END):
        for m in rx.finditer(t):
            whose = m.group("whose").casefold().split()
            if not OTHERS.isdisjoint(whose) or (not _USERS_THING.intersection(whose)
                                                and _someone_else_does(t[:m.start()])):
                continue  # someone else's thing ("my brother sold his Subaru", "my roommate switched from notion")
            for raw in m.group("thing").split():
                w = raw.casefold().strip("'-")
                if w in THING_ENDS:
                    break
                if len(w) > 2 and w not in NOT_A_THING and w not in _STOP:
                    found.add(w)
    if not found or _HEDGED.search(t) is not None:
        return _NOTHING
    return frozenset(found)


def overlapping_keys(key: str, stored: Iterable[str]) -> list[str]:
    """The entity keys among ``stored`` that name what ``key`` names by whole words: the same key, one holding it
    ("acme logistic" for "acme") or one it holds ("acme" for "acme logistic"); "acmetech" is another name."""
    return [k for k in stored if _overlaps(key, k)]


def _overlaps(key: str, other: str) -> bool:
    """``other`` is ``key``, holds it, or is held by it, by whole words."""
    return other == key or f" {key} " in f" {other} " or f" {other} " in f" {key} "


def _states_own(text: str) -> bool:
    """The text holds a clause of three words or more that states something about the speaker: a first-person
    word, not opening a question or a request and not only announcing one ("Our internet is with Xfinity. Any
    ideas?", "My flight was 4 hours late, what am I owed?" do; "what's the capital of Peru?", "Can you help me
    with my CV?" and "I have a question: how do I boil an egg?" do not)."""
    t = text.replace("\u2019", "'")
    for m in _CLAUSE.finditer(t):
        clause = m.group(0).strip()
        if (len(clause.split()) >= 3 and _FIRST_PERSON.search(clause) is not None
                and _ASKING_OPENER.match(clause) is None and _META_CLAUSE.search(clause) is None):
            return True
    return False


def _stem(w: str) -> str:
    """Cheap plural / verb folding for BM25 (no dictionary): one stem per word family.

    A plural or an -ing / -ed ending goes when a vowel is left before it ("thing", "string"
    and "need" stay), then a doubled final consonant and a final silent "e": "move",
    "moves", "moving" and "moved" all give "mov"; "wedding" and "weddings" give "wed".
    """
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 4 and w.endswith("ing") and _VOWEL.search(w, 0, len(w) - 3):
        w = w[:-3]
    elif len(w) > 3 and w.endswith("ed") and not w.endswith("eed") and _VOWEL.search(w, 0, len(w) - 2):
        w = w[:-2]
    else:
        return w[:-1] if len(w) > 3 and w.endswith("e") and not w.endswith(("ee", "ie", "ye")) else w
    if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        return w[:-1]  # running -> runn -> run, stopped -> stopp -> stop (not "ball", "pass")
    return w[:-1] if len(w) > 3 and w.endswith("e") and not w.endswith(("ee", "ie", "ye")) else w


_VOWEL = re.compile(r"[aeiouy]")
_CAMEL = re.compile(r"[a-z][A-Z]")
_CAMEL_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


#: Sentence ends: ".", "!" or "?" before a capital, a digit or a quote, and line breaks.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\u201c\u2018])|\n+")
#: Sentences of fewer words are not embedded apart ("Thanks.", "Hi there!").
PART_MIN_WORDS = 3
#: At most this many sentences of one turn are embedded apart (a pasted page keeps its first ones).
MAX_PARTS = 12


#: Roles whose turns get no sentence vectors: a chatbot's reply restates and explains the user's turns, and its
#: sentences crowded the user's own facts out (C47b, stop 38).
NO_PARTS_ROLES = frozenset({"assistant"})


def sentence_parts(text: str, role: str = "user") -> list[str]:
    """The sentences of a turn that are embedded apart: none for a turn of one sentence or a chatbot's reply.

    A fact inside a long turn about something else ("... Oh, and Kuba turned 7 in May. Anyway ...") is
    found by its own sentence's vector, which the turn's vector dilutes.

    Example:
        >>> sentence_parts("We moved in March. Kuba turned 7 in May, so he starts school.")
        ['We moved in March.', 'Kuba turned 7 in May, so he starts school.']
        >>> sentence_parts("Thanks, that helps!")
        []
    """
    if role in NO_PARTS_ROLES:
        return []
    out = [s.strip() for s in _SENTENCE_END.split(text) if len(s.split()) >= PART_MIN_WORDS]
    return out[:MAX_PARTS] if len(out) >= 2 else []


#: Metadata key under which a stored memory keeps its sentence vectors (float16, base64), so any store that
#: keeps metadata keeps them; users may not set it, and the engine never hands it back.
PARTS_KEY = "chatrecall.sentence_vectors"


def encode_parts(vectors: np.ndarray) -> str:
    """Sentence vectors as a metadata string (float16, base64)."""
    return base64.b64encode(np.ascontiguousarray(vectors, dtype="<f2").tobytes()).decode("ascii")


def decode_parts(value: object, dim: int) -> np.ndarray | None:
    """The vectors :func:`encode_parts` wrote, or None when ``value`` is not such a string for ``dim``."""
    if not isinstance(value, str) or not value:
        return None
    try:
        raw = base64.b64decode(value.encode("ascii"), validate=True)
    except ValueError:
        return None
    if len(raw) % (2 * dim):
        return None
    return np.frombuffer(raw, dtype="<f2").reshape(-1, dim).astype(np.float32)


def without_parts(rec: Record) -> Record:
    """``rec`` without the stored sentence vectors in its metadata (what users see)."""
    if PARTS_KEY not in rec.metadata:
        return rec
    return dataclasses.replace(rec, metadata=MappingProxyType({k: v for k, v in rec.metadata.items()
                                                               if k != PARTS_KEY}))


def tokenize(text: str) -> list[str]:
    """BM25 terms: casefolded words minus stopwords, lightly stemmed.

    A camel-case word also yields its parts (``OperationalError`` -> itself,
    ``operational``, ``error``), so "that error" finds the exception name.
    """
    out = []
    for raw in _WORD.findall(text):
        w = raw.casefold().replace("’", "'")
        if w.endswith("'s"):
            w = w[:-2]
        if w and w not in _STOP:
            out.append(_stem(w))
        if _CAMEL.search(raw):
            out.extend(_stem(p) for p in (x.casefold() for x in _CAMEL_PART.findall(raw)) if len(p) > 2
                       and p not in _STOP)
    return out


def _plain_words(text: str) -> list[str]:
    """The words of ``text``, casefolded, in order (no stopwords dropped, no stemming)."""
    return [w.casefold().replace("’", "'") for w in _WORD.findall(text)]


def repeats(text: str, pin: str) -> bool:
    """Whether ``text`` repeats ``pin``: it holds the pin's words verbatim, in order (case and punctuation
    aside), and they are most of it ("From now on, always give distances in kilometres." for the pin "Always give
    distances in kilometres"). A turn that says much else besides ("Answer in metric. Also my van is a 2015 VW
    Transporter and needs new tyres.") does not: it is kept for the rest."""
    t, p = _plain_words(text), _plain_words(pin)
    n = len(p)
    if not n or 2 * n <= len(t):
        return False
    return any(t[i:i + n] == p for i in range(len(t) - n + 1))


def _answer_type_terms() -> dict[str, float]:
    text = resources.files("chatrecall").joinpath("data/answer_type_words.txt").read_text(encoding="utf-8")
    words = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return {t: ANSWER_TYPE_TERM_WEIGHT for w in words for t in tokenize(w)}


#: Query terms naming what is asked for ("name", "called", "number"), with their BM25 weight factor.
_ANSWER_TYPE = _answer_type_terms()


class UserIndex:
    """BM25 + entity index + turn graph over one user's memories.

    Positions are stable until :meth:`remove`, which rebuilds the index.

    Example:
        >>> idx = UserIndex(dim=4)
        >>> len(idx)
        0
    """

    K1 = BM25_K1
    B = BM25_B
    #: Above this many memories the dense scan runs on a sign-bit shortlist.
    EXACT_MAX = 8_192
    #: Codes the Hamming shortlist keeps per wanted result, and at least (see :meth:`dense_topk`).
    SHORTLIST_PER_K = 20
    SHORTLIST_MIN = 1_000
    #: With a vector index (``ann``): positions it is asked for per wanted result (scored exactly).
    ANN_PER_K = 6
    # _nearest_codes: guess the cut from a strided sample of this many codes when there are over
    # _SAMPLE_FROM x m of them, aiming at _SAMPLE_MARGIN x m (speed only: the result is exact)
    _SAMPLE_SIZE = 8_192
    _SAMPLE_FROM = 16
    _SAMPLE_MARGIN = 2.0

    def __init__(self, dim: int, *, max_entity_fanout: int = 64, ann: VectorIndexFactory | None = None) -> None:
        self.dim = dim
        self.max_entity_fanout = max_entity_fanout
        # approximate nearest-neighbour shortlist above EXACT_MAX memories, built on first need (see dense_topk)
        self._ann_factory = ann
        self._ann: VectorIndex | None = None
        # a list; after a snapshot load a LazyRecords that builds each Record on first access (see _snapshot)
        self.records: MutableSequence[Record] = []
        self.pos: dict[str, int] = {}
        self._emb = np.zeros((0, dim), dtype=np.float32)
        self._ts = np.zeros(0, dtype=np.float64)
        self._dl = np.zeros(0, dtype=np.float32)
        self._time = np.zeros(0, dtype=bool)
        self._error = np.zeros(0, dtype=bool)
        self._asks = np.zeros(0, dtype=bool)
        self._bare = np.zeros(0, dtype=np.int8)  # see _bare_kind
        self._noans = np.zeros(0, dtype=bool)
        self._states = np.zeros(0, dtype=bool)  # see _states_own
        self._change = np.zeros(0, dtype=bool)  # see _states_change
        self._dispute = np.zeros(0, dtype=np.int8)  # see _dispute_kind
        self._rcode = np.zeros(0, dtype=np.int64)
        self._role_code: dict[str, int] = {}
        self._scode = np.zeros(0, dtype=np.int64)
        self._tok = np.zeros(0, dtype=np.int32)  # token count cache, 0 = not counted yet
        # sign bits of each vector, word-major (words, capacity): Hamming prefilter for large indexes
        self._words = (-(-dim // 8) + 7) // 8
        self._bits = np.zeros((self._words, 0), dtype=np.uint64)
        self._session_code: dict[str, int] = {}
        self._n_emb = 0
        # term -> (positions, tfs) as growing lists; arrays materialised lazily per term
        self._post: dict[str, tuple[list[int], list[int]]] = {}
        self._post_np: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._ent_np: dict[str, np.ndarray] = {}
        self._ent: dict[str, list[int]] = defaultdict(list)
        # word -> the entity keys of two words or more holding it, and "" -> [number of keys it was built from]: a
        # cache (a snapshot restores it empty; built in full on first use, then kept up to date by ``add``)
        self._long_keys_np: dict[str, list[str]] = {}
        self._cooc: dict[str, Counter[str]] = defaultdict(Counter)
        self._sessions: dict[str, list[int]] = defaultdict(list)
        self._dirty_sessions: set[str] = set()
        self._prev = np.zeros(0, dtype=np.int64)
        self._next = np.zeros(0, dtype=np.int64)
        # sentence vectors of multi-sentence turns (see sentence_parts): rows _pstart[p] .. + _pcount[p] of
        # _part_emb belong to position p; a turn's dense relevance is the best of its own and its sentences'
        self._pstart = np.zeros(0, dtype=np.int64)
        self._pcount = np.zeros(0, dtype=np.int32)
        self._part_emb = np.zeros((0, dim), dtype=np.float32)
        self._part_owner = np.zeros(0, dtype=np.int64)
        self._n_parts = 0

    # ------------------------------------------------------------------ write
    def __len__(self) -> int:
        return len(self.records)

    def __contains__(self, rid: object) -> bool:
        return rid in self.pos

    @property
    def embeddings(self) -> np.ndarray:
        return self._emb[: self._n_emb]

    @property
    def timestamps(self) -> np.ndarray:
        return self._ts[: len(self.records)]

    @property
    def has_time(self) -> np.ndarray:
        """Per position: the text mentions a time (date, weekday, "last week"...)."""
        return self._time[: len(self.records)]

    @property
    def has_error(self) -> np.ndarray:
        """Per position: the text shows an error (exception name, error code, traceback...)."""
        return self._error[: len(self.records)]

    def answered(self, positions: np.ndarray) -> np.ndarray:
        """Per given position: the turn asks something and the next turn, by another speaker, answers it."""
        self._link()
        p = np.asarray(positions, dtype=np.int64)
        nxt = self._next[p]
        ok = nxt >= 0
        other = self._rcode[np.maximum(nxt, 0)] != self._rcode[p]
        return self._asks[p] & ok & other

    def bare_reactions(self, positions: np.ndarray) -> np.ndarray:
        """Per given position: the turn is a bare acknowledgement or reaction ("Got it.", "Welcome back!",
        "thanks!"), not a bare yes / no that answers the question before it (the previous turn of its session,
        by another speaker, asks something: "Did Dave confirm?" / "Yes!")."""
        self._link()
        p = np.asarray(positions, dtype=np.int64)
        prev = self._prev[p]
        ok = prev >= 0
        q = np.maximum(prev, 0)
        answers = ok & self._asks[q] & (self._rcode[q] != self._rcode[p]) & (self._bare[p] == 2)
        return (self._bare[p] > 0) & ~answers

    def asks(self, positions: np.ndarray) -> np.ndarray:
        """Per given position: the turn asks something (a question or a request)."""
        return self._asks[np.asarray(positions, dtype=np.int64)]

    def states_own(self, positions: np.ndarray) -> np.ndarray:
        """Per given position: the turn states something about the speaker ("Our internet is with Xfinity. Any
        ideas?"), even if it also asks something."""
        return self._states[np.asarray(positions, dtype=np.int64)]

    def changes(self, positions: np.ndarray) -> np.ndarray:
        """Per given position: the turn states that something changed ("the sync is moving to 3:30pm", "her dose
        is going up to 3 units"), not a change only considered ("thinking about switching")."""
        return self._change[np.asarray(positions, dtype=np.int64)]

    def replaced(self, position: int) -> frozenset[str]:
        """What the user's change at ``position`` says it replaces ("eureka" for "I sold the Eureka and bought a
        Mahlkönig E65S"), as casefolded words; empty for any other turn."""
        rec = self.records[position]
        return _replaced_words(rec.text) if self._change[position] and rec.role == "user" else _NOTHING

    def naming(self, positions: np.ndarray, words: Iterable[str]) -> np.ndarray:
        """Per given position: the turn holds one of ``words`` (casefolded words, matched as BM25 terms)."""
        p = np.asarray(positions, dtype=np.int64)
        hit = np.zeros(p.size, dtype=bool)
        for w in words:
            post = self._post.get(_stem(w))
            if post is not None:
                hit |= np.isin(p, post[0])
        return hit

    def non_answers(self, positions: np.ndarray) -> np.ndarray:
        """Per given position: a reply that says it does not know ("I'm not sure, you haven't told me...") or only
        hands something over ("Here you go.")."""
        return self._noans[np.asarray(positions, dtype=np.int64)]

    def disputed(self, positions: np.ndarray) -> np.ndarray:
        """Per given position: a chatbot's reply (role ``"assistant"``) that the user's next turn of the session
        disputes ("that's wrong, it's Thursday", "no, I meant the race"; a bare "no, ..." only when the reply did
        not ask something)."""
        p = np.asarray(positions, dtype=np.int64)
        bot = self._role_code.get("assistant")
        if bot is None:  # no chatbot reply stored (two people talking, a user-turns-only import): nothing to dispute
            return np.zeros(p.size, dtype=bool)
        self._link()
        nxt = self._next[p]
        kind = np.where(nxt >= 0, self._dispute[np.maximum(nxt, 0)], 0)
        return (self._rcode[p] == bot) & ((kind == 2) | ((kind == 1) & ~self._asks[p]))

    def disputing(self, positions: np.ndarray) -> np.ndarray:
        """Per given position: the user's turn disputes the reply before it (see :meth:`disputed`) and another
        speaker's turn follows it: that turn answers the dispute ("Sorry! The Wharfedale Wheeler is on 7 June.")."""
        p = np.asarray(positions, dtype=np.int64)
        if "assistant" not in self._role_code:
            return np.zeros(p.size, dtype=bool)
        self._link()
        prev, nxt = self._prev[p], self._next[p]
        has = (prev >= 0) & (nxt >= 0)
        other = self._rcode[np.maximum(nxt, 0)] != self._rcode[p]
        return has & other & self.disputed(np.maximum(prev, 0))

    def rules_out(self, positions: np.ndarray, terms: frozenset[str]) -> np.ndarray:
        """Per given position: the turn is a dispute that rules out one of ``terms`` (index terms: "no, I meant the
        vet appointment, not mum's" rules out "mum")."""
        p = np.asarray(positions, dtype=np.int64)
        out = np.zeros(p.size, dtype=bool)
        if not terms:
            return out
        for i, pos in enumerate(p.tolist()):
            if pos >= 0 and self._dispute[pos]:
                out[i] = not _ruled_out(self.records[pos].text)[0].isdisjoint(terms)
        return out

    def next_positions(self, positions: np.ndarray) -> np.ndarray:
        """The next turn of each given position in its session (-1 for the last)."""
        self._link()
        return self._next[np.asarray(positions, dtype=np.int64)]

    def previous_positions(self, positions: np.ndarray) -> np.ndarray:
        """The previous turn of each given position in its session (-1 for the first)."""
        self._link()
        return self._prev[np.asarray(positions, dtype=np.int64)]

    @property
    def session_codes(self) -> np.ndarray:
        """Per position: a small integer standing for the record's session."""
        return self._scode[: len(self.records)]

    def add(self, records: Sequence[Record], embeddings: np.ndarray,
            parts: Sequence[np.ndarray | None] | None = None) -> list[int]:
        """Add records not yet indexed; returns their positions (existing ones too).

        Args:
            records: The records.
            embeddings: One vector per record.
            parts: Per record, the vectors of its sentences (:func:`sentence_parts`; ``None`` or an empty
                array for none), or None: then read from each record's metadata (``PARTS_KEY``, as the
                engine stores them), which the indexed record no longer carries.
        """
        out: list[int] = []
        new: list[tuple[Record, np.ndarray]] = []
        new_parts: list[np.ndarray | None] = []
        for i, (rec, vec) in enumerate(zip(records, embeddings)):
            p = self.pos.get(rec.id)
            if p is None:
                p = len(self.records) + len(new)
                self.pos[rec.id] = p
                if PARTS_KEY in rec.metadata:  # as the store holds it: the vectors move into the index
                    stored = decode_parts(rec.metadata[PARTS_KEY], self.dim)
                    rec = without_parts(rec)
                else:
                    stored = None
                new.append((rec, vec))
                new_parts.append(stored if parts is None else parts[i])
            out.append(p)
        if not new:
            return out
        start = len(self.records)
        self._grow(start + len(new))
        self._add_parts(start, new_parts)
        self._bits[:, start:start + len(new)] = self._sign_bits(np.stack([v for _, v in new])).T
        self._tok[start:start + len(new)] = 0
        for off, (rec, vec) in enumerate(new):
            p = start + off
            self.records.append(rec)
            self._emb[p] = vec
            self._ts[p] = rec.timestamp
            self._time[p] = _TIME.search(rec.text) is not None
            self._error[p] = _ERROR.search(rec.text) is not None
            self._asks[p] = _ASKS.search(rec.text) is not None
            self._bare[p] = _bare_kind(rec.text)
            self._noans[p] = _is_non_answer(rec.text, rec.role) or _is_handover(rec.text, rec.role)
            self._states[p] = _states_own(rec.text)
            self._change[p] = _states_change(rec.text)
            self._dispute[p] = _dispute_kind(rec.text, rec.role)
            self._rcode[p] = self._role_code.setdefault(rec.role, len(self._role_code))
            self._scode[p] = self._session_code.setdefault(rec.session_id, len(self._session_code))
            terms = Counter(tokenize(rec.text))
            if self._dispute[p]:
                # what a dispute rules out is not what it is about: "no, I meant the race, not sports day" does not
                # match "when is sports day?" by its words
                for t in _ruled_out(rec.text)[0]:
                    terms.pop(t, None)
            self._dl[p] = sum(terms.values())
            for t, tf in terms.items():
                lst = self._post.get(t)
                if lst is None:
                    lst = self._post[t] = ([], [])
                lst[0].append(p)
                lst[1].append(tf)
                self._post_np.pop(t, None)
            keys = rec.entities[:24]  # cap: co-occurrence is quadratic in entities per turn
            long_keys = self._long_keys_np
            for k in keys:
                if long_keys and " " in k and k not in self._ent:
                    for w in set(k.split()):
                        long_keys.setdefault(w, []).append(k)
                self._ent[k].append(p)
                self._ent_np.pop(k, None)
                c = self._cooc[k]
                for other in keys:
                    if other != k:
                        c[other] += 1
            self._sessions[rec.session_id].append(p)
            self._dirty_sessions.add(rec.session_id)
        if self._long_keys_np:  # kept up to date above: its key count too
            self._long_keys_np[""] = [str(len(self._ent))]
        self._n_emb = len(self.records)
        return out

    def _grow(self, n: int) -> None:
        cap = self._emb.shape[0]
        if n <= cap:
            return
        new_cap = max(n, int(cap * 1.5) + 64)
        emb = np.zeros((new_cap, self.dim), dtype=np.float32)
        emb[:cap] = self._emb
        self._emb = emb
        self._ts = np.resize(self._ts, new_cap)
        self._dl = np.resize(self._dl, new_cap)
        self._time = np.resize(self._time, new_cap)
        self._error = np.resize(self._error, new_cap)
        self._asks = np.resize(self._asks, new_cap)
        self._bare = np.resize(self._bare, new_cap)
        self._noans = np.resize(self._noans, new_cap)
        self._states = np.resize(self._states, new_cap)
        self._change = np.resize(self._change, new_cap)
        self._dispute = np.resize(self._dispute, new_cap)
        self._rcode = np.resize(self._rcode, new_cap)
        self._scode = np.resize(self._scode, new_cap)
        self._tok = np.resize(self._tok, new_cap)
        self._pstart = np.resize(self._pstart, new_cap)
        self._pcount = np.resize(self._pcount, new_cap)
        bits = np.zeros((self._words, new_cap), dtype=np.uint64)
        bits[:, :cap] = self._bits[:, :cap]
        self._bits = bits

    def _add_parts(self, start: int, parts: Sequence[np.ndarray | None]) -> None:
        """Store the sentence vectors of the positions from ``start`` on (one entry per new position)."""
        counts = np.asarray([0 if v is None else len(v) for v in parts], dtype=np.int64)
        end = start + len(parts)
        self._pcount[start:end] = counts
        self._pstart[start:end] = self._n_parts + np.cumsum(counts) - counts
        total = int(counts.sum())
        if not total:
            return
        need = self._n_parts + total
        if need > self._part_emb.shape[0]:
            cap = max(need, int(self._part_emb.shape[0] * 1.5) + 64)
            emb = np.zeros((cap, self.dim), dtype=np.float32)
            emb[: self._n_parts] = self._part_emb[: self._n_parts]
            owner = np.zeros(cap, dtype=np.int64)
            owner[: self._n_parts] = self._part_owner[: self._n_parts]
            self._part_emb, self._part_owner = emb, owner
        self._part_emb[self._n_parts:need] = np.concatenate([v for v in parts if v is not None and len(v)])
        self._part_owner[self._n_parts:need] = np.repeat(np.arange(start, end, dtype=np.int64), counts)
        self._n_parts = need

    def parts_of(self, position: int) -> np.ndarray:
        """The sentence vectors stored for ``position`` (``(0, dim)`` for none)."""
        a = int(self._pstart[position])
        return self._part_emb[a: a + int(self._pcount[position])]

    def remove(self, ids: Iterable[str]) -> int:
        """Drop records by id (rebuilds the index); returns how many were dropped."""
        drop = {i for i in ids if i in self.pos}
        if not drop:
            return 0
        keep = [(r, self._emb[p], self.parts_of(p).copy()) for p, r in enumerate(self.records) if r.id not in drop]
        self.__init__(self.dim, max_entity_fanout=self.max_entity_fanout, ann=self._ann_factory)  # type: ignore[misc]
        if keep:
            self.add([r for r, _, _ in keep], np.stack([v for _, v, _ in keep]), [q for _, _, q in keep])
        return len(drop)

    # ------------------------------------------------------------------ graph
    def _link(self) -> None:
        """Recompute NEXT edges of sessions that changed since the last query."""
        n = len(self.records)
        if self._prev.shape[0] != n:
            prev = np.full(n, -1, dtype=np.int64)
            nxt = np.full(n, -1, dtype=np.int64)
            m = min(self._prev.shape[0], n)
            prev[:m] = self._prev[:m]
            nxt[:m] = self._next[:m]
            self._prev, self._next = prev, nxt
        for sid in self._dirty_sessions:
            members = self._sessions[sid]
            members.sort(key=lambda p: (self.records[p].timestamp, self.records[p].seq))
            arr = np.asarray(members, dtype=np.int64)
            self._prev[arr] = -1
            self._next[arr] = -1
            if arr.size > 1:
                self._prev[arr[1:]] = arr[:-1]
                self._next[arr[:-1]] = arr[1:]
        self._dirty_sessions.clear()

    def session_positions(self, session_id: str) -> np.ndarray:
        """Positions of a session's turns in conversation order."""
        self._link()
        return np.asarray(self._sessions.get(session_id, []), dtype=np.int64)

    def neighbours(self, seeds: np.ndarray, seed_scores: np.ndarray, depth: int,
                   *, decay: float = 0.5, frontier_cap: int = 64) -> tuple[np.ndarray, np.ndarray]:
        """Graph expansion from ``seeds`` over NEXT and shared-entity edges.

        Breadth-first to ``depth`` hops; a node's score is the best
        ``seed_score * decay**hops`` reaching it, plus a connectivity bonus
        for nodes reached from several places.

        Returns:
            (graph score per position, hop count per position; -1 = unreached)
        """
        n = len(self.records)
        score = np.zeros(n, dtype=np.float32)
        hops = np.full(n, -1, dtype=np.int64)
        if n == 0 or depth <= 0 or seeds.size == 0:
            return score, hops
        self._link()
        conn = np.zeros(n, dtype=np.float32)
        hops[seeds] = 0
        frontier, fscore = seeds.astype(np.int64), seed_scores.astype(np.float32)
        for h in range(1, depth + 1):
            parts = [self._prev[frontier], self._next[frontier]]
            sparts = [fscore * decay, fscore * decay]
            # Shared rare entities: common ones (speaker names) would link everything.
            for p, s in zip(frontier[:16].tolist(), fscore[:16].tolist()):
                for key in self.records[p].entities:
                    plist = self._ent.get(key)
                    if plist and len(plist) <= self.max_entity_fanout:
                        parts.append(np.asarray(plist, dtype=np.int64))
                        sparts.append(np.full(len(plist), s * decay * 0.6, dtype=np.float32))
            nb = np.concatenate(parts)
            sc = np.concatenate(sparts)
            ok = nb >= 0
            nb, sc = nb[ok], sc[ok]
            if nb.size == 0:
                break
            np.maximum.at(score, nb, sc)
            np.add.at(conn, nb, 1.0)
            fresh = np.unique(nb[hops[nb] < 0])
            hops[fresh] = h
            if fresh.size > frontier_cap:
                fresh = fresh[np.argpartition(-score[fresh], frontier_cap - 1)[:frontier_cap]]
            frontier, fscore = fresh, score[fresh]
        score[seeds] = 0.0  # seeds score by their own components, not by being seeds
        bonus = np.minimum(np.log1p(np.maximum(conn - 1.0, 0.0)) * 0.1, 0.3)
        return np.minimum(score * (1.0 + bonus), 1.0), hops

    def expand(self, seeds: np.ndarray, depth: int) -> np.ndarray:
        """Positions within ``depth`` NEXT/PREV hops of ``seeds`` (seeds included), sorted."""
        self._link()
        out = [seeds.astype(np.int64)]
        frontier = seeds.astype(np.int64)
        for _ in range(depth):
            nb = np.concatenate([self._prev[frontier], self._next[frontier]])
            frontier = np.unique(nb[nb >= 0])
            out.append(frontier)
        return np.unique(np.concatenate(out))

    def context(self, positions: np.ndarray, base: np.ndarray, depth: int,
                *, decay: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
        """Support each scored position gets from its conversation neighbours.

        A chat turn is often understood only with the turns around it (the
        question it answers, the remark it follows up), so a memory whose
        neighbour matches the query is itself a likely answer. Along NEXT/PREV
        edges, the context of a position is the best ``base`` score within
        ``depth`` hops, times ``decay`` per hop beyond the first. Only
        positions in ``positions`` (sorted, unique) contribute.

        Returns:
            (context per position, hop count of the best neighbour; 0 = none)
        """
        self._link()
        m = positions.size
        ctx = np.zeros(m, dtype=np.float32)
        hops = np.zeros(m, dtype=np.int64)
        if m == 0 or depth <= 0:
            return ctx, hops
        ps = _slots(positions, self._prev[positions])
        ns = _slots(positions, self._next[positions])
        cur = base.astype(np.float32)
        mult = 1.0
        for h in range(1, depth + 1):
            a = np.where(ps >= 0, cur[np.maximum(ps, 0)], 0.0)
            b = np.where(ns >= 0, cur[np.maximum(ns, 0)], 0.0)
            cur = np.maximum(a, b).astype(np.float32)
            val = cur * mult
            better = val > ctx
            hops[better] = h
            ctx = np.maximum(ctx, val)
            mult *= decay
        return ctx, hops

    def session_context(self, positions: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """Per scored position: the best score of another scored turn of its session.

        A session that holds several matching turns is about the query's
        topic; its turns support each other.
        """
        m = positions.size
        if m == 0:
            return np.zeros(0, dtype=np.float32)
        codes = self._scode[positions]
        order = np.lexsort((-scores, codes))  # by session, best first
        c_sorted = codes[order]
        first = np.ones(m, dtype=bool)
        first[1:] = c_sorted[1:] != c_sorted[:-1]
        starts = np.flatnonzero(first)
        group = np.cumsum(first) - 1
        best = scores[order][starts]
        second = np.zeros(starts.size, dtype=np.float32)
        has_two = np.append(starts[1:], m) - starts > 1
        second[has_two] = scores[order][starts[has_two] + 1]
        out_sorted = np.where(first, second[group], best[group])
        out = np.empty(m, dtype=np.float32)
        out[order] = out_sorted
        return out

    # ------------------------------------------------------------------ scoring
    def dense(self, qvec: np.ndarray, positions: np.ndarray | None = None) -> np.ndarray:
        """Cosine similarity of ``qvec`` to every (or the given) position's vector.

        A turn with sentence vectors scores the best of its own vector and its
        sentences'.
        """
        q = np.asarray(qvec, dtype=np.float32)
        sims = self._own_dense(q, positions)
        if self._n_parts:
            self._best_sentence(q, positions, sims)
        return sims

    def dense_with_own(self, qvec: np.ndarray, positions: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(:meth:`dense`'s similarities, the turns' own-vector ones) from one scan: the same array when no turn
        here has sentence vectors."""
        q = np.asarray(qvec, dtype=np.float32)
        own = self._own_dense(q, positions)
        if not self._n_parts:
            return own, own
        best = own.copy()
        self._best_sentence(q, positions, best)
        return best, own

    def _own_dense(self, q: np.ndarray, positions: np.ndarray | None) -> np.ndarray:
        emb = self.embeddings if positions is None else self.embeddings[positions]
        # einsum runs in the calling thread: a BLAS matvec wakes a thread pool, which on a
        # busy 2-core machine costs more (milliseconds) than the product itself
        return np.einsum("ij,j->i", emb, q)

    def _best_sentence(self, q: np.ndarray, positions: np.ndarray | None, sims: np.ndarray) -> None:
        """Raise each similarity in ``sims`` to its turn's best sentence's (in place)."""
        if positions is None:
            n = self._n_parts
            np.maximum.at(sims, self._part_owner[:n], np.einsum("ij,j->i", self._part_emb[:n], q))
            return
        pos = np.asarray(positions, dtype=np.int64)
        counts = self._pcount[pos].astype(np.int64)
        sel = np.flatnonzero(counts)
        if not sel.size:
            return
        c = counts[sel]
        # the rows of each selected position's sentences, in one flat run: start + 0 .. count - 1
        first = np.repeat(self._pstart[pos[sel]] - (np.cumsum(c) - c), c)
        rows = first + np.arange(int(c.sum()), dtype=np.int64)
        np.maximum.at(sims, np.repeat(sel, c), np.einsum("ij,j->i", self._part_emb[rows], q))

    def _sign_bits(self, vectors: np.ndarray) -> np.ndarray:
        """(m, words) uint64 sign codes of ``vectors``."""
        packed = np.packbits(np.asarray(vectors) > 0, axis=1)
        pad = self._words * 8 - packed.shape[1]
        if pad:
            packed = np.pad(packed, ((0, 0), (0, pad)))
        return np.ascontiguousarray(packed).view(np.uint64)

    def dense_topk(self, qvec: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Cosine top-``k``: (positions, similarities), best first.

        The user's vectors are all in memory, so a scan here is both more
        precise and faster than a metadata-filtered store query. Up to
        ``EXACT_MAX`` vectors the scan is exact. Above, a shortlist is scored
        exactly: the ``ANN_PER_K * k`` positions a vector index returns when
        the index was given one (``ann``), else the ``max(20 k, 1000)``
        nearest sign codes in Hamming distance (a 32x smaller scan). On the
        speed benchmark's 100K MiniLM vectors (200 real questions, top 50) the
        usearch int8 index's shortlist keeps 99.7% of the exact top 50 and
        99.7% of the top 10 in 0.31 ms, the Hamming one 99.0% / 99.7% in
        0.85 ms (the gather of scattered rows is what it costs).
        """
        n = len(self.records)
        if n == 0 or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        k = min(k, n)
        shortlist = max(self.SHORTLIST_PER_K * k, self.SHORTLIST_MIN)
        if n <= self.EXACT_MAX or shortlist >= n:
            pos = np.arange(n, dtype=np.int64)
            sims = self.dense(qvec)
        else:
            near = self._ann_shortlist(qvec, self.ANN_PER_K * k)
            pos = near if near is not None and near.size >= k else self._hamming_shortlist(qvec, shortlist)
            sims = self.dense(qvec, pos)
        part = np.argpartition(-sims, k - 1)[:k] if k < sims.size else np.arange(sims.size)
        part = part[np.argsort(-sims[part], kind="stable")]
        return pos[part], sims[part]

    # ------------------------------------------------------------------ vector index
    @property
    def vector_index(self) -> VectorIndex | None:
        """The approximate index over the vectors, or None (none given, or not built yet)."""
        return self._ann

    @property
    def vector_index_factory(self) -> VectorIndexFactory | None:
        """What makes the vector index (None: the built-in sign-bit shortlist serves)."""
        return self._ann_factory

    def sync_vector_index(self) -> VectorIndex | None:
        """The vector index holding every position, built or topped up now; None without one or at or under
        ``EXACT_MAX`` memories (the exact scan is used there)."""
        n = len(self.records)
        if self._ann_factory is None or n <= self.EXACT_MAX:
            return None
        ann = self._ann
        try:
            if ann is None or len(ann) > n:
                ann = self._ann = self._ann_factory.create(self.dim)
            have = len(ann)
            if have < n:
                ann.add(np.arange(have, n, dtype=np.int64), self._emb[have:n])
        except Exception as exc:  # noqa: BLE001 - an accelerator must not break search: the Hamming path serves
            self._drop_vector_index(exc)
            return None
        return ann

    def attach_vector_index(self, ann: VectorIndex) -> None:
        """Use ``ann`` (restored from a snapshot) as the vector index; positions it lacks are added on use."""
        self._ann = ann

    def _ann_shortlist(self, qvec: np.ndarray, m: int) -> np.ndarray | None:
        ann = self.sync_vector_index()
        if ann is None:
            return None
        try:
            pos = np.asarray(ann.search(np.asarray(qvec, dtype=np.float32), m), dtype=np.int64)
        except Exception as exc:  # noqa: BLE001 - see sync_vector_index
            self._drop_vector_index(exc)
            return None
        return pos[(pos >= 0) & (pos < len(self.records))]

    def _drop_vector_index(self, exc: Exception) -> None:
        warnings.warn(f"chatrecall: vector index {self._ann_factory!r} failed ({type(exc).__name__}: {exc}); "
                      "this user's searches use the built-in sign-bit shortlist", RuntimeWarning, stacklevel=3)
        self._ann = None
        self._ann_factory = None

    def dense_topk_among(self, qvec: np.ndarray, positions: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Cosine top-``k`` among ``positions``: (positions, similarities), best first.

        Exact up to ``EXACT_MAX`` positions; above, on a sign-bit shortlist of
        them, as :meth:`dense_topk` (a time window or a filter that holds most of
        a 100K-memory user no longer gathers every vector: 45 ms -> about 1 ms).
        """
        pos = np.asarray(positions, dtype=np.int64)
        if pos.size == 0 or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        k = min(k, pos.size)
        shortlist = max(self.SHORTLIST_PER_K * k, self.SHORTLIST_MIN)
        if pos.size > self.EXACT_MAX and shortlist < pos.size:
            pos = pos[self._hamming_shortlist(qvec, shortlist, pos)]
        sims = self.dense(qvec, pos)
        part = np.sort(np.argpartition(-sims, k - 1)[:k]) if k < sims.size else np.arange(sims.size)
        part = part[np.argsort(-sims[part], kind="stable")]  # ties in the given order
        return pos[part], sims[part]

    def _hamming_shortlist(self, qvec: np.ndarray, m: int, among: np.ndarray | None = None) -> np.ndarray:
        """The ``m`` positions (indexes into ``among`` when given) whose sign codes are nearest to the
        query's, ties broken by order."""
        n = len(self.records)
        qb = self._sign_bits(np.asarray(qvec, dtype=np.float32)[None, :])[0]
        bits = self._bits[:, :n] if among is None else self._bits[:, among]
        dist = np.bitwise_count(bits[0] ^ qb[0]).astype(np.uint16)
        for w in range(1, self._words):
            dist += np.bitwise_count(bits[w] ^ qb[w])
        return self._nearest_codes(dist, m)

    def _nearest_codes(self, dist: np.ndarray, m: int) -> np.ndarray:
        """Positions of the ``m`` smallest Hamming distances, ties by position (ascending positions
        for those under the cut, then the first ties).

        The cut is the smallest distance holding ``m`` codes: a histogram over 0..bits, no sort.
        On a large user the histogram runs on the codes at or under a cut guessed from a strided
        sample (a bound with margin); that subset holds every code at or under the true cut, in
        order, so the result is the same as from the full histogram, which is the fallback when
        the guess holds fewer than ``m``.
        """
        bins = self._words * 64 + 1
        sel: np.ndarray | None = None
        if dist.size > self._SAMPLE_FROM * m:
            step = dist.size // self._SAMPLE_SIZE or 1
            sample = dist[::step]
            want = int(m * self._SAMPLE_MARGIN * sample.size / dist.size) + 8
            guess = int(np.searchsorted(np.cumsum(np.bincount(sample, minlength=bins)), want))
            sel = np.flatnonzero(dist <= guess)
            if sel.size < m:
                sel = None
        d = dist if sel is None else dist[sel]
        cum = np.cumsum(np.bincount(d, minlength=bins))
        cut = int(np.searchsorted(cum, m))
        inside = np.flatnonzero(d < cut)
        tie = np.flatnonzero(d == cut)[: m - inside.size]
        out = np.concatenate([inside, tie])
        return out if sel is None else sel[out]

    def token_count(self, position: int, count: Callable[[str], int]) -> int:
        """Tokens of the memory at ``position``, counted once and cached."""
        t = int(self._tok[position])
        if t == 0:
            t = max(int(count(self.records[position].text)), 1)
            self._tok[position] = t
        return t

    def holds_term(self, term: str) -> bool:
        """Whether any indexed turn holds the index term ``term`` (a :func:`tokenize` term)."""
        return term in self._post

    def _postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        arr = self._post_np.get(term)
        if arr is None:
            lst = self._post.get(term)
            if lst is None:
                return None
            arr = (np.asarray(lst[0], dtype=np.int64), np.asarray(lst[1], dtype=np.float32))
            self._post_np[term] = arr
        return arr

    def repeating(self, pins: Iterable[str]) -> np.ndarray:
        """Sorted positions of the turns that :func:`repeat <repeats>` one of ``pins``: only the turns holding
        every index term of a pin are read (the intersection of its posting lists), not every memory."""
        found: set[int] = set()
        for pin in pins:
            posts = [self._postings(t) for t in set(tokenize(pin))]
            if not posts or any(p is None for p in posts):
                continue  # a pin of stopwords only, or a term no turn holds: no turn repeats it
            docs = sorted((p[0] for p in posts if p is not None), key=len)
            both = docs[0]
            for d in docs[1:]:
                both = np.intersect1d(both, d, assume_unique=True)
            found.update(q for q in both.tolist() if q < len(self.records) and repeats(self.records[q].text, pin))
        return np.asarray(sorted(found), dtype=np.int64)

    def bm25(self, query: str) -> np.ndarray:
        """Okapi BM25 score of every position for ``query`` (0 where no term matches)."""
        n = len(self.records)
        scores = np.zeros(n, dtype=np.float32)
        if n == 0:
            return scores
        dl = self._dl[:n]
        avgdl = float(dl.mean()) or 1.0
        k_base, k_len = self.K1 * (1.0 - self.B), self.K1 * self.B / avgdl
        for term, qtf in Counter(tokenize(query)).items():
            post = self._postings(term)
            if post is None:
                continue
            docs, tf = post
            df = docs.size
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5)) * _ANSWER_TYPE.get(term, 1.0)
            # length norm of the posting's positions only (not a pass over every memory);
            # a posting list holds each position once, so a fancy-index add is exact
            scores[docs] += (qtf * idf * (self.K1 + 1.0)) * tf / (tf + (k_base + k_len * dl[docs]))
        return scores

    def bm25_ideal(self, query: str) -> float:
        """BM25 of a turn of average length that holds every query term once: ``sum(qtf * idf)``.

        Dividing by it scales keyword scores by how much of the query a turn
        covers, not by the best turn's score: a turn that only shares one
        common word of a long query no longer scores 1.0.
        """
        n = len(self.records)
        total = 0.0
        for term, qtf in Counter(tokenize(query)).items():
            post = self._postings(term)
            if post is None:
                continue
            df = post[0].size
            total += qtf * math.log(1.0 + (n - df + 0.5) / (df + 0.5)) * _ANSWER_TYPE.get(term, 1.0)
        return total

    def has_role(self, positions: np.ndarray, role: str) -> np.ndarray:
        """Per given position: the turn was said by ``role`` (e.g. ``"assistant"``)."""
        code = self._role_code.get(role)
        p = np.asarray(positions, dtype=np.int64)
        if code is None:
            return np.zeros(p.size, dtype=bool)
        return self._rcode[p] == code

    def entity_scores(self, keys: Sequence[str], *, related_k: int = 5) -> tuple[np.ndarray, list[str]]:
        """Entity component per position, and the related entities used.

        A memory scores the mean, over the query's known entities, of
        ``idf / max_idf`` of those it mentions: a rare shared entity counts
        almost fully, one that is everywhere (a speaker's name) almost not.
        Memories mentioning entities that often co-occur with the query's
        entities score half of that.
        """
        n = len(self.records)
        scores = np.zeros(n, dtype=np.float32)
        related: list[str] = []
        if n == 0 or not keys:
            return scores, related
        known = [k for k in dict.fromkeys(keys) if k in self._ent]
        if not known:
            return scores, related
        max_idf = math.log(1.0 + n)
        weight = {k: math.log(1.0 + n / len(self._ent[k])) / max_idf / len(known) for k in known}
        for k in known:
            scores[self._entity_positions(k)] += weight[k]  # a posting holds a position once
        for k in known:
            for other, _ in self._cooc[k].most_common(related_k):
                if other in weight or other in related:
                    continue
                related.append(other)
                if len(self._ent[other]) <= self.max_entity_fanout:
                    pos = self._entity_positions(other)
                    cur = scores[pos]
                    scores[pos] = np.where(cur > 0, cur, np.maximum(cur, 0.5 * weight[k]))
        return np.minimum(scores, 1.0, out=scores), related

    def _entity_positions(self, key: str) -> np.ndarray:
        arr = self._ent_np.get(key)
        if arr is None:
            arr = self._ent_np[key] = np.asarray(self._ent[key], dtype=np.int64)
        return arr

    def known(self, keys: Iterable[str], exclude: Iterable[int] = ()) -> list[str]:
        """The entity keys among ``keys`` that some memory mentions, as itself or as part of a longer name or by a
        part of it (:func:`overlapping_keys`: "acme" where a memory says "Acme Logistics"; dict lookups, no search).

        Args:
            keys: Entity keys.
            exclude: Positions whose mentions do not count (the message itself, when the caller stored it
                before asking).
        """
        skip = set(exclude)
        return [k for k in dict.fromkeys(keys) if self._mentioned(k, skip) or self._named_in_part(k, skip)]

    def _mentioned(self, key: str, skip: set[int]) -> bool:
        """Some memory not at a ``skip`` position holds the entity key ``key``."""
        found = self._ent.get(key)
        return found is not None and (not skip or any(p not in skip for p in found))

    def _named_in_part(self, key: str, skip: set[int]) -> bool:
        """Some memory (not at a ``skip`` position) holds an entity key other than ``key`` that
        :func:`overlapping_keys` matches with it: a longer name holding it, or a part of it stored as a name."""
        words = key.split()
        if not words:
            return False
        for i in range(len(words)):  # its parts of one word or more, stored as names
            for j in range(i + 1, len(words) + 1):
                part = " ".join(words[i:j])
                if part != key and self._mentioned(part, skip):
                    return True
        long_keys = self._long_keys()
        # long names holding its rarest word (a name holding the key holds every word of it)
        longer = min((long_keys.get(w, ()) for w in words), key=len)
        return any(k != key and _overlaps(key, k) and self._mentioned(k, skip) for k in longer)

    def _long_keys(self) -> dict[str, list[str]]:
        """Word -> the stored entity keys of two words or more holding it (built once per process, then kept up to
        date by :meth:`add`; ``""`` holds the key count it was built at, so a stale copy is rebuilt)."""
        cache = self._long_keys_np
        if cache.get("") != [str(len(self._ent))]:
            cache.clear()
            for k in self._ent:
                if " " in k:
                    for w in set(k.split()):
                        cache.setdefault(w, []).append(k)
        cache[""] = [str(len(self._ent))]
        return cache

    def recency(self, now: float, half_life_s: float, positions: np.ndarray | None = None) -> np.ndarray:
        """exp(-ln2 * age / half_life) per (given) position, 1.0 for the newest possible."""
        ts = self.timestamps if positions is None else self.timestamps[positions]
        age = np.maximum(now - ts, 0.0)
        return np.exp(-math.log(2.0) * age / half_life_s).astype(np.float32)


def _slots(sorted_positions: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Index of each target in ``sorted_positions``, -1 where absent (or target < 0)."""
    if sorted_positions.size == 0:
        return np.full(targets.size, -1, dtype=np.int64)
    idx = np.searchsorted(sorted_positions, targets)
    idx = np.minimum(idx, sorted_positions.size - 1)
    ok = (targets >= 0) & (sorted_positions[idx] == targets)
    return np.where(ok, idx, -1)
