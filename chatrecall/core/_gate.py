"""The retrieval gate: decide, without an LLM, whether a message needs a search.

The gate scores a message with weighted regular-expression patterns grouped in
categories (explicit references, continuity, temporal markers, recall verbs,
corrections, personal facts, small talk, knowledge questions). Each pattern
pushes toward a target (``memory``, ``corpus`` or ``none``); the summed scores
are compared with thresholds to pick a :class:`Route`.

Scoring: ``memory_score``/``corpus_score`` are the summed weights of the
memory/corpus patterns that fired; small-talk (``none``) weights are subtracted
from both before comparing with the thresholds, and a correction always
searches memory. Route ``both`` when both pass.

Speed (pure Python; p50 about 10-15 µs per message on a 2-core VM): the
message is lowercased and split into words once. Each pattern is indexed by the words a match can begin
with, derived from the parsed regex, and all patterns indexed by a word are
merged into one regex of lookaheads, so a word costs one ``match`` call at its
position whatever the number of patterns. Patterns anchored with ``^`` are only
tried when the first word fits; patterns whose first word cannot be derived
are searched on every message (correct, just slower).
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ._errors import ConfigError, InvalidInputError
from ._types import GateDecision, GateReason, Route

__all__ = [
    "CORRECTION",
    "DEFAULT_PATTERNS",
    "Gate",
    "GateConfig",
    "GatePattern",
    "TARGET_CORPUS",
    "TARGET_MEMORY",
    "TARGET_NONE",
]

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
    """

    category: str
    regex: str
    weight: float
    target: str

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
        if self.target not in _TARGETS:
            raise ConfigError(f"GatePattern.target={self.target!r} is invalid: must be one of {list(_TARGETS)}")


def _alt(*words: str) -> str:
    """Non-capturing alternation, longest first so a longer phrase wins.

    Alternatives are grouped by first character: the regex engine then tests
    one branch per letter instead of every phrase (phrases starting with
    different characters never compete, so the meaning is unchanged).
    """
    groups: dict[str, list[str]] = {}
    for w in sorted(set(words), key=lambda w: (-len(w), w)):
        groups.setdefault(w[0], []).append(w)
    parts = []
    for first, ws in sorted(groups.items()):
        tails = [w[1:] for w in ws]
        if len(ws) == 1:
            parts.append(ws[0])
        else:
            parts.append(first + "(?:" + "|".join(tails) + ")")
    return "(?:" + "|".join(parts) + ")"


def _after(*words: str) -> str:
    """Zero-width "preceded by one of these words": lets a pattern start (and be
    indexed) at its rarer second word instead of a common first one."""
    return "(?:" + "|".join(rf"(?<=\b{w}\s)" for w in words) + ")"


def _p(category: str, regex: str, weight: float, target: str = TARGET_MEMORY) -> GatePattern:
    return GatePattern(category=category, regex=regex, weight=weight, target=target)


# --- vocabulary shared by several patterns ---------------------------------

_ACK = _alt(
    "hi", "hello", "hey", "hiya", "howdy", "yo", "sup", "heya", "hey there", "hello there", "hi there",
    "thanks", "thank you", "thank u", "thanks a lot", "thanks so much", "thank you so much",
    "thank you very much", "many thanks", "thx", "ty", "tysm", "cheers", "much appreciated",
    "appreciate it", "i appreciate it", "thanks anyway", "thanks again",
    "ok", "okay", "okey", "k", "kk", "okie", "ok then", "okay then", "alright", "all right", "alrighty",
    "cool", "cool beans", "great", "nice", "nice one", "awesome", "perfect", "sweet", "neat", "lovely",
    "excellent", "wonderful", "amazing", "brilliant", "fantastic", "super", "splendid", "good", "very good",
    "good job", "great job", "well done", "wow", "whoa", "woah", "lol", "lmao", "rofl", "haha", "hahaha",
    "hahahaha", "hehe", "ha", "heh", "hmm", "hmmm", "hm", "mm", "mmm", "oh", "ah", "ahh", "ooh", "oh wow",
    "oh well", "oops", "omg", "yay", "woohoo",
    "yes", "yeah", "yep", "yup", "yea", "ya", "sure", "of course", "indeed", "exactly", "true", "agreed",
    "right", "fine", "fair enough", "no", "nope", "nah", "no thanks", "no thank you", "yes please",
    "please", "pls", "got it", "gotcha", "understood", "noted", "i see", "makes sense", "love it",
    "sounds good", "sounds great", "that works", "works for me", "good to know", "interesting",
    "bye", "bye bye", "goodbye", "good bye", "see you", "see ya", "see you later", "see you tomorrow",
    "later", "talk to you later", "ttyl", "good night", "goodnight", "night", "gn", "good morning",
    "morning", "gm", "good afternoon", "good evening", "have a nice day", "have a good day",
    "have a good one", "have a good weekend", "have a nice weekend", "happy friday", "have a great day",
    "have a great night", "have a great evening", "have a great weekend", "have a great one", "have a good night",
    "have a nice evening", "what a day", "huh", "eh", "you too", "same to you",
    "you're welcome", "welcome", "no problem", "np", "no worries", "you rock", "you're the best",
    "you are the best", "sorry", "my bad", "never mind", "nevermind", "nvm", "whatever", "brb", "afk",
    "i'm back", "im back", "back", "hello again", "hi again", "just saying hi", "just checking in",
    "so", "well", "really", "very", "much", "again", "then", "now", "for now", "for the help",
    "for your help", "for that", "a lot", "so much", "very much", "man", "buddy",
    "dude", "friend", "mate", "bot", "assistant", "there", "everyone", "all", "guys",
)

