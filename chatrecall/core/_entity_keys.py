"""The stored-key contract: how an entity's surface form becomes its lookup key.

Every key in a stored :attr:`~chatrecall.core.Record.entities` (in the store
and in index snapshots) was made by this module, and the keys of a query are
made by it at read time: a stored record is found by an entity only when both
sides fold the same way. A change to any output here (a new plural rule, a
different date format, one more stripped character) therefore silently stops
old records from matching new queries until they are re-extracted.
``tests/test_entity_keys.py`` pins the output; a change that makes it fail
must come with a bumped format version (see that test's docstring).

What lives here and nowhere else:

* :func:`fold_key`: case, Latin accents, surrounding punctuation, possessives,
  whitespace and the plural of the last word;
* :func:`date_key` and :func:`qty_key`: canonical keys of dates, times and
  quantities (``8 May, 2023`` -> ``2023-05-08``, ``3 kids`` -> ``3 kid``);
* the word tables of :func:`singular` (irregular plurals, words that only
  look plural); they are kept in code, beside the rules that read them, so
  that editing one is visibly a change to the contract;
* :func:`lower_same_length`, the offset-preserving lowercase the extractor
  reads keys from.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "MONTH_PATTERN",
    "NUMBER_PATTERN",
    "date_key",
    "fold_key",
    "lower_same_length",
    "qty_key",
    "singular",
    "strip_diacritics",
]


def _words(s: str) -> frozenset[str]:
    return frozenset(s.split())


#: Plurals whose singular is irregular, and words that look plural but are not.
_SINGULAR: dict[str, str] = {
    w: w for w in _words(
        "news series species always perhaps whereas towards afterwards besides sometimes nowadays "
        "lens means thanks yes was has does goes its his hers ours yours theirs "
        "christmas xmas texas vegas dallas kansas arkansas thomas lucas nicholas douglas atlas alias canvas "
        "gas bias pandas james charles jones williams adams roberts agnes frances dolores mercedes wales "
        "athens mars hades olympics macos ios chaos kudos cosmos ethos pathos thermos carlos bios dos los "
        "lagos santos marcos kronos windows kubernetes postgres jenkins rails https keras"
    )
}
_SINGULAR.update({
    "analyses": "analysis", "theses": "thesis", "crises": "crisis", "hypotheses": "hypothesis",
    "diagnoses": "diagnosis", "parentheses": "parenthesis", "synopses": "synopsis", "axes": "axis",
    "indices": "index", "matrices": "matrix", "vertices": "vertex", "appendices": "appendix",
    "buses": "bus", "gases": "gas", "lenses": "lens", "aliases": "alias", "biases": "bias",
    "canvases": "canvas", "atlases": "atlas", "statuses": "status", "viruses": "virus",
    "bonuses": "bonus", "campuses": "campus", "focuses": "focus", "censuses": "census",
    "corpuses": "corpus", "choruses": "chorus", "circuses": "circus", "geniuses": "genius",
    "menus": "menu", "gurus": "guru", "emus": "emu", "haikus": "haiku", "tutus": "tutu",
    "quizzes": "quiz", "knives": "knife", "wives": "wife", "lives": "life", "leaves": "leaf",
    "halves": "half", "shelves": "shelf", "wolves": "wolf", "thieves": "thief", "calves": "calf",
    "selves": "self", "loaves": "loaf", "apis": "api", "uris": "uri", "guis": "gui", "clis": "cli",
    "kpis": "kpi", "skis": "ski", "taxis": "taxi", "kiwis": "kiwi", "wikis": "wiki", "emojis": "emoji",
    "yetis": "yeti", "bikinis": "bikini", "martinis": "martini", "safaris": "safari", "alibis": "alibi",
    "khakis": "khaki", "tsunamis": "tsunami", "salamis": "salami",
})
# Singulars ending in -ie (movie -> movies), -che (cache -> caches), plurals in -oes.
_IE_WORDS = tuple(_words(
    "movie cookie selfie rookie zombie brownie smoothie calorie genie prairie auntie hoodie newbie "
    "sweetie techie freebie birdie goalie hippie pixie junkie foodie veggie indie aussie bookie cutie "
    "bestie barbie yuppie walkie talkie boogie collie lassie magpie pinkie quickie roomie sortie oldie "
    "goodie baddie beanie budgie lingerie menagerie rotisserie reverie camaraderie coterie"
))
_CHE_WORDS = _words(
    "cache niche ache avalanche moustache mustache quiche cliche tranche psyche creche attache douche "
    "microfiche panache"
)
_CHE_SUFFIXES = ("headache", "toothache", "heartache", "backache", "earache", "stomachache", "bellyache")
_OES_WORDS = _words(
    "heroes potatoes tomatoes echoes vetoes torpedoes volcanoes mosquitoes dominoes mangoes tornadoes "
    "embargoes"
)
_USE_WORDS = tuple(_words("abuse excuse accuse fuse muse ruse refuse reuse misuse overuse peruse"))

_MONTH_NUM = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "oct": 10, "nov": 11, "dec": 12,
}
_MONTH_NAME = ("", "january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december")

#: A month name or abbreviation, lowercase (shared with the extractor's date regexes).
MONTH_PATTERN = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
                 r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
#: A number with optional thousands separators and decimals (shared with the quantity regexes).
NUMBER_PATTERN = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_MON_IN_RE = re.compile(MONTH_PATTERN, re.IGNORECASE)
_DIGITS_RE = re.compile(r"\d+")
_TIME_PARTS_RE = re.compile(r"(\d+)(?::(\d+))?\s*([ap])", re.IGNORECASE)
_NUM_UNIT_RE = re.compile(
    rf"({NUMBER_PATTERN}(?:[ \t]?(?:-|–|to)[ \t]?{NUMBER_PATTERN})?)[ \t]*(.*)", re.DOTALL
)

_LEAD_STRIP = " \t\r\n\"'`‘’“”«»「」『』()[]{}<>,;:!?¡¿*"
_TRAIL_STRIP = " \t\r\n\"'`‘’“”«»「」『』()[]{}<>,;:!?.…*/\\"


def lower_same_length(text: str) -> str:
    """``text.lower()`` with every character kept in place (offsets stay valid)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)  # e.g. 'İ' lowers to 2 chars


