"""Tests of the retrieval gate (chatrecall.core._gate)."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatrecall.core._errors import ConfigError, InvalidInputError
from chatrecall.core._gate import (
    CORRECTION,
    DEFAULT_PATTERNS,
    Gate,
    GateConfig,
    GatePattern,
    _analyse,
    asks_or_requests,
)
from chatrecall.core._types import GateDecision, Route


@pytest.fixture(scope="module")
def gate() -> Gate:
    return Gate()


# --- required examples -------------------------------------------------------

@pytest.mark.parametrize(
    ("message", "route"),
    [
        ("How are you?", Route.NONE),
        ("Remember that cheese project?", Route.MEMORY),
        ("What does TriBridConfig do?", Route.CORPUS),
        ("That is cool", Route.NONE),
        ("what about that function?", Route.MEMORY),
        ("no, I meant the earlier thing", Route.MEMORY),
        ("thanks!", Route.NONE),
        ("ok cool", Route.NONE),
    ],
)
def test_required_examples(gate: Gate, message: str, route: Route) -> None:
    assert gate.decide(message).route is route


def test_required_correction_example(gate: Gate) -> None:
    d = gate.decide("no, I meant the earlier thing")
    assert d.correction is True
    assert d.route is Route.MEMORY
    assert any(r.category == CORRECTION for r in d.reasons)


# --- categories ----------------------------------------------------------------

@pytest.mark.parametrize(
    "message",
    [
        "As we discussed, use Postgres for the queue.",
        "Like you said, keep the answers short.",
        "In our last conversation you listed three options.",
        "You mentioned a book on habits, which one was it?",
        "We talked about the budget last week.",
    ],
)
def test_explicit_references_route_to_memory_strongly(gate: Gate, message: str) -> None:
    d = gate.decide(message)
    assert d.route.wants_memory
    assert any(r.category == "explicit" and r.weight >= 0.9 for r in d.reasons)
    assert d.memory_score >= 0.9
    if d.route is Route.MEMORY:
        assert d.confidence > 0.8


@pytest.mark.parametrize(
    "message",
    [
        "that function is too slow",
        "can you fix those files?",
        "I want the other one",
        "same thing for the staging server",
        "what about it?",
        "Is it treatable?",
        "What are its symptoms?",
    ],
)
def test_continuity_routes_to_memory(gate: Gate, message: str) -> None:
    d = gate.decide(message)
    assert d.route.wants_memory, d.explain()
    assert any(r.category == "continuity" for r in d.reasons)


@pytest.mark.parametrize("message", ["this error keeps happening", "how are they doing?"])
def test_pattern_mode_routes_continuity_the_learned_gate_misses(message: str) -> None:
    # Known misses of the learned combiner (P(memory) 0.36 and 0.30): the hand-set pattern scores
    # still catch them, for users who prefer GateConfig(learned=False).
    d = Gate(GateConfig(learned=False)).decide(message)
    assert d.route.wants_memory, d.explain()
    assert d.memory_probability is None


@pytest.mark.parametrize(
    "message", ["That is cool", "that's great", "this is nice", "That\u2019s great!", "this is awesome", "It's fine"]
)
def test_deictic_with_copula_and_adjective_does_not_fire(gate: Gate, message: str) -> None:
    d = gate.decide(message)
    assert d.route is Route.NONE
    assert not any(r.category == "continuity" for r in d.reasons)


@pytest.mark.parametrize(
    "message",
    ["What did we decide earlier?", "do it like before", "last time you suggested pasta",
     "yesterday we fixed the login bug", "as previously agreed, ship on Monday"],
)
def test_temporal_markers_route_to_memory(gate: Gate, message: str) -> None:
    d = gate.decide(message)
    assert d.route.wants_memory, d.explain()
    assert any(r.category in ("temporal", "explicit") for r in d.reasons)


@pytest.mark.parametrize(
    "message",
    ["Do you remember my sister's name?", "Can you recall the hotel I liked?", "remind me what the plan was",
     "what did I say about the deadline", "what was that?"],
)
def test_recall_verbs_route_to_memory(gate: Gate, message: str) -> None:
    d = gate.decide(message)
    assert d.route.wants_memory
    assert any(r.category == "recall" for r in d.reasons)


# Written before the change they test (a new-user chat found "remind me how often the Lisbon VPN password is
# rotated" routed to no search, and "remind me when the dentist appointment is" lost its memory route when
# sets 35 and 36 joined): a request to be reminded of something is a recall request, asked or not.
@pytest.mark.parametrize("message", [
    "remind me how often the Lisbon VPN password is rotated",
    "remind me when the dentist appointment is",
    "remind me where we parked at the airport",
    "remind me who is presenting on thursday",
    "can you remind me how much the deposit was",
    "remind me whether Leo is allergic to nuts",
    "remind me when Grandma's flight lands",
    "please remind me which train we take to Porto",
    "remind me how we fixed the flaky login test",
    "remind me when my passport expires",
])
def test_requests_to_be_reminded_search_memory(gate: Gate, message: str) -> None:
    assert gate.decide(message).route.wants_memory, gate.decide(message).explain()


@pytest.mark.parametrize("message", ["remind me to call mom tomorrow", "remind me in 10 minutes",
                                     "remind me when I get home to water the plants", "remind me at 5pm"])
def test_reminders_to_do_something_do_not_search_memory(gate: Gate, message: str) -> None:
    assert not gate.decide(message).route.wants_memory, gate.decide(message).explain()


@pytest.mark.parametrize("message", ["remind me to call mom tomorrow", "What is a product recall?"])
def test_recall_words_that_are_not_recall(gate: Gate, message: str) -> None:
    assert not gate.decide(message).route.wants_memory


@pytest.mark.parametrize(
    "message",
    ["can you help me find a hotel for my trip?", "Which of these is suitable for me?"],
)
def test_personal_needs_route_to_memory(gate: Gate, message: str) -> None:
    d = gate.decide(message)
    assert d.route.wants_memory, d.explain()
    assert any(r.category == "personal" for r in d.reasons)


def test_a_fact_handed_over_with_the_question_needs_the_documents(gate: Gate) -> None:
    # the writers of the tune sets label "I'm learning Spanish, what's the subjunctive?" and the like corpus
    # (11 of 15 such messages): the user's fact is in the message; the answer is general knowledge
    d = gate.decide("I prefer vegan food, what should I cook tonight?")
    assert d.route.wants_corpus, d.explain()
    assert any(r.category == "personal" for r in d.reasons)


def test_a_lone_possessive_is_too_weak(gate: Gate) -> None:
    d = gate.decide("my day was fine")
    assert d.route is Route.NONE
    assert d.memory_score > 0  # "my" fired, but below the threshold


@pytest.mark.parametrize(
    "message",
    ["How are you?", "thanks!", "ok cool", "hi", "great", "Good morning!", "Thank you so much!",
     "haha nice", "Got it.", "See you tomorrow!", "I'm good, how about you?"],
)
def test_small_talk_routes_to_none(gate: Gate, message: str) -> None:
    d = gate.decide(message)
    assert d.route is Route.NONE
    assert d.confidence > 0.5


@pytest.mark.parametrize(
    "message",
    ["What does TriBridConfig do?", "How does BM25 work?", "Explain the retry policy", "define idempotent",
     "What is the difference between TCP and UDP?"],
)
def test_knowledge_questions_route_to_corpus(gate: Gate, message: str) -> None:
    d = gate.decide(message)
    assert d.route is Route.CORPUS, d.explain()
    assert d.corpus_score >= 0.5


@pytest.mark.parametrize(
    ("message", "memory", "corpus"),
    [
        # requests not phrased as questions (tune set 24): the user's own things search memory,
        # general topics the corpus, a social request nothing
        ("list everything you know about the Lisbon trip", True, False),
        ("give me a recap of the Lisbon plans", True, False),
        ("tell me about my sister", True, False),
        ("tell me about the French revolution", False, True),
        ("summarise the plot of Hamlet", False, True),
        ("tell me a joke", False, False),
        ("give me five minutes", False, False),
        ("tell me about it, mondays are the worst", False, False),
        ("list them again", True, False),
        # exclamations shaped as questions and reactions naming someone ask nothing (tune sets 26 / 27)
        ("wait, seriously?", False, False),
        ("isn't that wild", False, False),
        ("how cute is that?", False, False),
        ("poor Nina 😢", False, False),
        ("lol he's hopeless", False, False),
        # social requests and corrections without a lead word (tune sets 30 / 31)
        ("tell me a joke about cats", False, False),
        ("cheer me up, rough day", False, False),
        ("tell me about the french revolution", False, True),
        ("it's Dr. Alvarez, not Dr. Alvaro", True, False),
        # small talk about the assistant itself (tune sets 28 / 29)
        ("do you ever get tired of chatting?", False, False),
        ("are you having a nice evening?", False, False),
        ("do you remember what my dog is called?", True, False),
        # advice about a named pet or child needs their facts and the documents (tune sets 26 / 27)
        ("can Milo have peanut butter?", True, True),
        ("how do I get Ava to eat vegetables", True, True),
        ("what age should Leo start piano", True, True),
        # a recommendation fitted to the user's own tastes (tune set 32)
        ("suggest a podcast I'd enjoy on my commute", True, True),
        ("recommend some classic sci-fi novels", False, True),
        # the same openers still ask when the message asks something
        ("omg what's my flight number again", True, False),
        ("can you imagine a world without bees, what would happen?", False, True),
    ],
)
def test_messages_are_routed_by_what_they_need(gate: Gate, message: str, memory: bool, corpus: bool) -> None:
    d = gate.decide(message)
    assert (d.route.wants_memory, d.route.wants_corpus) == (memory, corpus), d.explain()


def test_name_as_a_noun_is_not_a_request(gate: Gate) -> None:
    d = gate.decide("name of the airbnb host in kyoto")
    assert "knowledge.request" not in {r.name for r in d.reasons}, d.explain()
    assert "knowledge.request" in {r.name for r in gate.decide("name three impressionist painters").reasons}


def test_both_only_when_the_message_needs_both(gate: Gate) -> None:
    # a follow-up question needs the conversation, not documents: the question form alone is no corpus need
    assert gate.decide("What are its symptoms?").route is Route.MEMORY
    # a personal question that also asks for world knowledge needs both
    d = gate.decide("Is the cheese we bought safe for pregnant women?")
    assert d.route is Route.BOTH, d
    assert d.route.wants_memory and d.route.wants_corpus


@pytest.mark.parametrize(
    "message",
    ["no, I meant the earlier thing", "not that one", "that's not what I asked", "wrong one",
     "No, I mean the last option you suggested.", "you misunderstood me, I was asking about trains"],
)
def test_corrections(gate: Gate, message: str) -> None:
    d = gate.decide(message)
    assert d.correction is True, d.explain()
    assert d.route.wants_memory


@pytest.mark.parametrize("message", ["What is the capital of France?", "thanks!", "Remember that cheese project?"])
def test_non_corrections(gate: Gate, message: str) -> None:
    assert gate.decide(message).correction is False


def test_correction_routes_to_memory_even_against_small_talk() -> None:
    cfg = GateConfig(extra_patterns=(
        GatePattern(category="smalltalk", regex=r"\bnope\b", weight=5.0, target="none"),
    ))
    d = Gate(cfg).decide("nope, not that one")
    assert d.correction is True
    assert d.route is Route.MEMORY


# --- decision contents -------------------------------------------------------------

def test_reasons_name_every_fired_pattern_with_original_text(gate: Gate) -> None:
    d = gate.decide("Remember THAT Cheese project?")
    assert isinstance(d, GateDecision)
    matches = {r.match for r in d.reasons}
    assert "Remember" in matches
    assert "THAT Cheese" in matches  # original casing, not the lowered text
    regexes = {p.regex for p in DEFAULT_PATTERNS}
    for r in d.reasons:
        assert r.pattern in regexes
        assert r.match
    assert "recall" in d.explain()


def test_scores_are_sums_of_reason_weights(gate: Gate) -> None:
    d = gate.decide("As we discussed, what are its symptoms?")
    by_target = {p.regex: p.target for p in DEFAULT_PATTERNS}
    mem = sum(r.weight for r in d.reasons if by_target[r.pattern] == "memory")
    corp = sum(r.weight for r in d.reasons if by_target[r.pattern] == "corpus")
    assert math.isclose(d.memory_score, mem)
    assert math.isclose(d.corpus_score, corp)


def test_reasons_are_ordered_by_position(gate: Gate) -> None:
    msg = "what about that function we talked about yesterday?"
    d = gate.decide(msg)
    starts = [msg.lower().find(r.match.lower()) for r in d.reasons]
    assert starts == sorted(starts)


def test_no_trigger_means_none_with_high_confidence(gate: Gate) -> None:
    d = gate.decide("Pizza.")
    assert d.route is Route.NONE
    assert d.reasons == ()
    assert d.confidence > 0.8
    assert "no trigger" in d.explain()


@functools.cache
def _shared_gate() -> Gate:
    """One default gate for the property test (building one per example cost 40 of its 42 s)."""
    return Gate()


@given(st.text(min_size=1, max_size=200).filter(lambda s: not s.isspace()))
@settings(max_examples=200, deadline=None)
def test_any_text_gives_a_valid_decision(text: str) -> None:
    d = _shared_gate().decide(text)
    assert 0.0 <= d.confidence <= 1.0
    assert isinstance(d.route, Route)


def test_long_and_adversarial_messages_finish(gate: Gate) -> None:
    # Possessive/atomic groups keep these linear; a catastrophic pattern would hang here.
    for msg in ("ok " * 5000 + "x", "good night " * 3000 + "?", "that " * 5000, "a" * 50000, "it " * 5000):
        assert isinstance(gate.decide(msg), GateDecision)


def test_curly_apostrophes_are_normalised(gate: Gate) -> None:
    assert gate.decide("That\u2019s not what I asked").correction is True


def test_unicode_whose_lowercase_changes_length(gate: Gate) -> None:
    d = gate.decide("\u0130stanbul trip: remember the hotel?")  # "İ".lower() is two code points
    assert d.route.wants_memory


# --- invalid input -----------------------------------------------------------------

@pytest.mark.parametrize("bad", [None, 42, b"bytes", ["hi"]])
def test_non_str_raises(gate: Gate, bad: object) -> None:
    with pytest.raises(InvalidInputError, match="must be str"):
        gate.decide(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", "   ", "\n\t"])
def test_empty_raises(gate: Gate, bad: str) -> None:
    with pytest.raises(InvalidInputError, match="empty"):
        gate.decide(bad)


# --- configuration -------------------------------------------------------------------

def test_bad_regex_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=re.escape("(unclosed")):
        GatePattern(category="explicit", regex="(unclosed", weight=1.0, target="memory")


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"category": "", "regex": "x", "weight": 1.0, "target": "memory"}, "category"),
        ({"category": "c", "regex": "", "weight": 1.0, "target": "memory"}, "regex"),
        ({"category": "c", "regex": "a*", "weight": 1.0, "target": "memory"}, "empty string"),
        ({"category": "c", "regex": "x", "weight": float("nan"), "target": "memory"}, "weight"),
        ({"category": "c", "regex": "x", "weight": True, "target": "memory"}, "weight"),
        ({"category": "c", "regex": "x", "weight": 1.0, "target": "elsewhere"}, "elsewhere"),
    ],
)
def test_gate_pattern_validation(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(needle)):
        GatePattern(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"memory_threshold": 0}, "memory_threshold"),
        ({"corpus_threshold": -1.0}, "corpus_threshold"),
        ({"confidence_slope": float("inf")}, "confidence_slope"),
        ({"patterns": ("x",)}, "patterns"),
        ({"patterns": (), "extra_patterns": ()}, "at least one pattern"),
        ({"category_weights": {"personal": -1}}, "personal"),
        ({"category_weights": ["personal"]}, "category_weights"),
    ],
)
def test_gate_config_validation(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(needle)):
        GateConfig(**kwargs)  # type: ignore[arg-type]


def test_gate_rejects_a_non_config() -> None:
    with pytest.raises(ConfigError, match="GateConfig"):
        Gate("strict")  # type: ignore[arg-type]


def test_extra_patterns_and_category_weights() -> None:
    extra = GatePattern(category="explicit", regex=r"\bsprint review\b", weight=1.0, target="memory")
    assert Gate().decide("Sprint review notes, please!").route is Route.NONE
    assert Gate(GateConfig(extra_patterns=(extra,))).decide("Sprint review notes, please!").route is Route.MEMORY
    assert Gate(GateConfig(extra_patterns=(extra,), learned=False)).decide(
        "Sprint review notes, please!").route is Route.MEMORY
    # category weights retune the hand-set pattern scores (learned=False routes on them alone)
    no_personal = Gate(GateConfig(category_weights={"personal": 0.0}, learned=False))
    d = no_personal.decide("help me out please")
    assert d.route is Route.NONE
    assert not any(r.category == "personal" for r in d.reasons)
    doubled = Gate(GateConfig(category_weights={"personal": 2.0, "statement": 0.0}, learned=False)).decide(
        "my day was fine")
    assert doubled.route is Route.MEMORY


def test_thresholds_change_routes() -> None:
    msg = "this error keeps happening"  # continuity 0.6
    assert Gate(GateConfig(memory_threshold=0.5, category_weights={}, learned=False)).decide(msg).route is Route.MEMORY
    assert Gate(GateConfig(memory_threshold=0.7, category_weights={}, learned=False)).decide(msg).route is Route.NONE


def test_probability_thresholds_change_learned_routes() -> None:
    msg = "this error keeps happening"
    p = Gate().decide(msg).memory_probability
    assert p is not None and 0.05 < p < 0.95
    assert Gate(GateConfig(memory_probability=p * 0.9)).decide(msg).route.wants_memory
    assert not Gate(GateConfig(memory_probability=min(p * 1.1, 0.99))).decide(msg).route.wants_memory


def test_negative_weights_push_away() -> None:
    veto = GatePattern(category="veto", regex=r"\bhypothetically\b", weight=-2.0, target="memory")
    d = Gate(GateConfig(extra_patterns=(veto,))).decide("hypothetically, what about that function?")
    assert d.route is Route.NONE or not d.route.wants_memory


def test_uppercase_and_unindexable_patterns_still_work() -> None:
    extras = (
        GatePattern(category="x", regex=r"\bTICKET-\d+\b", weight=1.0, target="memory"),    # uppercase
        GatePattern(category="x", regex=r"\w+ingly\b", weight=1.0, target="memory"),        # no first word
        GatePattern(category="x", regex=r"\b(\w+) \1\b", weight=1.0, target="memory"),      # backreference
        GatePattern(category="x", regex=r"(?i)\bzorp\b", weight=1.0, target="memory"),      # global flag
    )
    g = Gate(GateConfig(patterns=(), extra_patterns=extras))
    assert g.decide("see ticket-42 please").route is Route.MEMORY
    assert g.decide("she smiled knowingly").route is Route.MEMORY
    assert g.decide("it was very very late").route is Route.MEMORY
    assert g.decide("ZORP").route is Route.MEMORY
    assert g.decide("nothing here").route is Route.NONE


# --- first-word analysis: indexing never changes what matches ------------------------------

@pytest.mark.parametrize(
    ("regex", "words", "mode"),
    [
        (r"\bthat\b", {"that"}, "at"),
        (r"\b(?:that|those)\s+\w+", {"that", "those"}, "at"),
        (r"\bremember(?:ed|s)?\b", {"remember", "remembered", "remembers"}, "at"),
        (r"(?<=\w\s)it\b", {"it"}, "at"),
        (r"^\W*(?:hi|hello)\W*$", {"hi", "hello"}, "first"),
        (r"(?:^|[.!?]\s*)what\b", {"what"}, "search"),
    ],
)
def test_analyse_derives_first_words(regex: str, words: set[str], mode: str) -> None:
    trig = _analyse(regex)
    assert trig is not None
    assert set(trig.words) == words
    assert trig.mode == mode


@pytest.mark.parametrize("regex", [r"that", r"\w+ing\b", r"\bfoo\w*", r"\?\s*$", r"[a-z]+\b", r"\bx\B"])
def test_analyse_refuses_what_it_cannot_prove(regex: str) -> None:
    assert _analyse(regex) is None


def test_every_default_pattern_is_indexed() -> None:
    # A pattern the analysis cannot index is searched on every message: correct
    # but slow, so the defaults must all be indexable by a word.
    for p in DEFAULT_PATTERNS:
        if p.fallback:  # searched only when nothing else fired
            continue
        trig = _analyse(p.regex)
        assert trig is not None, p.regex
        assert trig.mode in ("at", "first"), p.regex


def _brute_force(config: GateConfig, message: str) -> Counter[str]:
    """Every pattern searched on its own: what the indexed gate must reproduce."""
    low = message.replace("\u2019", "'").lower()
    fired: Counter[str] = Counter()
    pats = [p for p in config.patterns + config.extra_patterns
            if p.weight * config.category_weights.get(p.category, 1.0) != 0]
    for fallback in (False, True):  # fallbacks only when nothing else fired
        if fallback and fired:
            break
        for p in pats:
            if p.fallback is not fallback:
                continue
            flags = re.IGNORECASE if any(c.isupper() for c in re.sub(r"\\.", "", p.regex)) else 0
            m = re.search(p.regex, low, flags)
            if m and not (p.unless_before and re.search(p.unless_before, low[:m.start()], re.IGNORECASE)):
                fired[p.regex] += 1
    return fired


_VOCAB = [
    "that", "this", "those", "these", "it", "its", "the", "other", "one", "ones", "same", "what", "about",
    "how", "are", "you", "is", "was", "cool", "great", "thanks", "ok", "remember", "recall", "remind", "me",
    "we", "discussed", "said", "mentioned", "earlier", "before", "last", "time", "yesterday", "my", "i",
    "prefer", "recommend", "no", "meant", "not", "wrong", "function", "error", "files", "there", "again",
    "help", "find", "for", "does", "do", "explain", "why", "which", "and", "so", "hi", "good", "morning",
    "?", "!", ",", ".", "'s", "\u2019s", "TriBridConfig", "Is", "What", "THAT", "best", "first", "said",
    "told", "you", "there", "in", "to", "of", "day", "did", "a", "while", "ago", "should", "on", "monday",
]


@given(st.lists(st.sampled_from(_VOCAB), min_size=1, max_size=14))
@settings(max_examples=400, deadline=None)
def test_indexed_gate_matches_brute_force_search(words: list[str]) -> None:
    message = " ".join(words)
    cfg = GateConfig()
    got = Counter(r.pattern for r in _GATE.decide(message).reasons)
    assert got == _brute_force(cfg, message), message


_GATE = Gate()


# --- required words: a pattern is skipped only when it cannot match -----------------------------------


@pytest.mark.parametrize(
    ("regex", "sets"),
    [
        (r"\bfoo\s+(?:bar|baz)\b", [{"foo"}, {"bar", "baz"}]),
        (r"^\W*what\b.*\bmy\b", [{"my"}]),
        (r"\bwhy\s+(?:[\w-]+\s+){0,2}(?:my|our)\s+\w+", [{"why"}, {"my", "our"}]),
        (r"\bgo\s+(?:there|home)(?:\s+again)?", [{"go"}]),  # "there"/"home" may run on into a word: no set
        (r"\b(?:x\s+the\s+(?:cat|dog)|my)\b", [{"x", "my"}, {"cat", "dog", "my"}]),
        (r"\bit\s+\w+", [{"it"}]),
    ],
)
def test_required_words_derives_sets(regex: str, sets: list[set[str]]) -> None:
    from chatrecall.core._regex_index import required_words

    got = [set(s) for s in required_words(regex)]
    for want in sets:
        assert want in got, (regex, got)


@pytest.mark.parametrize("regex", [r"\w+ing\b", r"foo", r"\bfoo\w*", r"(?:\bx\b)?y", r"\b(?:a|\w+)\b"])
def test_required_words_gives_nothing_it_cannot_prove(regex: str) -> None:
    from chatrecall.core._regex_index import required_words

    assert required_words(regex) == ()


def _required_vocab() -> list[str]:
    """Words the default patterns require, a few per set, plus the brute-force vocabulary."""
    import random

    from chatrecall.core._regex_index import required_words

    rnd = random.Random(7)
    words = set(_VOCAB)
    for p in DEFAULT_PATTERNS:
        for ws in required_words(p.regex, re.IGNORECASE):
            words.update(rnd.sample(sorted(ws), min(3, len(ws))))
    return sorted(words)


_REQUIRED_VOCAB = _required_vocab()


def test_required_words_hold_in_every_match() -> None:
    # Soundness on the whole default table: whenever a pattern matches a message, the message holds a word
    # of each set the pattern requires (so the gate's skipping never drops a match).
    import random

    from chatrecall.core._gate import _TOKEN
    from chatrecall.core._regex_index import required_words

    rnd = random.Random(11)
    messages = [" ".join(rnd.choice(_REQUIRED_VOCAB) for _ in range(rnd.randint(1, 16))) for _ in range(400)]
    messages += ["What time is my dentist appointment tomorrow?", "did I tell you what my sister's name is",
                 "how old is my dog again", "who is coming to the wedding", "what's the wifi password",
                 "no, I meant the earlier thing", "ok thanks, that worked", "where did we park the car"]
    lows = [m.replace("\u2019", "'").lower() for m in messages]
    words = [set(_TOKEN.findall(low)) for low in lows]
    checked = 0
    for p in DEFAULT_PATTERNS:
        sets = [s for s in required_words(p.regex, re.IGNORECASE) if all(w.isascii() for w in s)]
        if not sets:
            continue
        rx = re.compile(p.regex, re.IGNORECASE)
        for low, ws in zip(lows, words):
            if rx.search(low) is not None:
                checked += 1
                assert all(not s.isdisjoint(ws) for s in sets), (p.name, low)
    assert checked > 100  # the messages do exercise the patterns


def test_required_by_first_word_holds_in_every_match_at_the_word() -> None:
    # Soundness: whenever a pattern matches a message at one of its first words, the message holds a word of
    # each set required there (the gate tries the pattern at that word only when it does).
    import random

    from chatrecall.core._gate import _TOKEN
    from chatrecall.core._regex_index import required_by_first_word

    rnd = random.Random(13)
    by_word = {p.name: required_by_first_word(p.regex, re.IGNORECASE) for p in DEFAULT_PATTERNS}
    vocab = sorted(set(_REQUIRED_VOCAB) | {w for d in by_word.values() for w in d}
                   | {w for d in by_word.values() for sets in d.values() for s in sets for w in sorted(s)[:3]})
    messages = [" ".join(rnd.choice(vocab) for _ in range(rnd.randint(1, 12))) for _ in range(1500)]
    checked = 0
    for p in DEFAULT_PATTERNS:
        at = by_word[p.name]
        if not at:
            continue
        rx = re.compile(p.regex, re.IGNORECASE)
        for message in messages:
            low = message.lower()
            words = set(_TOKEN.findall(low))
            for m in rx.finditer(low):
                first = _TOKEN.search(low, m.start())  # the word it is tried at (an anchored one: the first)
                if first is None or first[0] not in at:
                    continue
                checked += 1
                assert all(not s.isdisjoint(words) for s in at[first[0]]), (p.name, low)
    assert checked > 200
    was = by_word["personal.did_i_or_we"]["was"]
    assert frozenset({"i", "we"}) in was  # "\bwas\s+(?:i|we)\b" at "was"


@pytest.mark.parametrize(
    ("regex", "words"),
    [
        (r"^\W*(?:why|how so|why not)\W*$", {"why", "how", "so", "not"}),
        (r"^a\s*(?:\s+b)$", {"a", "b"}),  # a state seen before a repeat is still followed after it
        (r"^(?:thanks|ok)\b[^\w?]*$", {"thanks", "ok"}),  # [^\w?] matches non-word chars only
        (r"^(?:a|b c)\b\W*(?:x|y)?$", {"a", "b", "c", "x", "y"}),
    ],
)
def test_closed_words_derives_the_words(regex: str, words: set[str]) -> None:
    from chatrecall.core._regex_index import closed_words

    assert closed_words(regex) == words


@pytest.mark.parametrize("regex", [r"^\w+$", r"^a.b$", r"^a[^?]b$", r"^(?:ab)+$", r"\bok\W*$", r"^ok\b",
                                   r"(?m)^ok$", r"^(?:a\s*)+$", r"^\u212aelvin$"])
def test_closed_words_gives_nothing_it_cannot_prove(regex: str) -> None:
    from chatrecall.core._regex_index import closed_words

    assert closed_words(regex) is None


def test_closed_words_hold_in_every_match() -> None:
    # Soundness on the default table: a message a whole-message pattern matches holds only words of its set.
    import random

    from chatrecall.core._gate import _TOKEN
    from chatrecall.core._regex_index import closed_words

    rnd = random.Random(17)
    closed = {p.name: (re.compile(p.regex, re.IGNORECASE), closed_words(p.regex, re.IGNORECASE))
              for p in DEFAULT_PATTERNS}
    closed = {k: v for k, v in closed.items() if v[1] is not None}
    assert {"smalltalk.1", "continuity.20"} <= set(closed)
    vocab = sorted({w for _, ws in closed.values() if ws for w in ws} | {"zebra", "my", "meeting"})
    seps = [" ", ", ", "! ", "? ", " - ", "...", "  "]
    checked = 0
    for _ in range(3000):
        message = rnd.choice(["", " ", "oh "]) + "".join(
            rnd.choice(vocab) + rnd.choice(seps) for _ in range(rnd.randint(1, 5))).strip() + rnd.choice(["", "?", "!"])
        for rx, ws in closed.values():
            if rx.match(message) is not None:
                checked += 1
                assert ws is not None and set(_TOKEN.findall(message)) <= ws, message
    assert checked > 100


@pytest.mark.parametrize(
    ("regex", "sets"),
    [
        (r"\bthe\s+\w+\s*\?\s*$", [{"?"}]),
        (r"(?:(?<=[.!?;:]\s)|(?<=[.!?;:]\s\s))what\b", [{".", "!", "?", ";", ":"}]),  # what a lookbehind reads
        (r"\bno\s*,\s*(?:i|we)\s+meant\b", [{","}]),
        (r"(?:a,|b:)x", [{",", ":"}]),  # a branch: one set of each alternative, united
        (r"(?=[^?]*\?)how\b", [{"?"}]),
    ],
)
def test_required_chars_derives_sets(regex: str, sets: list[set[str]]) -> None:
    from chatrecall.core._regex_index import required_chars

    got = [set(s) for s in required_chars(regex)]
    assert got == sets, (regex, got)


@pytest.mark.parametrize("regex", [r"x\??", r"(?:a|\?)", r"[^?]x", r"(?!\?)x", r"(?<!,)x", r"(?:x,)*y", r"x[\w?]",
                                   r"x\s", r"(x)(?(1)\?|y)", r"\W"])
def test_required_chars_gives_nothing_it_cannot_prove(regex: str) -> None:
    from chatrecall.core._regex_index import required_chars

    assert required_chars(regex) == ()


def test_required_chars_hold_in_every_match() -> None:
    # Soundness on the whole default table, as for the words: whenever a pattern matches a message, the
    # message holds a char of each punctuation set the pattern requires.
    import random

    from chatrecall.core._regex_index import required_chars

    rnd = random.Random(13)
    marks = ["?", ",", "'", ":", ".", "!", ";", "", "", ""]
    messages = [" ".join(rnd.choice(_REQUIRED_VOCAB) + rnd.choice(marks) for _ in range(rnd.randint(1, 16)))
                for _ in range(600)]
    messages += ["what's the wifi password?", "no, I meant the earlier thing", "ok. what is it", "hmm: why so",
                 "the dentist?", "Error: module not found", "given the rain, should I go?", "it's my sister's"]
    lows = [m.replace("\u2019", "'").lower() for m in messages]
    checked = 0
    for p in DEFAULT_PATTERNS:
        sets = required_chars(p.regex, re.IGNORECASE)
        if not sets:
            continue
        rx = re.compile(p.regex, re.IGNORECASE)
        for low in lows:
            if rx.search(low) is not None:
                checked += 1
                assert all(not s.isdisjoint(low) for s in sets), (p.name, low)
    assert checked > 100  # the messages do exercise the patterns


@pytest.mark.parametrize(
    ("regex", "flags", "safe"),
    [
        (r"\bfoo\s+(?:bar|[a-z]+)\W*$", 0, True),
        (r"\bKeep\b", re.IGNORECASE, True),
        (r"\bkeep\b", re.IGNORECASE, True),
        ("\u212aeep", re.IGNORECASE, False),  # the Kelvin sign folds to "k" in Unicode only
        (r"\u212aeep", re.IGNORECASE, False),  # written as an escape
        (r"[^\u00e9]x", 0, False),
        (r"caf[\u00e0-\u00ff]", 0, False),
        (r"(?u)\bx", 0, False),  # does not compile with re.ASCII
    ],
)
def test_ascii_safe(regex: str, flags: int, safe: bool) -> None:
    from chatrecall.core._regex_index import ascii_safe

    assert ascii_safe(regex, flags) is safe


@pytest.mark.parametrize("message", [
    "what is my dog's name?", "what\x1cis my dog's name?", "no,\x1fI meant the\x1dother one",
    "how old is my\x0bdog\x0cagain", "what did we decide about the caf\u00e9", "\u017fo what did I \u212aeep",
    "remind me\x1e what my sister said", "is it\x1fsafe for my kids?\x1c",
])
def test_ascii_regexes_match_as_the_unicode_ones(message: str) -> None:
    # An ASCII message runs the patterns compiled with re.ASCII; \x1c-\x1f (spaces to Unicode's \s only) and
    # non-ASCII letters keep the patterns as written. Either way the gate finds what searching finds.
    assert Counter(r.pattern for r in _GATE.decide(message).reasons) == _brute_force(GateConfig(), message)


@given(st.lists(st.sampled_from(_REQUIRED_VOCAB), min_size=1, max_size=16))
@settings(max_examples=300, deadline=None)
def test_gate_with_required_words_matches_brute_force(words: list[str]) -> None:
    message = " ".join(words)
    got = Counter(r.pattern for r in _GATE.decide(message).reasons)
    assert got == _brute_force(GateConfig(), message), message


def test_required_words_skip_work() -> None:
    from chatrecall.core._gate import _TOKEN

    g = Gate()
    low = "what time is it in tokyo"
    mask = 0
    for w in _TOKEN.findall(low):
        mask |= g._lookup[w][3]
    anchored = g._first["what"]
    tried = {i for i, _ in anchored.run(mask & anchored.bits)}
    names = {g._pats[i][6] for i in tried}
    assert "personal.question_about_mine" not in names  # no "my", "our", family word, ...
    assert len(tried) < len(anchored._pats) / 2
    _, _, _, _, grp, _ = g._lookup["what"][2]  # (" what ", skip, group bits, variants, group, rare)
    full = grp.variants[grp.bits][1]
    assert len(grp.variant(mask & grp.bits)[1]) < len(full)
    # a message holding the words tries the pattern; one with non-ASCII letters (which IGNORECASE may match
    # with ASCII ones) skips nothing; emoji change nothing; all find what searching every pattern finds
    assert "personal.question_about_mine" in {
        r.name for r in g.decide("what time is my dentist appointment tomorrow").reasons}
    for message in ("what time is my dentist appointment tomorrow \u00e9", "\u017fo what did I \u212aeep",
                    "what time is it in tokyo \U0001f62d", "how old is my dog again \U0001f436",
                    "wha\u0301t did we \u0130 decide"):
        assert Counter(r.pattern for r in g.decide(message).reasons) == _brute_force(GateConfig(), message)


def test_bounded_mask_tables_change_no_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    # Past the bounds the tables start again empty and the merged groups fall back on their full regex:
    # slower, same decisions.
    import chatrecall.core._gate as gate_module

    messages = ["Remember that cheese project?", "what time is my dentist appointment tomorrow",
                "what did we decide about the venue", "how old is my dog again", "thanks, that worked!",
                "what is the capital of france", "did I tell you what my sister's name is", "no, I meant the other one"]
    expected = [_GATE.decide(m) for m in messages]
    monkeypatch.setattr(gate_module, "_MAX_MASKS", 1)
    monkeypatch.setattr(gate_module, "_MAX_SUBSETS", 1)
    g = Gate()
    assert [g.decide(m) for m in messages] * 2 == [g.decide(m) for m in messages * 2] == expected * 2


def test_bounded_reason_cache_changes_no_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    # Past _REASON_CACHE reasons every pattern's table starts again empty: the same decisions, the count bounded.
    import chatrecall.core._gate as gate_module

    messages = ["Remember that cheese project?", "what did we decide about the venue", "how old is my dog again",
                "thanks, that worked!", "did I tell you what my sister's name is", "no, I meant the other one"]
    expected = [_GATE.decide(m) for m in messages]
    monkeypatch.setattr(gate_module, "_REASON_CACHE", 3)
    g = Gate()
    assert [g.decide(m) for m in messages * 2] == expected * 2
    assert g._n_reasons <= 3
    assert sum(len(c) for c in g._reasons) <= 3


def test_indexed_gate_matches_brute_force_on_examples() -> None:
    cfg = GateConfig()
    for message in (
        "Remember that cheese project?", "no, I meant the earlier thing", "What does TriBridConfig do?",
        "Ok, so what about the other one? Thanks!", "I'd like to stay there. Is it safe for my kids?",
        "  ...hi!!", "That's great, thanks", "Which of these is suitable for me?",
    ):
        got = Counter(r.pattern for r in _GATE.decide(message).reasons)
        assert got == _brute_force(cfg, message), message


def test_decide_is_thread_safe() -> None:
    from concurrent.futures import ThreadPoolExecutor

    g = Gate()
    messages = ["Remember that cheese project?", "thanks!", "What are its symptoms?", "not that one",
                "What does TriBridConfig do?", "my day was fine"] * 50
    expected = [g.decide(m) for m in messages]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(g.decide, messages))
    assert got == expected


def test_warm_compiles_every_regex_once_and_changes_no_decision() -> None:
    # the last message holds a non-ASCII letter, so every pattern is tried: "what" and "the" run their full
    # merged regexes (the others try their few patterns one by one and compile nothing)
    messages = ["Remember that cheese project?", "thanks!", "what grade is Ava in", "tipping etiquette in japan",
                "no, I meant the earlier thing", "gate code for mom's building", "How do I roll back a deploy?",
                "what did we decide about the caf\u00e9"]
    cold = Gate()
    before = [cold.decide(m) for m in messages]  # compiles the regexes these words need, lazily
    fresh = Gate()
    assert fresh.warm() > 0
    assert fresh.warm() == 0  # everything already compiled
    assert [fresh.decide(m) for m in messages] == before
    n_fresh = Gate().warm()
    assert 0 < cold.warm() < n_fresh  # the cold gate had compiled some already, on first use


def test_unless_before_drops_a_pronoun_resolved_in_the_message() -> None:
    it = GatePattern(category="continuity", regex=r"\bit\b", weight=1.0, target="memory",
                     unless_before=r"\ba\s+steak\b")
    gate = Gate(GateConfig(patterns=(it,)))
    assert gate.decide("how long should I rest a steak after grilling it").route is Route.NONE
    assert gate.decide("how long should I rest it").route is Route.MEMORY
    # the default gate: an antecedent in the message, or none
    assert Gate().decide("how often should rabbits get their nails trimmed").route is Route.CORPUS
    assert Gate(GateConfig(learned=False)).decide("how are they doing?").route is not Route.CORPUS
    assert Gate().decide("can you fix it").route is Route.MEMORY


@pytest.mark.parametrize("bad", [3, "(unclosed"])
def test_unless_before_is_validated(bad: object) -> None:
    with pytest.raises(ConfigError, match="unless_before"):
        GatePattern(category="x", regex=r"\bx\b", weight=1.0, target="memory", unless_before=bad)  # type: ignore[arg-type]


def test_fast_decision_constructor_equals_the_dataclass() -> None:
    # Gate builds its GateDecision slot by slot for speed: it must list every field, in order, and give
    # an object equal to the dataclass constructor's (frozen: still immutable).
    import dataclasses

    from chatrecall.core._gate import _DECISION_FIELDS, _decision
    from chatrecall.core._types import GateDecision, GateReason

    assert tuple(f.name for f in dataclasses.fields(GateDecision)) == _DECISION_FIELDS
    reason = GateReason("personal", "x", 0.7, "my cat", "personal.my_thing")
    args = (Route.BOTH, 0.8, 1.4, 0.6, (reason,), True, 0.9, 0.7, "question")
    fast = _decision(*args)
    assert fast == GateDecision(**dict(zip(_DECISION_FIELDS, args)))
    assert hash(fast) == hash(GateDecision(**dict(zip(_DECISION_FIELDS, args))))
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.route = Route.NONE  # type: ignore[misc]


def test_a_question_rule_decision_says_so(gate: Gate) -> None:
    """A new user read "route=corpus p(memory)=0.24 p(corpus)=0.17" and could not tell why it searched: the
    question rule had kept the pattern scores' route. The decision and its explanation now name the rule."""
    d = gate.decide("what colour is the queen marked?")
    assert d.rule == "question" and d.route is not Route.NONE
    assert d.memory_probability is not None and d.memory_probability < 0.5
    assert "question rule" in d.explain()
    plain = gate.decide("what's my cat called?")
    assert plain.rule == "" and "question rule" not in plain.explain()
    assert Gate(GateConfig(learned=False)).decide("what colour is the queen marked?").rule == ""


#: Follow-ups that ask the documents something (the route plan's rule 8 searches them again after a document answer)
FOLLOW_UPS_THAT_ASK = [
    "and what's the pitch fee there?", "and on Sundays?", "tell me more about that one", "ok, and list the fees",
    "so what about the deposit", "please explain that clause", "and how about the second one", "show me the rest",
]
#: Statements that continue the conversation but ask nothing (helper-86: "so she's Noodle now" drew 5 passages)
STATEMENTS_THAT_CONTINUE = [
    "Also, Pixel has a new name - my niece kept calling her Noodle and it stuck, so she's Noodle now.",
    "listen, she is Noodle now", "Great, I'll pay it this week then.", "That one sounds good, I'll book it.",
    "ok that makes sense", "and that's the one we used last year", "so the deposit is sorted then",
]


@pytest.mark.parametrize("message", FOLLOW_UPS_THAT_ASK)
def test_follow_ups_that_ask_or_request(message: str) -> None:
    assert asks_or_requests(message.lower())


@pytest.mark.parametrize("message", STATEMENTS_THAT_CONTINUE)
def test_statements_neither_ask_nor_request(message: str) -> None:
    assert not asks_or_requests(message.lower())