_EVAL = _alt(
    "cool", "great", "nice", "good", "awesome", "amazing", "awful", "bad", "beautiful", "brilliant", "cute",
    "excellent", "fantastic", "fine", "fun", "funny", "hilarious", "helpful", "impressive", "incredible",
    "interesting", "lovely", "neat", "perfect", "sad", "super", "sweet", "terrible", "useful", "weird",
    "wild", "wonderful", "crazy", "insane", "exciting", "fascinating", "gorgeous", "adorable", "enough",
    "ok", "okay", "fair", "true", "right", "clear", "smart", "clever", "genius", "epic", "dope", "lit",
    "hard", "tough", "rough", "boring", "annoying", "a relief", "a shame", "a pity", "too bad", "so true",
    "a good idea", "a great idea", "news to me", "good to know", "good to hear", "great to hear",
    "a lot", "it", "all",
)

# Words that cannot head the noun phrase after a deictic: "that is cool",
# "this was fun", "so that we", "that much" must not count as a reference.
_DEICTIC_STOP = _alt(
    "is", "was", "are", "were", "be", "been", "being", "s", "isn't", "wasn't", "aren't", "weren't",
    "will", "would", "can", "could", "should", "shall", "might", "may", "must", "does", "did", "do",
    "has", "have", "had", "doesn't", "didn't", "won't", "wouldn't", "can't", "couldn't", "shouldn't",
    "seems", "seemed", "looks", "looked", "sounds", "sounded", "feels", "felt", "makes", "made", "means",
    "meant", "gets", "got", "goes", "went", "works", "worked", "helps", "helped", "happens", "happened",
    "i", "you", "he", "she", "it", "we", "they", "me", "him", "her", "us", "them", "my", "your", "his",
    "its", "our", "their", "a", "an", "the", "some", "any", "all", "no", "every", "each", "both",
    "of", "in", "on", "at", "to", "for", "with", "by", "from", "about", "as", "and", "or", "but", "so",
    "if", "when", "because", "than", "then", "there", "here", "way", "very", "really", "too", "much",
    "many", "far", "long", "just", "only", "not", "also", "still", "even", "quite", "pretty", "good",
    "bad", "great", "cool", "nice", "right", "true", "okay", "ok", "fine", "'ll", "ll", "d", "re", "ve",
    "which", "what", "who", "whom", "whose", "where", "how", "why", "sound", "seem", "look", "work",
    "help", "make", "mean", "go", "come", "get", "need", "matter", "happen", "happened", "days",
)

# "that" right after these words is a complementizer ("I think that ..."), not a deictic.
_COMPLEMENTIZER_CONTEXT = "".join(
    rf"(?<!\b{w}\s)" for w in (
        "so", "such", "think", "know", "said", "says", "say", "believe", "hope", "sure", "mean", "heard",
        "read", "seems", "true", "fact", "feel", "noticed", "realized", "guess", "wish", "glad", "shows",
        "means", "thought", "knew", "hear", "see", "saw", "learned", "found", "now", "given", "except",
    )
)

# Nouns whose definite form needs no earlier mention ("the world", "the US").
_UNIQUE_NOUN = _alt(
    "world", "us", "usa", "uk", "eu", "un", "earth", "sun", "moon", "sea", "ocean", "oceans", "environment",
    "internet", "web", "weather", "economy", "government", "public", "past", "future", "present", "morning",
    "evening", "night", "afternoon", "weekend", "body", "brain", "news", "market", "planet", "universe",
    "country", "city", "beach", "mountains", "sky", "wild", "west", "east", "north", "south", "military",
    "police", "media", "bible", "quran", "pandemic", "time", "day", "year", "week", "month", "elderly",
    "poor", "rich", "middle", "end", "beginning", "average", "population", "climate", "ground", "air",
)

_TIME_NOUN = _alt(
    "morning", "afternoon", "evening", "night", "week", "weekend", "month", "year", "summer", "winter",
    "spring", "fall", "autumn", "season", "semester", "quarter", "time", "moment", "point", "days",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "coming", "upcoming",
)

_COPULA = (r"(?:'s|'re|'ll|'d|\s+(?:is|was|are|were|will|would|seems|seemed|looks|looked|sounds|sounded|feels|"
           r"felt|has been|had been|gets|got|isn't|wasn't|aren't|weren't))")

_DUMMY_ADJ = _alt(
    "possible", "impossible", "worth", "safe", "unsafe", "okay", "ok", "alright", "better", "best", "worse",
    "necessary", "true", "false", "hard", "easy", "difficult", "normal", "common", "bad", "good", "healthy",
    "legal", "illegal", "wise", "advisable", "likely", "unlikely", "important", "a good idea", "a bad idea",
    "too late", "too early", "fine", "smart", "cheaper", "faster", "required", "mandatory", "recommended",
    "dangerous", "risky", "fair", "wrong", "right", "appropriate", "rude", "weird", "strange", "common",
)

_REF_VERB = _alt(
    "said", "mentioned", "told me", "suggested", "recommended", "explained", "showed me", "promised", "wrote",
    "gave me", "listed", "brought up", "pointed out", "described", "talked about", "were saying",
    "were telling me", "were explaining", "noted", "proposed", "advised", "warned me", "shared",
    "came up with", "sent me", "named", "called it", "offered", "quoted", "calculated", "drafted",
    "generated", "created", "produced", "edited", "updated", "fixed", "changed", "wrote me", "found",
)

_DISCUSS = _alt(
    "talked", "discussed", "spoke", "chatted", "went over", "decided", "agreed", "covered", "were talking",
    "were discussing", "looked at", "worked on", "figured out", "came up with", "settled on", "planned",
    "brainstormed", "drafted", "found", "made", "wrote", "built", "fixed", "concluded", "chose", "picked",
    "named", "agreed on", "set up", "started",
)

_CONVO = _alt(
    "conversation", "conversations", "chat", "chats", "session", "sessions", "discussion", "discussions",
    "talk", "exchange", "call", "meeting", "thread",
)

_TURN_NOUN = _alt(
    "answer", "message", "response", "reply", "suggestion", "suggestions", "recommendation",
    "recommendations", "point", "sentence", "paragraph", "list", "example", "explanation", "comment",
    "option", "options", "answers", "messages", "code", "snippet", "query", "summary", "draft", "version",
    "idea", "ideas", "advice", "plan", "tip", "tips", "step", "steps",
)