# --------------------------------------------------------------------------
# Key folding
# --------------------------------------------------------------------------

def strip_diacritics(text: str) -> str:
    """``text`` without the combining marks U+0300..U+036F (NFKD, then NFC again).

    That block holds the Latin accents; dakuten and other script marks, which
    change meaning, are kept. (The block is shared: the Cyrillic breve of
    "й" and the diaeresis of "ё" go too, so "Йогурт" folds to "иогурт".)
    """
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(ch for ch in decomposed if not 0x300 <= ord(ch) <= 0x36F)
    return unicodedata.normalize("NFC", kept)


def singular(w: str, standalone: bool) -> str:
    """Singular of the lowercase word ``w`` (a heuristic good enough for keys)."""
    if len(w) < (4 if standalone else 3) or w[-1] != "s":
        return w
    hit = _SINGULAR.get(w)
    if hit is not None:
        return hit
    if w.endswith(("ss", "us", "is", "'s")):
        return w
    if w.endswith("ies"):
        if len(w) <= 4 or w[:-1].endswith(_IE_WORDS):
            return w[:-1]
        return w[:-3] + "y"
    if w.endswith("ches"):
        stem = w[:-1]  # caches -> cache, but teaches -> teach
        return stem if stem in _CHE_WORDS or stem.endswith(_CHE_SUFFIXES) else w[:-2]
    if w.endswith(("sses", "shes", "xes", "zzes")):
        return w[:-2]
    if w.endswith("oes"):
        return w[:-2] if w in _OES_WORDS else w[:-1]
    if w.endswith("yses"):
        return w[:-2] + "is"
    if w.endswith("uses"):
        if w.endswith(("ouses", "auses")) or w == "uses" or w[:-1].endswith(_USE_WORDS):
            return w[:-1]
        return w[:-2]  # prospectuses -> prospectus
    return w[:-1]