_WH = _alt("what", "how", "why", "when", "where", "which", "who", "whom", "whose")
_AUX = _alt(
    "does", "do", "is", "are", "can", "could", "should", "would", "will", "did", "was", "were", "has",
    "have", "had", "may", "might", "must", "shall", "isn't", "aren't", "doesn't", "don't", "didn't", "can't",
    "won't", "wouldn't", "shouldn't", "couldn't",
)
_LEAD = (r"(?:(?:ok|okay|so|and|but|hmm|well|now|then|also|oh|ah|wow|great|cool|thanks|interesting|nice|"
         r"alright|yes|no|sure)\W+){0,3}")

_SUPERLATIVE = _alt(
    "best", "worst", "largest", "biggest", "smallest", "highest", "lowest", "oldest", "newest", "cheapest",
    "fastest", "strongest", "longest", "shortest", "easiest", "hardest", "healthiest", "safest", "closest",
    "nearest", "greatest", "tallest", "deepest", "richest", "most popular", "most famous", "most common",
    "most important", "most expensive", "most effective", "most dangerous",
)

# "it" that needs no antecedent: "is it safe to ...", "how long does it take to ...",
# "what does it mean to ...", "what time is it", or one whose antecedent is in
# the same question ("what is X and why is it important").
_IT_NOT_ANAPHORIC = (
    rf"(?!\s+{_DUMMY_ADJ}\s+(?:for\s+\w+\s+)?to\b)"
    r"(?!\s*(?:'s|\s+is|\s+was)\s+(?:\w+\s+)?to\b)"
    r"(?!\s+(?:takes?|took|costs?|means?|worth)\s+(?:\w+\s+)?to\b)"
    r"(?<!\btime is it)(?<!\bget it)(?<!\bgot it)"
    r"(?<!\band why is it)(?<!\band why was it)(?<!\band why does it)(?<!\band where is it)"
    r"(?<!\band how is it)(?<!\band how does it)(?<!\band what is it)(?<!\band where does it)"
)

# Lookbehind prefixes used below (f-strings in 3.11 cannot hold these calls).
_AFTER_DID_YOU = _after("did", "didn't", "have", "haven't")
_AFTER_DETERMINER = _after("our", "my", "the", "your", "this")
_AFTER_DID_I = _after("did", "have", "had")
_AFTER_IN = _after("in")
_AFTER_RECALL_SUBJECT = _after("i", "you", "we", "to", "can", "could", "do", "did", "don't", "cannot", "can't",
                               "please")
_AFTER_BEFORE_CONTEXT = _after("as", "like", "than", "from", "mentioned", "said", "discussed", "asked", "you",
                               "about", "tried", "used", "shared", "suggested", "did", "seen")
_AFTER_THE = _after("the")
_AFTER_A = _after("a")
_AFTER_SOME = _after("some")
_AFTER_THIS = _after("this")
_AFTER_ON = _after("on")
_AFTER_DEMONSTRATIVE_CONTEXT = _after(
    "about", "on", "of", "with", "for", "from", "by", "like", "than", "after", "into", "to", "do", "does", "did",
    "is", "isn't", "was", "has", "can", "could", "will", "would", "expand", "explain", "try", "use", "mean",
)
_AFTER_THERE_CONTEXT = _after("in", "to", "from", "visit", "go", "get", "live", "do", "see", "eat", "stay", "held",
                              "built", "made")
_AFTER_AUX = _after("did", "does", "do", "has", "have", "had", "is", "isn't", "was", "wasn't", "can", "could",
                    "will", "would", "should")
_AFTER_FOR_ME = _after("for", "suit", "suits", "fit", "fits", "to")
_AFTER_MODAL = _after("should", "could", "can", "would", "do", "must")

# A question opening a sentence, maybe after a lead word ("ok, what ..."), but
# not one asking what was said ("what did you say" is recall).
_KNOWLEDGE_Q = (
    rf"{_LEAD}(?:{_WH}\b(?!\s+about\b)"
    r"(?!\s+(?:did|do|were|was|have|had)\s+(?:i|we|you)\s+(?:say|said|tell|told|mention|talk|discuss|decide|"
    rf"ask|agree|call)\b)|{_AUX}\b)"
)

#: Default trigger patterns, tuned on TREC CAsT 2019-2022 and TREC iKAT 2023
#: (see ``chatrecall._bench._gating``). Extend with ``GateConfig.extra_patterns``.
DEFAULT_PATTERNS: tuple[GatePattern, ...] = (
    # --- small talk: whole-message acknowledgements, greetings, reactions -> none
    _p("smalltalk", rf"^\W*(?:(?>{_ACK})\b\W*)++$", 1.0, TARGET_NONE),
    _p("smalltalk",
       r"^\W*(?:(?:hi|hey|hello|yo|oh|and|so|ok|okay|good|great|fine|i'm good|i'm fine|i'm great|"
       r"not bad|doing well|i'm well|all good)\W+)*"
       r"(?:how are you|how r u|how are u|how're you|how are things|how's it going|how is it going|"
       r"how's everything|how is everything|how have you been|how've you been|how's your day|how is your day|"
       r"how was your day|how's life|how's your weekend|how was your weekend|what's up|whats up|wassup|"
       r"what's new|how do you do|nice to meet you|good to see you|are you there|you there|how about you|"
       r"and you|what about you|you good)"
       r"(?:\W+(?:doing|today|tonight|going|buddy|friend|mate|man|there|my friend|these days|lately))*\W*$",
       1.0, TARGET_NONE),
    _p("smalltalk",
       rf"^\W*(?:(?>{_ACK})\W+)*(?:that|this|it|that all|this all)\s*{_COPULA}"
       r"(?:\s+(?:so|really|very|pretty|super|quite|too|just|absolutely|totally|kinda|kind of|a bit|such|"
       r"truly|actually|definitely|seriously))*"
       rf"\s+(?:an?\s+)?(?>{_EVAL})\b[\s!.,]*(?:(?>{_ACK})\b\W*)*$",
       1.0, TARGET_NONE),

    # --- corrections -> memory, sets GateDecision.correction
    _p(CORRECTION, r"^\W*(?:no|nope|nah|not quite|not really|wrong|actually|sorry|oops|hmm|err|um|no no)\W+"
                   r"(?:i|i've|i'd)\s+(?:meant|mean|was asking|was talking|was referring|asked|said|wanted|"
                   r"was looking|am asking|am talking)\b", 1.0),
    _p(CORRECTION, r"\bi\s+meant\b", 1.0),
    _p(CORRECTION, r"\bnot\s+(?:that|this|the)\s+(?:one|ones|thing|part|option|file|version)\b", 0.8),
    _p(CORRECTION, r"\b(?:that|this|it)(?:'s|\s+is|\s+was|\s+isn't|\s+wasn't)\s+(?:not\s+)?"
                   r"(?:what i|what we)\s+(?:asked|meant|said|wanted|was asking|was looking|need)", 1.0),
    _p(CORRECTION, r"\bnot what i\s+(?:asked|meant|said|wanted|was asking|was looking|need)", 1.0),
    _p(CORRECTION, r"\bwrong\s+(?:one|ones|answer|thing|file|function|"
                   r"person|place|link|version|item|option|number|date|name|project|city|recipe|product|"
                   r"model|book|movie|song|document|table|column|class|method|error|code|guy|restaurant)\b",
       1.0),
    _p(CORRECTION, r"\b(?:that|this|it)(?:'s|\s+is|\s+was)\s+(?:wrong|incorrect|not right|not correct|not it|"
                   r"not true|not accurate|not quite right|inaccurate)\b", 0.9),
    _p(CORRECTION, r"\b(?:that|this|it)\s+(?:isn't|wasn't)\s+(?:right|correct|it|true|accurate)\b", 0.9),
    _p(CORRECTION, r"\byou\s+(?:misunderstood|misread|got it wrong|got that wrong|confused|mixed up)\b", 1.0),
    _p(CORRECTION, r"\bi\s+(?:was|am)\s+(?:asking|talking)\s+about\b", 0.8),
    _p(CORRECTION, r"^\W*(?:no|nope)\W+(?:not|the|i\s+(?:mean|want|wanted|need|said|asked)|"
                   r"i'm\s+(?:asking|talking))\b", 0.8),

    # --- explicit references to the conversation -> memory, strong
    _p("explicit", r"\bas\s+(?:we|you|i)(?:\s+(?:already|previously|just|briefly|have|had))?\s+"
                   r"(?:discussed|said|mentioned|talked|agreed|noted|suggested|decided|covered|planned|"
                   r"established|explained|told|described|showed|wrote|shared)\b", 1.0),
    _p("explicit", r"\blike\s+(?:you|we|i)\s+(?:said|mentioned|suggested|discussed|told|agreed|asked|explained)\b",
       1.0),
    _p("explicit", rf"\byou(?:'ve|\s+have|\s+had)?\s+(?:(?:already|just|previously|once|also)\s+)?{_REF_VERB}\b",
       1.0),
    _p("explicit", rf"{_AFTER_DID_YOU}you\s+(?:say|mention|tell me|suggest|recommend|"
                   r"explain|show me|promise|write|give me|list|say that)\b|"
                   r"\byou\s+(?:didn't|did not|never|haven't|have not)\s+(?:mention|say|tell|include|list|"
                   r"answer|suggest|recommend|explain|give)\b|\byou(?:'re|\s+are|\s+were)\s+saying\b", 1.0),
    _p("explicit", rf"\bwe(?:'ve|\s+have|\s+had)?\s+(?:(?:already|just|previously|once)\s+)?{_DISCUSS}\b",
       0.9),
    _p("explicit", rf"{_AFTER_DETERMINER}(?:last|previous|earlier|prior|past|first|"
                   rf"recent|other)\s+{_CONVO}\b|\bour\s+{_CONVO}\b|\bearlier\s+in\s+(?:this|our|the)\s+{_CONVO}\b",
       1.0),
    _p("explicit", rf"\b(?:your|my)\s+(?:last|previous|earlier|prior|first|second|third|original|"
                   rf"latest|initial)\s+{_TURN_NOUN}\b", 0.9),
    _p("explicit", r"\bi\s+(?:(?:already|just|previously|once)\s+)?(?:told you|mentioned|said|asked you|"
                   r"shared|gave you|showed you|sent you|explained|described|asked about|asked earlier)\b",
       0.9),
    _p("explicit", r"\b(?:what|everything|all|something)\s+(?:you|i|we)\s+(?:said|told|mentioned|shared|"
                   r"wrote|gave|showed|asked)\b", 0.9),
    _p("explicit", r"\b(?:go|going|get|getting|come|coming|went|circle|circling|jump|jumping)\s+back\s+to\b",
       1.0),
    _p("explicit", r"^\W*back\s+to\b", 0.9),
    _p("explicit", r"\b(?:pick|picking)\s+up\s+where\b|\bwhere\s+(?:we|i|you)\s+left\s+off\b|"
                   r"\bcontinue\s+(?:where|from where|from|with the|with our|with that|our)\b|"
                   r"\bwhere\s+were\s+we\b|\bthose\s+conversations\b|"
                   r"\bwhere\s+(?:you|we|i)\s+(?:stopped|left\s+off|were|paused)\b|"
                   rf"{_AFTER_DID_I}i\s+(?:already\s+|ever\s+)?(?:tell|told|mention|mentioned|say|said|"
                   r"share|shared|give|gave|show|showed)\s+you\b|"
                   r"\bwe(?:'ve|\s+have)\s+been\s+(?:talking|discussing|working)\b|"
                   rf"\brefresh\s+my\s+memory\b|{_AFTER_IN}(?:this|our)\s+(?:chat|conversation|thread)\b", 1.0),
    _p("explicit", r"\b(?:following|follow)\s+up\s+on\b|\brevisit\b|\bbring\s+up\s+(?:the|our|my|that)\b|"
                   r"\baforementioned\b|\bmentioned\s+(?:above|earlier|before)\b", 0.8),

    # --- recall verbs -> memory
    _p("recall", r"(?:(?<=\bdo\syou\s)|(?<=\bdid\syou\s)|(?<=\bcan\syou\s)|(?<=\bcould\syou\s)|"
                 r"(?<=\bwould\syou\s)|(?<=\byou\sstill\s))(?:remember|recall)\b", 1.0),
    _p("recall", r"\bremember(?:ed|ing|s)?\b(?!\s+to\b)|\bremind\s+me\b"
                 r"(?!\s+(?:to|at|in|on|tomorrow|tonight|later|every|each|when|if|before)\b)|"
                 r"\bwhat\s+(?:did|do|had|have)\s+(?:i|we|you)\s+(?:say|tell|mention|decide|choose|pick|call|"
                 r"name|ask|use|want|settle|agree|conclude|recommend|suggest|write|give|show|plan|order|"
                 r"think|find|like|land)\b", 0.9),
    # "recall" as a verb only ("can you recall", "recall what"), not "a product recall"
    _p("recall", r"^\W*recall\b", 0.8),
    _p("recall", r"\bdid\s+(?:i|we)\s+(?:say|mention|tell|decide|choose|pick|agree|settle|ask|like|want|"
                 r"book|order|buy|finish|end\s+up)\b|\bdid\s+we\s+ever\b", 0.8),
    _p("recall", rf"{_AFTER_RECALL_SUBJECT}recall(?:ed)?\b|"
                 r"\brecall(?:ed|ing)?\s+(?:what|when|where|who|how|which|that|the|my|our|your|if|whether|any|"
                 r"anything|exactly)\b|"
                 r"\bwhat\s+was\s+(?:that|it|the name|the thing|the other|the one|his name|her name|"
                 r"the title|the link|the number|the date|the address|the place|the command)\b|"
                 r"\b(?:forgot|forgotten|forget)\b(?!\s+(?:about\s+it|it)\b)|"
                 r"\b(?:can't|cannot|don't|couldn't)\s+(?:remember|recall)\b", 0.8),
    _p("recall", r"\bagain\W*$|\b(?:tell|show|give|remind)\s+me\s+again\b|\b(?:say|repeat)\s+(?:that|it)\s+again\b|"
                 r"\b(?:repeat|summari[sz]e|recap)\s+(?:what|your|our|that|everything|it)\b|"
                 r"\b(?:still\s+have|look\s+back\s+at|scroll\s+(?:up|back))\b|"
                 r"\bwhat(?:'s|\s+is)\s+the\s+name\s+of\s+(?:that|the|this|those)\b", 0.7),

    # --- temporal markers -> memory
    _p("temporal", r"\bearlier\b(?!\s+(?:than|today|this|that|in\s+the|on|version|versions|model|models|"
                   r"stage|stages|age|years|times|period|periods|era)\b)|"
                   r"\bpreviously\b|\bprevious\s+(?:one|ones|answer|message|version|step|option|question)\b|"
                   r"\b(?:last|previous|this|that)\s+time\b(?!\s+(?:i\s+(?:checked|looked)|of\b))", 0.7),
    _p("temporal", rf"{_AFTER_BEFORE_CONTEXT}before\b|"
                   r"\bbefore\s*[?.!]*$", 0.6),
    _p("temporal", r"(?:\byesterday|\blast\s+(?:week|month|night|session|monday|tuesday|wednesday|thursday|"
                   rf"friday|saturday|sunday)|{_AFTER_THE}other\s+day|{_AFTER_A}while\s+(?:ago|back)|"
                   rf"{_AFTER_A}few\s+days\s+ago|{_AFTER_SOME}time\s+ago|{_AFTER_THIS}morning|"
                   rf"{_AFTER_ON}(?:monday|tuesday|wednesday|thursday|friday))\b(?=[^.?!]*\b(?:we|you)\b)", 0.7),
    _p("temporal", rf"{_AFTER_THE}other\s+day\b|{_AFTER_A}while\s+(?:ago|back)\b", 0.4),

    # --- implicit continuity: anaphora, deixis, ellipsis -> memory
    # "that"/"those" + noun; "that" + a verb in -s/-ed is a relative clause
    # ("the recipe that works"), after "so/think/know..." a complementizer.
    _p("continuity", rf"{_COMPLEMENTIZER_CONTEXT}\bthat\s+(?!{_DEICTIC_STOP}\b)"
                     r"(?![\w-]*(?<![su])s\b)(?![\w-]+ed\b)[a-z][\w-]*|"
                     rf"\bthose\s+(?!{_DEICTIC_STOP}\b)[a-z][\w-]*", 0.6),
    _p("continuity", rf"\b(?:this|these)\s+(?!{_DEICTIC_STOP}\b)(?!{_TIME_NOUN}\b)[a-z][\w-]*|"
                     r"\b(?:this|that)\s+all\b", 0.6),
    # demonstrative subject of a question: "did that help?", "isn't that speed?"
    _p("continuity", rf"{_AFTER_AUX}(?:that|this)\b(?!\s*(?:'s|is|was)\b)", 0.6),
    # a bare demonstrative pronoun as object or inverted subject: "expand on that?", "is that true?"
    _p("continuity", rf"{_AFTER_DEMONSTRATIVE_CONTEXT}(?:that|this)\b"
                     r"(?=\s*[?.!,;]|\s*$|\s+(?:really|actually|also|too|true|right|correct|possible|"
                     r"necessary|the case|normal|safe|enough|still)\b)", 0.6),
    # pronoun "one(s)": "which one", "a German one", "the one from Disney"; not
    # the numeral ("one question") nor "no one", "one of", "one another"
    _p("continuity", r"\bones\b|(?<=\w\s)one\b(?<!\bno\sone)(?<!\bevery\sone)(?<!\bany\sone)(?<!\bsome\sone)"
                     r"(?<!\beach\sone)(?<!\bthe\sone)(?<!\bonly\sone)(?<!\bjust\sone)"
                     r"(?=\s*(?:[?.!,;:)]|'s\b|$)|\s+(?:is|was|are|were|that|which|who|from|with|in|on|for|you|i|we|"
                     r"they|has|had|have|does|did|do|would|should|could|can|will|or|and|but|instead|too|again|"
                     r"please|then|now|here|there|better|more|less|over|than|like|by|at)\b)|"
                     r"\bthe\s+one\b(?!\s+(?:of|another|and only|hand|day|time|thing)\b)", 0.6),
    _p("continuity", r"\b(?:which|any|some|all|each|both|one|none|either|neither|most|many)\s+of\s+"
                     r"(?:these|those|them|the\s+two|the\s+three|the\s+above)\b", 0.6),
    _p("continuity", rf"(?<=\w\s)it\b{_IT_NOT_ANAPHORIC}", 0.6),
    _p("continuity", r"\b(?:its|itself)\b", 0.6),
    _p("continuity", r"\b(?:they|them|their|theirs|themselves)\b", 0.5),
    _p("continuity", r"\b(?:he|him|his|she|her|hers|herself|himself)\b", 0.5),
    _p("continuity", r"\b(?:what|how)\s+about\b(?!\s+(?:you|yourself)\b)", 0.6),
    _p("continuity", r"^\W*(?:and|but|also|or)\s+(?:what|how|the|for|if|in|what's|why|is|are|can|does|do)\b",
       0.6),
    # elliptical follow-ups: "And Jared?", "which is healthiest?", "an example?", "what happened next?"
    _p("continuity", r"^\W*(?:and|but|or|also)\s+[^.?!]{1,40}\?\W*$|^\W*which\s+(?:is|are|was|were|would|"
                     r"should|do|does|of)\b", 0.5),
    _p("continuity", r"\b(?:an?|some|more|other|another|any)\s+examples?\b(?!\s+of\b)|\bnext\W*$", 0.5),
    _p("continuity", rf"{_AFTER_THE}other\b(?!\s+(?:hand|side\s+of\s+the\s+coin)\b)|{_AFTER_THE}same\b|"
                     r"\bsame\s+(?:thing|one|way|place|question|issue|problem|error)\b", 0.6),
    _p("continuity", r"\bothers\b|\bother\s+(?!than\b)(?:[\w-]+)|\banother\b|"
                     r"\b(?:what|anything|who|where|how|something|someone|somewhere)\s+else\b|\binstead\b",
       0.5),
    _p("continuity", r"\btell\s+me\s+more\b|\bmore\s+(?:about|on|details|detail|info|information|examples|"
                     r"options|ideas|suggestions)\b|\belaborate\b|"
                     r"\b(?:go\s+on|keep\s+going|continue)\b(?=\W*$|\s*[.,!;])",
       0.5),
    _p("continuity", rf"{_AFTER_THE}(?:first|second|third|fourth|fifth|last|former|latter|previous|next|"
                     r"final|two|three|both|rest)\b(?!\s+(?:time|times|place|person\s+to|day|week|year)\b)|"
                     r"\bboth\s+of\b", 0.5),
    _p("continuity", rf"{_AFTER_THE}differences?\b(?!\s+(?:between|among|in|of)\b)|\bcompare\s+(?:them|the\s+two)\b|"
                     r"\bcompare\W*$", 0.5),
    _p("continuity", r"^\W*(?:why|how|what|when|where|who|which|really|how so|why not|such as|like what|"
                     r"for example|meaning|and then|then what|says who|for what)\W*$", 0.6),
    # locative anaphora "what can I do there?", fused superlatives "the largest in the world"
    _p("continuity", r"\bthere\W*$|"
                     rf"{_AFTER_THERE_CONTEXT}there\b|"
                     rf"{_AFTER_THE}{_SUPERLATIVE}\b(?=\s+(?:in\s+the\s+world|ever|one|ones|on\s+(?:earth|land))\b|"
                     r"\W*$)", 0.5),
    # a bare definite noun closing a question presupposes an earlier referent: "what are the symptoms?"
    _p("continuity", rf"\bthe\s+(?!{_UNIQUE_NOUN}\s*\?)[a-z][\w-]*\s*\?\s*$", 0.5),

    # --- first-person personal facts / preferences -> memory (weaker, needs personalisation)
    _p("personal", r"\bmy\b", 0.3),
    # questions about the user's own setup or life: "which database do we use?", "what did my sister plan?"
    _p("personal", r"\b(?:do|did|does|are|were|was|have|had)\s+(?:we|my|our)\b|\bdid\s+i\b|"
                   r"\bour\b|\bwe\s+(?:use|used|chose|picked|decided|agreed|settled|went|set|run|deploy|"
                   r"called|named)\b", 0.5),
    _p("personal", rf"{_AFTER_FOR_ME}(?:me|myself|us|my)\b|\bmyself\b|"
                   r"\bmine\b", 0.35),
    _p("personal", r"\bi\s+(?:prefer|like|love|hate|dislike|enjoy|can't stand|don't like|don't eat|"
                   r"can't eat|don't drink|am allergic|am vegetarian|am vegan|am diabetic|am pregnant|"
                   r"usually|always|never|tend to)\b|\bi'm\s+(?:allergic|vegetarian|vegan|diabetic|"
                   r"pregnant|a fan|into|not into|not a fan)\b|\bbut\s+i\b", 0.35),
    _p("personal", r"\b(?:recommend|recommendation|recommendations|suggest|suggestion|suggestions|"
                   r"advice|advise)\b|\bhelp\s+me\b", 0.5),
    _p("personal", r"\bi\s+(?:need|want|would like|'d like|am looking|'m looking|am interested|'m interested|"
                   r"am planning|'m planning|am thinking|'m thinking|don't|do not|can't|cannot|am not|'m not|"
                   r"won't|have no)\b|"
                   rf"{_AFTER_MODAL}i\b", 0.25),

    # --- knowledge questions -> corpus
    # Sentence-initial wh-word / auxiliary, maybe after a lead word ("ok, what"),
    # so "when I was a kid" is no question.
    _p("knowledge", rf"^\W*{_KNOWLEDGE_Q}", 0.6, TARGET_CORPUS),
    _p("knowledge", rf"(?:(?<=[.!?;:]\s)|(?<=[.!?;:]\s\s)){_KNOWLEDGE_Q}", 0.6, TARGET_CORPUS),
    _p("knowledge", r"\b(?:explain|define|describe|definition|meaning\s+of|difference\s+between|"
                    r"tell\s+me\s+about|overview\s+of|examples?\s+of|how\s+to|documentation|docs|"
                    r"what\s+does\s+[\w.]+\s+do|compare|summarize|list)\b", 0.6, TARGET_CORPUS),
)