def fold_key(text: str) -> str:
    """Fold a surface form into a lookup key.

    Casefolds, strips Latin accents, surrounding quotes/brackets/punctuation
    and a trailing possessive, collapses whitespace and singularises the last
    word, so ``'TriBridConfig'``, ``tribridconfig`` and ``TriBridConfigs``
    share one key. Words that only look plural (``analysis``, ``status``,
    ``bus``, ``glass``, ``news``) are kept.

    Example:
        >>> fold_key("  Libraries ")
        'library'
        >>> fold_key("Caroline's")
        'caroline'
        >>> fold_key("José  García")
        'jose garcia'

    Args:
        text: Any surface form.

    Returns:
        The folded key ('' when nothing is left after stripping).
    """
    if text.isascii():
        if text.isalpha() and text[-1] not in "sS":
            return text.lower()  # fast path: a plain word
    else:
        text = strip_diacritics(text)
    s = " ".join(text.split()).lstrip(_LEAD_STRIP).rstrip(_TRAIL_STRIP)
    while len(s) > 3 and s[-2] in "'’" and s[-1] in "sS":  # every trailing possessive: folding is idempotent
        s = s[:-2].rstrip(_TRAIL_STRIP)
    if not s or s[-1] not in "sS":
        return s.casefold()
    # Singularise the trailing run of letters of the last word.
    i = len(s)
    while i > 0 and s[i - 1].isalpha():
        i -= 1
    run = s[i:]
    if len(run) >= 3 and run[-1] == "s" and run[:-1].isupper() and run[-2] != "S":
        # APIs -> api, GPUs -> gpu; not an acronym ending in S ("AAASs"), whose folded key ending in "s" would
        # be singularised again on a second fold
        return (s[:i] + run[:-1]).casefold()
    return s[:i].casefold() + singular(run.casefold(), i == 0 or s[i - 1] == " ")


# --------------------------------------------------------------------------
# Canonical keys of dates and quantities
# --------------------------------------------------------------------------

def date_key(kind: str, s: str) -> str:
    """Canonical key of a date or time the extractor matched.

    Args:
        kind: Which pattern matched: ``dmy``/``md`` (day and month, or month
            and year), ``iso``, ``time``; anything else is folded.
        s: The matched text.

    Returns:
        ``YYYY-MM-DD``, ``YYYY-MM``, ``<month> <day>`` or ``HH:MM``; other
        dates (``last week``, ``05/08/2023``) get :func:`fold_key`.
    """
    if kind in ("dmy", "md"):
        low = s.casefold()
        mm = _MON_IN_RE.search(low)
        if mm is not None:
            month = _MONTH_NUM[mm.group()[:3]]
            nums = _DIGITS_RE.findall(low)
            year = next((n for n in nums if len(n) == 4), None)
            day = next((n for n in nums if len(n) <= 2), None)
            if year and day:
                return f"{year}-{month:02d}-{int(day):02d}"
            if year:
                return f"{year}-{month:02d}"
            if day:
                return f"{_MONTH_NAME[month]} {int(day)}"
    elif kind == "iso":
        return s[:10]
    elif kind == "time":
        t = _TIME_PARTS_RE.match(s)
        if t is not None:
            h = int(t.group(1)) % 12 + (12 if t.group(3).lower() == "p" else 0)
            return f"{h:02d}:{int(t.group(2) or 0):02d}"
    return fold_key(s)


def qty_key(num_unit: str) -> str:
    """Canonical key of a number and its unit: ``1,000 users`` -> ``1000 user``, ``10 percent`` -> ``10%``."""
    m = _NUM_UNIT_RE.match(num_unit)
    if m is None:  # pragma: no cover - only number-led text is handed over
        return fold_key(num_unit)
    num = m.group(1).replace(",", "").replace(" ", "").replace("\t", "").replace("–", "-")
    unit = m.group(2)
    if not unit:
        return num
    if unit[0] == "%" or unit[:3].casefold() == "per":
        return num + "%"
    return f"{num} {fold_key(unit)}"