@dataclass(frozen=True, kw_only=True)
class GateConfig:
    """Patterns and thresholds of the :class:`Gate`.

    Example:
        >>> extra = GatePattern(category="explicit", regex=r"\\bsprint review\\b", weight=1.0, target="memory")
        >>> cfg = GateConfig(extra_patterns=(extra,), memory_threshold=0.6,
        ...                  category_weights={"personal": 0.0})
        >>> Gate(cfg).decide("Sprint review notes, please").route.value
        'memory'

    Attributes:
        patterns: Base patterns (default :data:`DEFAULT_PATTERNS`).
        extra_patterns: Patterns added after ``patterns``.
        memory_threshold: Net memory score (memory minus none) needed to
            search memory.
        corpus_threshold: Net corpus score (corpus minus none) needed to
            search the corpus.
        category_weights: Multiplier per category (missing = 1.0, 0 disables
            the category), to retune without rewriting patterns.
        confidence_slope: Steepness of the logistic mapping from score margin
            (score minus threshold) to confidence.
    """

    patterns: tuple[GatePattern, ...] = DEFAULT_PATTERNS
    extra_patterns: tuple[GatePattern, ...] = ()
    memory_threshold: float = 0.5
    corpus_threshold: float = 0.5
    category_weights: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    confidence_slope: float = 4.0

    def __post_init__(self) -> None:
        for name in ("patterns", "extra_patterns"):
            value = getattr(self, name)
            if not isinstance(value, (tuple, list)) or not all(isinstance(p, GatePattern) for p in value):
                raise ConfigError(f"{name}={value!r} is invalid: must be a tuple of GatePattern")
            object.__setattr__(self, name, tuple(value))
        if not self.patterns and not self.extra_patterns:
            raise ConfigError("patterns=() is invalid: the gate needs at least one pattern")
        for name in ("memory_threshold", "corpus_threshold", "confidence_slope"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
                raise ConfigError(f"{name}={v!r} is invalid: must be a positive finite number")
        cw = self.category_weights
        if not isinstance(cw, Mapping):
            raise ConfigError(f"category_weights={cw!r} is invalid: must be a mapping of category to multiplier")
        for k, v in cw.items():
            if not isinstance(k, str):
                raise ConfigError(f"category_weights key {k!r} is invalid: must be a str")
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
                raise ConfigError(f"category_weights[{k!r}]={v!r} is invalid: must be a finite number >= 0")
        object.__setattr__(self, "category_weights", MappingProxyType(dict(cw)))


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


def _analyse(regex: str, flags: int = 0) -> _Trigger | None:
    """First words of every match of ``regex`` (lowercase) and the match mode, or None."""
    if _sp is None or _sc is None:
        return None
    try:
        parsed = _sp.parse(regex, flags)
    except Exception:  # pragma: no cover - the regex compiled already
        return None
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
        open_states = walk(list(parsed), {("", False, False, False)})
    except (_Unknown, RecursionError):
        return None
    if open_states or not done:
        return None  # a match may end mid-word, or contain no word at all
    words = frozenset(w for w, _, _ in done)
    if all(b for _, _, b in done):
        return _Trigger(words, _MODE_FIRST)
    if not any(c for _, c, _ in done):
        return _Trigger(words, _MODE_AT)
    return _Trigger(words, _MODE_SEARCH)


def _needs_ignorecase(regex: str) -> bool:
    """Uppercase letters outside escapes (\\W, \\S...) would never match lowercased text."""
    return any(ch.isupper() for ch in re.sub(r"\\.", "", regex))


# --- the gate --------------------------------------------------------------

_TOKEN = re.compile(r"\w+")
_T_MEMORY, _T_CORPUS, _T_NONE = 0, 1, 2
_TARGET_CODE = {TARGET_MEMORY: _T_MEMORY, TARGET_CORPUS: _T_CORPUS, TARGET_NONE: _T_NONE}


_REASON_CACHE = 16384


def _by_position(f: tuple[int, int, GateReason]) -> tuple[int, int]:
    return f[0], f[1]


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


class Gate:
    """Decides whether a message needs memory, corpus, both or no search.

    Build it once and share it: construction compiles and indexes the
    patterns; :meth:`decide` is thread-safe and needs no lock.

    Example:
        >>> gate = Gate()
        >>> gate.decide("Remember that cheese project?").route.value
        'memory'
        >>> gate.decide("thanks!").route.value
        'none'
        >>> d = gate.decide("no, I meant the earlier thing")
        >>> d.route.value, d.correction
        ('memory', True)
    """

    __slots__ = ("_always", "_config", "_first", "_pats", "_reasons", "_words", "_mt", "_ct", "_slope")

    def __init__(self, config: GateConfig | None = None) -> None:
        if config is None:
            config = GateConfig()
        elif not isinstance(config, GateConfig):
            raise ConfigError(f"config={config!r} is invalid: must be a GateConfig or None")
        self._config = config
        cw = config.category_weights
        pats: list[tuple[re.Pattern[str], str, str, float, int, bool]] = []
        wrapped: list[str | None] = []  # regex ready to merge, None if it must run alone
        at: dict[str, list[int]] = {}
        first: dict[str, list[int]] = {}
        search: dict[str, list[int]] = {"": []}
        for pat in config.patterns + config.extra_patterns:
            w = float(pat.weight) * float(cw.get(pat.category, 1.0))
            if w == 0.0:
                continue  # disabled category: do not even run it
            i = len(pats)
            flags = re.IGNORECASE if _needs_ignorecase(pat.regex) else 0
            rx = re.compile(pat.regex, flags)
            pats.append((rx, pat.category, pat.regex, w, _TARGET_CODE[pat.target], pat.category == CORRECTION))
            # Merging wraps the regex in a group: own groups (backrefs) or
            # global inline flags would break, so such patterns run alone.
            mergeable = rx.groups == 0 and (re.compile(pat.regex).flags & ~re.UNICODE) == 0
            wrapped.append(((f"(?i:{pat.regex})" if flags else pat.regex)) if mergeable else None)
            trig = _analyse(pat.regex, flags)
            if trig is None:
                search[""].append(i)
                continue
            if trig.mode == _MODE_SEARCH or not mergeable:
                index = search
            else:
                index = at if trig.mode == _MODE_AT else first
            for word in trig.words:
                index.setdefault(word, []).append(i)
        self._pats = tuple(pats)

        def merged(ids: list[int]) -> tuple[re.Pattern[str], tuple[tuple[int, int], ...]]:
            # One match call evaluates every pattern at a position: each sits in
            # an optional lookahead, so a set group means "this one matched here".
            # The trailing conditionals fail the match when no group is set, so the
            # common case (nothing fires at this word) returns None cheaply.
            ids = sorted(set(ids))
            body = "".join(f"(?=({wrapped[i]})|)" for i in ids)
            none_set = "".join(f"(?({g})|" for g in range(1, len(ids) + 1)) + "(?!)" + ")" * len(ids)
            rx = re.compile(body + none_set)
            return rx, tuple((g, i) for g, i in enumerate(ids, 1))

        # word -> (merged regex tried at that word or None, its (group, id) pairs,
        #          ids searched once when the word occurs)
        table: dict[str, tuple[re.Pattern[str] | None, tuple[tuple[int, int], ...], frozenset[int]]] = {}
        for word in (set(at) | set(search)) - {""}:
            rx_ids = merged(at[word]) if word in at else (None, ())
            table[word] = (rx_ids[0], rx_ids[1], frozenset(search.get(word, ())))
        self._words = table
        self._first = {k: merged(v) for k, v in first.items()}
        self._always = frozenset(search[""])
        self._reasons: dict[tuple[int, str], GateReason] = {}
        self._mt = float(config.memory_threshold)
        self._ct = float(config.corpus_threshold)
        self._slope = float(config.confidence_slope)

    @property
    def config(self) -> GateConfig:
        return self._config

    def decide(self, message: str) -> GateDecision:
        """Route one user message.

        Args:
            message: The raw user message.

        Returns:
            The decision with route, confidence, scores and every reason.

        Raises:
            InvalidInputError: ``message`` is not a str, or is empty/whitespace.
        """
        if not isinstance(message, str):
            raise InvalidInputError(f"message must be str, got {type(message).__name__}: {message!r:.80}")
        if not message or message.isspace():
            raise InvalidInputError(f"message={message!r} is invalid: empty or whitespace-only")
        if "\u2019" in message:
            message = message.replace("\u2019", "'")
        low = message.lower()
        words_get = self._words.get
        spans: dict[int, tuple[int, int]] = {}
        searched = self._always
        is_first = True
        # One pass over the words; the patterns that can start at a word are
        # all tried there with one call, the rest are searched once below.
        for tok in _TOKEN.finditer(low):
            word = tok[0]
            if is_first:
                is_first = False
                merged = self._first.get(word)
                if merged is not None:
                    m = merged[0].match(low)
                    if m is not None:
                        regs = m.regs
                        for g, i in merged[1]:
                            if regs[g][0] >= 0:
                                spans[i] = regs[g]
            entry = words_get(word)
            if entry is None:
                continue
            rx, pairs, sids = entry
            if rx is not None:
                m = rx.match(low, tok.start())
                if m is not None:
                    regs = m.regs
                    for g, i in pairs:
                        if regs[g][0] >= 0 and i not in spans:
                            spans[i] = regs[g]
            if sids:
                searched = searched | sids
        pats = self._pats
        for i in searched:
            if i not in spans:
                m = pats[i][0].search(low)
                if m is not None:
                    spans[i] = m.span()
        # Report matched text from the original when lowering kept the offsets.
        src = message if len(low) == len(message) else low
        reasons = self._reasons
        mem = corp = none = 0.0
        correction = False
        fired: list[tuple[int, int, GateReason]] = []
        for i, (start, end) in spans.items():
            _, category, regex, w, target, is_corr = pats[i]
            if target == _T_MEMORY:
                mem += w
            elif target == _T_CORPUS:
                corp += w
            else:
                none += w
            if is_corr and w > 0:
                correction = True
            text = src[start:end]
            reason = reasons.get((i, text))
            if reason is None:  # reasons are immutable: share them across calls
                if len(reasons) >= _REASON_CACHE:
                    reasons.clear()
                reason = reasons[(i, text)] = GateReason(category, regex, w, text)
            fired.append((start, i, reason))
        return self._verdict(mem, corp, none, correction, fired)

    def _verdict(self, mem: float, corp: float, none: float, correction: bool,
                 fired: list[tuple[int, int, GateReason]]) -> GateDecision:
        net_mem = mem - none
        net_corp = corp - none
        mt, ct, slope = self._mt, self._ct, self._slope
        want_mem = net_mem >= mt or correction
        want_corp = net_corp >= ct
        if want_mem and want_corp:
            route = Route.BOTH
            conf = min(_sigmoid(slope * (max(net_mem, mt) - mt)), _sigmoid(slope * (net_corp - ct)))
        elif want_mem:
            route = Route.MEMORY
            conf = _sigmoid(slope * (max(net_mem, mt) - mt))
        elif want_corp:
            route = Route.CORPUS
            conf = _sigmoid(slope * (net_corp - ct))
        else:
            route = Route.NONE
            conf = 1.0 - _sigmoid(slope * max(net_mem - mt, net_corp - ct))
        if len(fired) > 1:
            fired.sort(key=_by_position)
        reasons = tuple(f[2] for f in fired)
        return GateDecision(route=route, confidence=conf, memory_score=mem, corpus_score=corp,
                            reasons=reasons, correction=correction)
