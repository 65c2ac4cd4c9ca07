"""LLM-free entity extraction: compiled regexes plus word lists.

The extractor runs on every stored turn and on every query, so it is built
for speed. Every regex is compiled once at import. The ones that scan the text
start with a literal or a rare character class, so the regex engine skips
ahead in C; the many-branch date and quantity patterns are never scanned but
only tried with ``match`` at anchors (digit runs, date words). Passes that
cannot match (no digit, no slash, no quote, no date word...) are skipped with
a substring or set test.

Passes run in priority order and claim the characters they match, so a later
pass never re-reads them (``src/app/main.py`` is one path, not a path plus an
identifier plus a name):

1. paths (URLs, e-mails, Windows/Unix paths, file names, dotfiles)
2. errors (exception names, error codes, HTTP statuses, errno names)
3. dates (absolute, relative, weekdays, months, times, decades)
4. identifiers (dotted, snake/SCREAMING, CamelCase, ``call()``)
5. quantities (``5 GB``, ``200ms``, ``3 kids``, ``$40``, ``10%``)
6. bare years (``in 2022``)
7. names (capitalised words, multi-word proper nouns, acronyms)

Quoted text (``"..."``, ``'...'``, backticks) is found independently and does
not claim characters, so entities inside a quote are found as well.

A capitalised word that starts a sentence is only a name when it is not a
common English word: a stopword list covers function words everywhere, and an
8,000-word lexicon of frequent lowercase English words (taken from the
frequency order of a BPE vocabulary, minus proper nouns and first names)
covers sentence openers such as "Painting", "Great" or "Setbacks".

Keys are folded with :func:`fold_key` (case, accents, plurals, possessives),
except dates, times, quantities and HTTP statuses, which get a canonical key
so that ``8 May, 2023`` and ``May 8th 2023`` both map to ``2023-05-08``.
Key folding is the stored-key contract and lives in
:mod:`chatrecall.core._entity_keys` (pinned by ``tests/test_entity_keys.py``);
``fold_key`` is re-exported here. The long word lists live in
``chatrecall/data`` (``entity_stopwords.txt``, ``sentence_common_words.txt``,
``common_words.txt``); the short ones stay beside the pass that reads them.
"""

from __future__ import annotations

import re
import unicodedata
from importlib import resources

from ._entity_keys import (
    MONTH_PATTERN,
    NUMBER_PATTERN,
    date_key,
    fold_key,
    lower_same_length,
    qty_key,
    singular,
)
from ._errors import ConfigError, InvalidInputError
from ._types import Entity

__all__ = ["DEFAULT_STOPWORDS", "RegexEntityExtractor", "fold_key"]


# --------------------------------------------------------------------------
# Word lists
# --------------------------------------------------------------------------

def _words(s: str) -> frozenset[str]:
    return frozenset(s.split())


def _word_file(name: str) -> frozenset[str]:
    """The words of ``chatrecall/data/<name>`` (whitespace-separated, ``#`` starts a comment)."""
    text = resources.files("chatrecall").joinpath(f"data/{name}").read_text(encoding="utf-8")
    return frozenset(w for line in text.splitlines() for w in line.split("#", 1)[0].split())


#: Words that are never an entity on their own: function words, pronouns,
#: question words, auxiliaries, interjections, chat slang and titles. A
#: capitalised word in this list is never a name, wherever it appears.
#: Listed in ``chatrecall/data/entity_stopwords.txt``.
DEFAULT_STOPWORDS: frozenset[str] = _word_file("entity_stopwords.txt")

#: Common words that are capitalised only because they start a sentence
#: ("Painting is fun", "Sounds great"). They are dropped when they lead a
#: sentence, but kept mid-sentence, where a capital means a name ("Will",
#: "Hope", "Art"). Listed in ``chatrecall/data/sentence_common_words.txt``.
_SENTENCE_COMMON: frozenset[str] = _word_file("sentence_common_words.txt")

#: Frequent lowercase English words (8,000 lemmas), used only for capitalised
#: sentence openers: a sentence-initial single word found here is not a name.
_LEXICON: frozenset[str] = _word_file("common_words.txt")


#: Acronyms that are also frequent lowercase tokens but name a technology, not a shouted word.
_TECH_ACRONYMS = _words("http https rest ajax pdf cpu gpu")

#: Lowercase words allowed between the capitalised words of one name.
_CONNECTORS = "of|de|del|della|di|da|du|des|la|le|van|von|der|den|the|al|el|bin|ibn|dos|das"


_NUMBER_WORDS = {
    "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20", "thirty": "30",
    "forty": "40", "fifty": "50", "hundred": "100", "dozen": "12",
}
_NUMBER_WORD_SET = frozenset(_NUMBER_WORDS)

_ERRNO = (
    "ECONNREFUSED|ECONNRESET|ECONNABORTED|ETIMEDOUT|ENOENT|EACCES|EPERM|EEXIST|EISDIR|ENOTDIR|"
    "ENOTEMPTY|EADDRINUSE|EADDRNOTAVAIL|EAGAIN|EWOULDBLOCK|EINVAL|EBADF|EMFILE|ENFILE|ENOMEM|ENOSPC|"
    "EPIPE|EHOSTUNREACH|ENETUNREACH|ENETDOWN|ENOTFOUND|EAI_AGAIN|EINTR|EIO|EROFS|EXDEV|ELOOP|"
    "ENAMETOOLONG|ENOTSUP|EOPNOTSUPP|EPROTO|ECANCELED|EBUSY|EDEADLK|ENOSYS|ENOTCONN|ESRCH|ECHILD|"
    "E2BIG|ENOEXEC|ETXTBSY|EFBIG|ESPIPE|EMLINK|ERANGE|EDOM|ENOTTY|EALREADY|EINPROGRESS|EMSGSIZE"
)
# SCREAMING_CASE parts that make an identifier an error code (gRPC, Chrome, POSIX style).
_ERROR_PARTS = _words(
    "ERR ERROR ERRORS FAIL FAILED FAILURE DENIED REFUSED EXCEEDED INVALID "
    "UNAUTHORIZED UNAUTHENTICATED FORBIDDEN UNAVAILABLE ABORTED EXHAUSTED CRASH CRASHED"
)
# Letter prefixes of "ABC1234" tokens that name a standard or product, not an error code.
_NOT_ERROR_PREFIX = _words(
    "SHA ISO RFC PEP UTF AES RSA MD GPT IPV HDMI USB DDR RTX GTX RX ES ECMA IEEE ANSI DIN EN IEC "
    "NVME PCIE LPDDR GDDR H X A B F M"
)
_JS_LIBS = _words(
    "node vue next nuxt react three d3 express chart ember backbone angular deno bun socket alpine "
    "svelte solid preact"
)
_FILE_EXT = (
    "py|pyi|pyc|pyx|ipynb|js|mjs|cjs|jsx|ts|tsx|json|jsonl|ndjson|yaml|yml|toml|ini|cfg|conf|env|txt|md|"
    "rst|csv|tsv|parquet|avro|xml|html|htm|css|scss|sass|less|sql|db|sqlite|sqlite3|log|sh|bash|zsh|"
    "fish|ps1|bat|cmd|exe|dll|so|dylib|c|h|cc|cpp|cxx|hpp|hh|java|kt|kts|scala|go|rs|rb|php|pl|swift|"
    "cs|fs|vb|jl|lua|dart|ex|exs|erl|hs|clj|elm|vue|svelte|lock|gradle|mk|cmake|tf|tfvars|proto|"
    "graphql|gql|pdf|doc|docx|xls|xlsx|ppt|pptx|odt|rtf|png|jpg|jpeg|gif|svg|webp|bmp|ico|tiff|mp3|"
    "mp4|wav|flac|ogg|mov|avi|mkv|webm|zip|tar|gz|tgz|bz2|xz|7z|rar|whl|jar|war|pem|crt|pub|p12|pfx|"
    "bin|iso|img|dmg|apk|ipa|pkl|pickle|pt|pth|onnx|h5|ckpt|safetensors|gguf|npy|npz|bak|tmp|swp|"
    "patch|diff|properties|plist|sln|csproj|vcxproj|service|desktop|epub|mobi|srt|vtt"
)
_DOTFILES = (
    "env|gitignore|gitattributes|gitmodules|bashrc|bash_profile|zshrc|zprofile|profile|vimrc|npmrc|"
    "nvmrc|yarnrc|dockerignore|editorconfig|prettierrc|eslintrc|babelrc|pylintrc|flake8|coveragerc|"
    "python-version|tool-versions|pre-commit-config|ssh|git|github|gitlab-ci|vscode|idea|venv|"
    "cache|config|local|htaccess|netrc|pypirc|condarc|tmux\\.conf"
)
_KNOWN_FILES = (
    "Dockerfile|Containerfile|Makefile|GNUmakefile|Procfile|Jenkinsfile|Vagrantfile|Gemfile|Rakefile|"
    "Pipfile|Brewfile|Justfile|Tiltfile|Caddyfile|Snakefile"
)
_HTTP_REASONS = (
    "Not Found|Bad Request|Unauthorized|Forbidden|Internal Server Error|Bad Gateway|Service Unavailable|"
    "Gateway Timeout|Method Not Allowed|Conflict|Too Many Requests|Request Timeout|Payment Required|"
    "Not Acceptable|Gone|Unprocessable Entity|Not Implemented|Moved Permanently|Precondition Failed|"
    "Payload Too Large|Unsupported Media Type"
)


# --------------------------------------------------------------------------
# Regexes (compiled once). Each starts with a literal or a narrow class so the
# engine can skip ahead in C; left word boundaries are checked in Python
# (``_bounded``) because a leading look-behind would disable that skip.
# --------------------------------------------------------------------------

def _case_class(upper: bool) -> str:
    """Character class body (as ranges) of the cased letters of Latin, Greek and Cyrillic."""
    cps = [c for c in range(0x41, 0x530) if chr(c).isalpha() and (chr(c).isupper() if upper else chr(c).islower())]

    def esc(c: int) -> str:
        return re.escape(chr(c)) if chr(c) in "\\]^-[" else chr(c)

    out = []
    i = 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        out.append(esc(cps[i]) if i == j else f"{esc(cps[i])}-{esc(cps[j])}")
        i = j + 1
    return "".join(out)


_UP = _case_class(True)
_LO = _case_class(False)
# The word ends here and is no contraction ("Don't", "Can't"); a possessive or a closing quote may follow.
_WORD_END = r"(?![\w-])(?!['’](?:t|re|ve|ll|d|m)\b)"
_CAP = rf"[{_UP}](?<![\w-][{_UP}])(?:['’][{_UP}])?[{_LO}]+(?:[{_UP}][{_LO}]+)?(?:-[{_UP}][{_LO}]+)*{_WORD_END}"
_ACR = rf"[{_UP}](?<![\w-][{_UP}])[{_UP}0-9]*[{_UP}][{_UP}0-9]*(?:-\d+(?:\.\d+)?)?s?{_WORD_END}"
_NAME_TOKEN_RE = re.compile(rf"(?:{_CAP}|{_ACR})")
# What may separate two words of one name: blanks and at most two connectors ("Bank of the West").
_NAME_GAP_RE = re.compile(rf"(?:[ \t]+(?:{_CONNECTORS})){{0,2}}[ \t]+")
_MAX_GAP = 16
_MAX_NAME_WORDS = 6
_SHOUT_RE = re.compile(rf"[{_UP} \t-]+")

_QUOTE_RE = re.compile(
    r"`(?<!``)(?P<bt>[^`\n]{1,200})`(?!`)"
    r'|"(?P<dq>[^"\n]{1,120})"'
    r"|“(?P<cq>[^”\n]{1,120})”"
    r"|「(?P<jq>[^」\n]{1,120})」|『(?P<jq2>[^』\n]{1,120})』"
)
# Single quotes: the opener follows a non-word char, the closer precedes one, and an apostrophe
# inside must sit between two letters, so "don't" and "Caroline's" never open or close a quote.
_SQUOTE_RE = re.compile(
    r"['‘](?<![\w'’]['‘])(?=\S)(?P<sq>(?:[^'‘’\n]|(?<=\w)['’](?=\w)){1,80}?)(?<=\S)['’](?!\w)"
)

_QUOTE_HINT_RE = re.compile("[\"'`“‘「『]")
_DQUOTE_HINT_RE = re.compile("[\"`“「『]")

_URL_RE = re.compile(
    r"(?:https?|ftp|file|s3|gs|ssh|git)://[^\s<>\"'`]+|www\.[\w-]+(?:\.[\w-]+)+[^\s<>\"'`]*"
)
_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_WIN_RE = re.compile(r"[A-Za-z]:[\\/][^\s\"'<>|*?:]*|\\\\[\w.$-]+\\[^\s\"'<>|*?:]+")
_SLASH_RE = re.compile(r"/[\w.@+%~/-]*")
_FILE_RE = re.compile(rf"\.(?:{_FILE_EXT})(?![\w-]|\.\w)", re.IGNORECASE)
_EXT_RE = re.compile(rf"\.(?:{_FILE_EXT})$", re.IGNORECASE)
_DOTFILE_RE = re.compile(rf"\.(?:{_DOTFILES})(?:\.[\w-]+)*(?![\w-])")
_KNOWN_RE = re.compile(rf"(?:{_KNOWN_FILES})\b")
_DOT_LETTER_RE = re.compile(r"\.[A-Za-z_]")

_HTTP_RE = re.compile(r"HTTPS?(?:/\d(?:\.\d)?)?[ :]?([1-5]\d\d)\b")
_HTTP_REASON_RE = re.compile(rf"[1-5]\d\d[ \t]+(?:{_HTTP_REASONS})\b")
# Run on lowercased text at the position of one of its leading words.
_CODE_RE = re.compile(
    r"(status|error|(?:exit|return|response)(?=[ \t]+code)|errno)((?:[ \t]+code)?[ \t]*([:#]?)[ \t]*)"
    r"(0x[0-9a-f]+|-?\d+)\b"
)
_CODE_WORDS = ("status", "error", "exit", "return", "response", "errno")
_HEX_RE = re.compile(r"0x[0-9A-Fa-f]{4,16}\b")
_CVE_RE = re.compile(r"CVE-\d{4}-\d{4,7}\b")
_ECODE_RE = re.compile(r"[A-Z][A-Z]{0,3}-?\d{3,5}\b")
_EXC_RE = re.compile(r"[A-Z][A-Za-z0-9]*?(?:Error|Exception|Warning|Interrupt|Exit|Fault|Failure|Panic)\b")
_EXC_HINT_RE = re.compile(r"Error|Exception|Warning|Interrupt|Exit|Fault|Failure|Panic")
_ERRNO_RE = re.compile(rf"(?:{_ERRNO})\b|SIG[A-Z]{{2,}}\d?\b")
_MISC_ERR_RE = re.compile(r"segmentation fault|segfault|core dumped|out of memory|oomkilled|null pointer")
_MISC_ERR_WORDS = _words("segmentation segfault dumped memory oomkilled pointer")

# Date regexes run on lowercased text with ``match`` at an anchor (a digit run or a date word),
# never as a scan: a scan of a many-branch pattern tries every branch at every character.
_MON_FULL = "(?:january|february|march|april|may|june|july|august|september|october|november|december)"
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:1[89]|20)\d\d"
_WD_ANY = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day)?|tuesday|wednesday|thursday|saturday"
_UNIT_T = r"(?:second|minute|hour|day|night|week|weekend|month|year|decade)s?"
_COUNT = (r"(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty"
          r"|a[ \t]+few|few|several|a[ \t]+couple(?:[ \t]+of)?|couple[ \t]+of)")
_DATE_DIGIT_RE = re.compile(
    r"(?P<iso>\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?:[t ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d)?)?\b)"
    rf"|(?P<dmy>{_DAY}[ \t]+(?:of[ \t]+)?{MONTH_PATTERN}\b\.?(?:,?[ \t]+{_YEAR}\b)?)"
    r"|(?P<num>\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b|\d{1,2}\.\d{1,2}\.\d{4}\b)"
    r"|(?P<time>(?:[01]?\d|2[0-3])(?::[0-5]\d)?[ \t]?(?:am|pm|a\.m\.|p\.m\.)(?!\w))"
    r"|(?P<dec>(?:1[89]|20)?\d0s\b)"
    rf"|(?P<ago>\d+[ \t]+{_UNIT_T}[ \t]+ago\b)"
)
# Month-led dates with a day or a year ("May 8th, 2023", "May 2023").
_DATE_MON_RE = re.compile(
    rf"{MONTH_PATTERN}\.?(?:[ \t]+(?:the[ \t]+)?{_DAY}\b(?![:.]\d)(?:,?[ \t]+{_YEAR}\b)?|,?[ \t]+(?:of[ \t]+)?{_YEAR}\b)"
)
_DATE_REL_RE = re.compile(
    r"(?:the[ \t]+)?day[ \t]+(?:before[ \t]+yesterday|after[ \t]+tomorrow)\b"
    r"|(?:yesterday|today|tonight|tomorrow)\b"
    rf"|(?:last|next|this|past|coming)[ \t]+(?:week(?:end)?|month|year|summer|winter|spring|fall|autumn"
    rf"|night|morning|evening|afternoon|{_WD_ANY}|{_MON_FULL})\b"
    rf"|(?:spring|summer|fall|autumn|winter)[ \t]+(?:of[ \t]+)?{_YEAR}\b"
)
_AGO_BACK_RE = re.compile(rf"(?<![\w.]){_COUNT}[ \t]+{_UNIT_T}[ \t]+$")
_MAY_BACK_RE = re.compile(r"(?<![\w.])(?:in|since|until|till|by|during|through|early|late|mid|of)[ \t-]$")
_YEAR_RE = re.compile(rf"{_YEAR}(?![\w.%-]|,\d)")
_DIGITS_RE = re.compile(r"\d+")
_ALPHA_RE = re.compile(r"[a-z]+")

_REL_ALWAYS = _words("yesterday today tonight tomorrow")
_REL_PREFIX = _words("last next this past coming")
_REL_UNIT = _words(
    "week weekend month year summer winter spring fall autumn night morning evening afternoon mon monday tue "
    "tues tuesday wed wednesday thu thur thurs thursday fri friday sat saturday sun sunday january february "
    "march april may june july august september october november december"
)
_SEASONS = _words("spring summer fall autumn winter")
_WEEKDAYS = _words(
    "monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays "
    "saturdays sundays"
)
_MONTHS_BARE = _words("january february march april june july august september october november december")
_MONTH_WORDS = _words(
    "jan january feb february mar march apr april may jun june jul july aug august sep sept september oct "
    "october nov november dec december"
)

_DOTTED_RE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w@/\\-]|\.\w)")
_SNAKE_RE = re.compile(r"_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*|_+[A-Za-z][A-Za-z0-9]*_*")
_DUNDER_RE = re.compile(r"__[A-Za-z]\w*?__")
# An inner capital: after a lowercase letter or digit (getUserId), or starting a word after an
# acronym (HTTPServer). Starting on [A-Z] keeps the scan fast (capitals are rare in text).
_CAMEL_ANCHOR_RE = re.compile(r"[A-Z](?:(?<=[a-z0-9][A-Z])|(?<=[A-Z][A-Z])(?=[a-z]))")
_CAMEL_TOKEN_RE = re.compile(r"[A-Za-z][A-Za-z0-9]*")
# Plural acronyms (APIs) and name prefixes (McDonald, LeBron, DiCaprio) are not code identifiers.
_NOT_CAMEL_RE = re.compile(r"[A-Z]{2,}s|(?:Mc|Mac|De|Di|Da|Du|La|Le|Van|Von)[A-Z][a-z]+")

_UNITS = (
    "ms|us|ns|s|sec|secs|min|mins|h|hr|hrs|kb|mb|gb|tb|pb|kib|mib|gib|tib|kg|g|mg|km|m|cm|mm|nm|lb|lbs|"
    "oz|ft|k|x|px|pt|em|rem|fps|hz|khz|mhz|ghz|v|w|kw|kwh|mah|mph|kph|kmh|gbps|mbps|kbps|ml|l|dpi|yo|"
    "yr|yrs|mo|wk|wks|bn|mn|°c|°f"
)
_CURRENCY_HINT_RE = re.compile("[$€£¥₹]")
_CURRENCY_RE = re.compile(
    rf"[$€£¥₹][ \t]?{NUMBER_PATTERN}(?:[ \t]?(?:[kKmMbB]|bn|mn|million|billion|thousand|trillion|grand)\b)?"
)
# Matched at a digit run: a number (or range) and what makes it a quantity.
_QTY_RE = re.compile(
    rf"{NUMBER_PATTERN}(?:[ \t]?(?:-|–|to)[ \t]?{NUMBER_PATTERN})?"
    rf"(?:(?P<pct>[ \t]?(?:%|(?i:percent|per[ \t]?cent)\b))"
    rf"|(?P<hyph>-[A-Za-z]+(?:-[A-Za-z]+)*(?![\w-]))"
    rf"|(?P<att>(?i:{_UNITS})(?!\w))"
    rf"|[ \t]+(?P<unit>[a-z]+|[A-Z]{{1,5}}s?)(?![\w'’-]))"
)
_WORD_QTY_RE = re.compile(
    r"(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|dozen)"
    r"[ \t]+([a-z]+)(?![\w'’-])"
)
# Units that may stay singular after a number other than one ("2 hour drive", "5 star hotel").
_SINGULAR_UNITS = _words(
    "second minute hour day night week weekend month year decade century time mile km meter metre foot feet "
    "inch pound kilo gram ounce liter litre gallon cup dollar buck cent euro yen rupee point degree star "
    "percent k m people children men women teeth mice geese sheep fish deer data"
)

_SENT_END = frozenset(".!?\n\r:;…。！？")
_SENT_SKIP = frozenset(" \t\"'“‘(*-•>#[_")
_ASCII_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_PATH_CHARS = frozenset(_ASCII_ALNUM + "_.-~@+%")
_FILE_STEM_CHARS = frozenset(_ASCII_ALNUM + "_.-")
_DOTTED_CHARS = frozenset(_ASCII_ALNUM + "_.")
_ALNUM_CHARS = frozenset(_ASCII_ALNUM)


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _bounded(text: str, i: int, extra: str = "") -> bool:
    """True when position ``i`` starts a word (the char before is no word char nor in ``extra``)."""
    if i == 0:
        return True
    ch = text[i - 1]
    return not (ch.isalnum() or ch == "_" or ch in extra)


def _expand_left(text: str, i: int, chars: frozenset[str]) -> int:
    while i > 0 and text[i - 1] in chars:
        i -= 1
    return i


def _positions(low: str, word: str) -> list[int]:
    """Start positions of ``word`` as a whole word in ``low``."""
    out = []
    n = len(word)
    size = len(low)
    i = low.find(word)
    while i != -1:
        j = i + n
        if (i == 0 or not _is_word_char(low[i - 1])) and (j >= size or not _is_word_char(low[j])):
            out.append(i)
        i = low.find(word, j)
    return out


def _plausible_unit(unit: str, number: str) -> bool:
    """A word after a number counts as its unit when it is plural, a known unit, or follows "1"."""
    low = unit.casefold()
    if low in _SINGULAR_UNITS or number in ("1", "one", "a"):
        return True
    if unit.isupper():  # GB, MB, USD
        return True
    return low.endswith("s") and singular(low, True) != low


# --------------------------------------------------------------------------
# Extractor
# --------------------------------------------------------------------------

def _sentence_start(text: str, i: int) -> bool:
    """True when position ``i`` begins a sentence (ignoring quotes, bullets, spaces)."""
    j = i - 1
    while j >= 0 and text[j] in _SENT_SKIP:
        j -= 1
    if j < 0:
        return True
    ch = text[j]
    return ch in _SENT_END or (ord(ch) >= 0x2190 and not ch.isalnum())


def _looks_common(lw: str) -> bool:
    """Morphology of a common word (gerund, adverb, abstract noun) for a sentence-initial token."""
    return len(lw) >= 6 and lw.endswith(_COMMON_SUFFIXES)


def _is_common_word(lw: str) -> bool:
    """Whether a capitalised sentence opener is more likely a common word than a name."""
    if lw in _SENTENCE_COMMON or lw in _LEXICON or _looks_common(lw):
        return True
    if lw[-1:] == "s" and len(lw) >= 4:
        single = singular(lw, True)
        # A plural ("Turtles", "Mentors") or a verb ("Reminds") opening a sentence is no name.
        return single != lw or lw[:-1] in _LEXICON
    return False


def _shouted(lw: str) -> bool:
    """An all-caps token that is a common word written loud ("SO HAPPY", "GAME"), not an acronym."""
    return lw in _SENTENCE_COMMON or (len(lw) >= 4 and lw in _LEXICON and lw not in _TECH_ACRONYMS)


def _after_name(text: str, a: int, stop: frozenset[str]) -> bool:
    """True when the number at ``a`` follows a name or acronym ("Python 3", "PEP 8", "Game 7")."""
    j = a - 1
    if j < 1 or text[j] != " ":
        return False
    k = j
    while k > 0 and text[k - 1].isalpha():
        k -= 1
    w = text[k:j]
    if not w or not w[0].isupper() or w.casefold() in stop:
        return False
    return (len(w) >= 2 and w.isupper()) or not _sentence_start(text, k)


_COMMON_SUFFIXES = (
    "ing", "ally", "ously", "fully", "tely", "ntly", "stly", "ctly", "ably", "ibly", "hly", "rly",
    "able", "ible", "ous", "tion", "sion", "ment", "ness", "ship", "less", "ful",
)


class _Scan:
    """Per-call state: the text, its lowercase twin, and which characters are claimed."""

    __slots__ = ("text", "low", "words", "has_digit", "digits", "found", "mask")

    def __init__(self, text: str) -> None:
        self.text = text
        self.low = lower_same_length(text)
        self.words = frozenset(_ALPHA_RE.findall(self.low))
        # Digit runs that start a token: the anchors of dates, quantities and years ("E1101", "3.5",
        # "GPT-4" and "2023-05-08" hold digit runs that start no token).
        self.has_digit = False
        self.digits: list[int] = []
        for m in _DIGITS_RE.finditer(text):
            self.has_digit = True
            a = m.start()
            if a == 0 or (_bounded(text, a, ".") and not (text[a - 1] == "-" and a > 1 and text[a - 2].isalnum())):
                self.digits.append(a)
        self.found: list[tuple[int, int, str, str, str]] = []  # (start, end, kind, surface, key)
        self.mask = bytearray(len(text))  # 1 = character already claimed by an entity

    def add(self, s: int, e: int, kind: str, key: str | None = None) -> bool:
        """Claim ``text[s:e]`` as an entity unless a higher-priority entity holds part of it."""
        mask = self.mask
        if s >= e or mask.find(1, s, e) != -1:
            return False
        mask[s:e] = b"\x01" * (e - s)
        surface = self.text[s:e]
        self.found.append((s, e, kind, surface, fold_key(surface) if key is None else key))
        return True


class RegexEntityExtractor:
    """Finds names, identifiers, paths, errors, quotes, dates and quantities.

    Implements :class:`~chatrecall.core._protocols.EntityExtractor` without an
    LLM or a model: compiled regexes and word lists only, so it can run on
    every stored turn and every query (tens of microseconds per turn).

    Example:
        >>> ex = RegexEntityExtractor()
        >>> [(e.text, e.kind) for e in ex.extract("Caroline fixed ValueError in src/app/main.py yesterday")]
        [('Caroline', 'name'), ('ValueError', 'error'), ('src/app/main.py', 'path'), ('main.py', 'path'), \
('yesterday', 'date')]
        >>> ex.keys("Hey Mel! I moved to New York City in May 2023 with 3 kids")
        ('mel', 'new york city', '2023-05', '3 kid')

    Args:
        min_len: Entities whose key is shorter than this are dropped.
        stopwords: Casefolded words that are never an entity and never part
            of a name. ``None`` uses :data:`DEFAULT_STOPWORDS`; a given set
            replaces it (pass ``DEFAULT_STOPWORDS | {...}`` to extend it).

    Raises:
        ConfigError: ``min_len`` is not an int >= 1 or ``stopwords`` is not
            a set of strings.
    """

    __slots__ = ("_min_len", "_stop")

    def __init__(self, *, min_len: int = 2, stopwords: frozenset[str] | None = None) -> None:
        if isinstance(min_len, bool) or not isinstance(min_len, int) or min_len < 1:
            raise ConfigError(f"min_len={min_len!r} is invalid: must be an int >= 1")
        if stopwords is None:
            stop = DEFAULT_STOPWORDS
        else:
            if not isinstance(stopwords, (set, frozenset)) or not all(isinstance(w, str) for w in stopwords):
                raise ConfigError(f"stopwords={stopwords!r:.80} is invalid: must be a frozenset of str")
            stop = frozenset(w.casefold() for w in stopwords)
        self._min_len = min_len
        self._stop = stop

    def __repr__(self) -> str:
        return f"RegexEntityExtractor(min_len={self._min_len}, stopwords=<{len(self._stop)} words>)"

    def keys(self, text: str) -> tuple[str, ...]:
        """Folded keys of :meth:`extract`, in order of first appearance."""
        return tuple(e.key for e in self.extract(text))

    def extract(self, text: str) -> list[Entity]:
        """Entities of ``text`` in order of first appearance, deduplicated by key.

        Args:
            text: Any text (a chat turn, a query, a document chunk).

        Returns:
            One :class:`Entity` per distinct key, ordered by position.

        Raises:
            InvalidInputError: ``text`` is not a str.
        """
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be a str, got {type(text).__name__}: {text!r:.80}")
        if not text or text.isspace():
            return []
        if not text.isascii() and not unicodedata.is_normalized("NFC", text):
            text = unicodedata.normalize("NFC", text)

        sc = _Scan(text)
        has_dot_letter = "." in text and _DOT_LETTER_RE.search(text) is not None
        if has_dot_letter or "/" in text or "\\" in text or "@" in text or "file" in text:
            self._paths(sc, has_dot_letter)
        self._errors(sc)
        self._dates(sc)
        self._identifiers(sc, has_dot_letter)
        self._quantities(sc)
        for a in sc.digits:  # bare years last: "2000 words" is a quantity, "in 2022" a date
            if sc.mask[a]:
                continue
            m = _YEAR_RE.match(text, a)
            if m is not None and _bounded(text, a, ".$€£,-"):
                sc.add(a, m.end(), "date", m.group())
        self._names(sc)
        if _QUOTE_HINT_RE.search(text) is not None:
            self._quoted(sc)

        found = sc.found
        found.sort(key=lambda t: (t[0], -t[1]))
        out: list[Entity] = []
        seen: set[str] = set()
        stop = self._stop
        min_len = self._min_len
        for _s, _e, kind, surface, key in found:
            if len(key) < min_len or key in seen or key in stop:
                continue
            seen.add(key)
            out.append(Entity(text=surface, kind=kind, key=key))
        return out

    # -- passes ---------------------------------------------------------------

    @staticmethod
    def _add_path(sc: _Scan, s: int, e: int, kind: str = "path") -> None:
        if not sc.add(s, e, kind):
            return
        surface = sc.text[s:e]
        cut = max(surface.rfind("/"), surface.rfind("\\"))
        if kind == "path" and cut >= 0:
            base = surface[cut + 1:]
            if len(base) > 3 and _EXT_RE.search(base):  # src/app/main.py also answers to main.py
                sc.found.append((s + cut + 1, e, "path", base, fold_key(base)))

    def _paths(self, sc: _Scan, has_dot_letter: bool) -> None:
        text = sc.text
        if "://" in text or "www." in text:
            for m in _URL_RE.finditer(text):
                s = m.start()
                if _bounded(text, s):
                    self._add_path(sc, s, s + len(m.group().rstrip(".,;:!?)]}'\"")), "path")
        if "@" in text:
            for m in _EMAIL_RE.finditer(text):
                if _bounded(text, m.start()):
                    sc.add(m.start(), m.end(), "identifier")
        if ":\\" in text or ":/" in text or "\\\\" in text:
            for m in _WIN_RE.finditer(text):
                if _bounded(text, m.start()):
                    self._add_path(sc, m.start(), m.start() + len(m.group().rstrip(".,;:!?)]}'\"")))
        if "/" in text:
            end = 0
            for m in _SLASH_RE.finditer(text):
                if m.start() < end:
                    continue
                s = _expand_left(text, m.start(), _PATH_CHARS)
                surface = text[s:m.end()].rstrip(".,;:!?")
                end = s + len(surface)
                if s > 0 and text[s - 1] in ":\\/":
                    continue  # part of a URL or a Windows path
                body = surface.rstrip("/")
                if not body:
                    continue
                segs = body.split("/")
                if surface[0] in "/~" or surface.startswith(("./", "../")):  # absolute
                    if not (surface.startswith(("~/", "./", "../")) or len(segs) >= 3 or _EXT_RE.search(body)):
                        continue  # "/help", "/s"
                elif not (_EXT_RE.search(segs[-1]) or surface.endswith("/")):
                    continue  # "and/or", "he/him", "24/7"
                elif any(len(seg) < 2 or seg.isdigit() for seg in segs):
                    continue  # "w/", "b/c"
                self._add_path(sc, s, end)
        if has_dot_letter:
            for m in _FILE_RE.finditer(text):
                s = _expand_left(text, m.start(), _FILE_STEM_CHARS)
                while s < m.start() and text[s] == ".":
                    s += 1
                stem = text[s:m.start()]
                if not stem or (s > 0 and text[s - 1] in "/\\@") or not any(c.isalnum() for c in stem):
                    continue
                if len(stem) < 2 and m.end() - m.start() <= 2:
                    continue
                kind = "path"
                if m.group().casefold() == ".js" and stem.casefold() in _JS_LIBS:
                    kind = "identifier"  # Node.js, Vue.js are libraries, not files
                self._add_path(sc, s, m.end(), kind)
            for m in _DOTFILE_RE.finditer(text):
                if _bounded(text, m.start(), "./\\-"):
                    self._add_path(sc, m.start(), m.end())
        if "file" in text:
            for m in _KNOWN_RE.finditer(text):
                if _bounded(text, m.start()):
                    self._add_path(sc, m.start(), m.end())

    @staticmethod
    def _errors(sc: _Scan) -> None:
        text, low = sc.text, sc.low
        if sc.has_digit:
            if "HTTP" in text:
                for m in _HTTP_RE.finditer(text):
                    if _bounded(text, m.start()):
                        sc.add(m.start(), m.end(), "error", "http " + m.group(1))
            for a in sc.digits:
                hm = _HTTP_REASON_RE.match(text, a)
                if hm is not None:
                    sc.add(a, hm.end(), "error", "http " + text[a:a + 3])
            for word in _CODE_WORDS:
                if word not in sc.words:
                    continue
                for p in _positions(low, word):
                    cm = _CODE_RE.match(low, p)
                    if cm is None:
                        continue
                    cw, sep, num = cm.group(1), cm.group(2), cm.group(4)
                    has_code = "code" in sep
                    if not has_code and not cm.group(3) and len(num) < 3 and cw != "errno":
                        continue  # "an error 2 times" is not an error code
                    if len(num) == 3 and num[0] in "12345" and cw in ("status", "error", "response"):
                        key = "http " + num
                    else:
                        key = f"{cw} code {num}" if has_code else f"{cw} {num}"
                    sc.add(p, cm.end(), "error", key)
            if "0x" in text:
                for m in _HEX_RE.finditer(text):
                    if _bounded(text, m.start()):
                        sc.add(m.start(), m.end(), "error", m.group().casefold())
            if "CVE-" in text:
                for m in _CVE_RE.finditer(text):
                    if _bounded(text, m.start()):
                        sc.add(m.start(), m.end(), "error", m.group().casefold())
            for m in _ECODE_RE.finditer(text):
                if _bounded(text, m.start(), "-"):
                    # SHA256 or ISO-8601 name a standard, not an error code.
                    prefix = m.group().rstrip("0123456789").rstrip("-")
                    kind = "identifier" if prefix in _NOT_ERROR_PREFIX else "error"
                    sc.add(m.start(), m.end(), kind, m.group().casefold())
        if _EXC_HINT_RE.search(text) is not None:
            for m in _EXC_RE.finditer(text):
                s, e = m.span()
                if s > 0 and text[s - 1] == ".":  # requests.exceptions.ConnectionError
                    q = _expand_left(text, s, _DOTTED_CHARS)
                    while q < s and not (text[q].isalpha() or text[q] == "_"):
                        q += 1
                    if _bounded(text, q) and sc.add(q, e, "error", text[q:e].casefold()):
                        sc.found.append((s, e, "error", m.group(), m.group().casefold()))
                elif _bounded(text, s):
                    sc.add(s, e, "error", m.group().casefold())
        if "StopIteration" in text:
            for p in _positions(text, "StopIteration"):
                sc.add(p, p + 13, "error", "stopiteration")
        if "E" in text or "SIG" in text:
            for m in _ERRNO_RE.finditer(text):
                if _bounded(text, m.start()):
                    sc.add(m.start(), m.end(), "error", m.group().casefold())
        if not sc.words.isdisjoint(_MISC_ERR_WORDS):
            for m in _MISC_ERR_RE.finditer(low):
                if _bounded(low, m.start()):
                    sc.add(m.start(), m.end(), "error", m.group())

    @staticmethod
    def _dates(sc: _Scan) -> None:
        text, low, words = sc.text, sc.low, sc.words

        def add(s: int, e: int, kind: str) -> None:
            sc.add(s, e, "date", date_key(kind, text[s:e]))

        mask = sc.mask
        for a in sc.digits:
            if mask[a]:
                continue
            m = _DATE_DIGIT_RE.match(low, a)
            if m is not None:
                add(a, m.end(), m.lastgroup or "")
        if sc.digits and not words.isdisjoint(_MONTH_WORDS):
            for w in words & _MONTH_WORDS:
                for p in _positions(low, w):
                    m = _DATE_MON_RE.match(low, p)
                    if m is not None and not (w == "may" and text[p] == "m"):  # "you may 2x it": a verb
                        add(p, m.end(), "md")
        if "before yesterday" in low or "after tomorrow" in low:
            for p in _positions(low, "day"):
                q = p - 4 if low[max(0, p - 4):p] == "the " else p
                m = _DATE_REL_RE.match(low, q)
                if m is not None:
                    add(q, m.end(), "rel")
        starts = words & _REL_ALWAYS
        if not words.isdisjoint(_REL_UNIT):
            starts |= words & _REL_PREFIX
            if sc.digits:
                starts |= words & _SEASONS
        for w in starts:
            for p in _positions(low, w):
                m = _DATE_REL_RE.match(low, p)
                if m is not None:
                    add(p, m.end(), "rel")
        if "ago" in words:
            for p in _positions(low, "ago"):
                m = _AGO_BACK_RE.search(low, max(0, p - 40), p)
                if m is not None:
                    add(m.start(), p + 3, "rel")
        for w in words & _WEEKDAYS:
            for p in _positions(low, w):
                add(p, p + len(w), "wd")
        for w in words & _MONTHS_BARE:
            for p in _positions(low, w):
                if text[p].isupper():  # "march" and "august" are also plain words
                    add(p, p + len(w), "month")
        if "May" in text:
            for p in _positions(text, "May"):
                if _MAY_BACK_RE.search(low, max(0, p - 10), p):
                    add(p, p + 3, "month")

    @staticmethod
    def _identifiers(sc: _Scan, has_dot_letter: bool) -> None:
        text = sc.text
        if has_dot_letter:
            end = 0
            for m in _DOT_LETTER_RE.finditer(text):
                if m.start() < end or sc.mask[m.start()]:
                    continue
                s = _expand_left(text, m.start(), _DOTTED_CHARS)
                while s < m.start() and text[s] == ".":
                    s += 1
                d = _DOTTED_RE.match(text, s)
                if d is None:
                    continue
                end = d.end()
                if s > 0 and text[s - 1] in "@/\\-":
                    continue
                if sum(1 for seg in d.group().split(".") if len(seg) >= 2) >= 2:  # not e.g, i.e, U.S
                    sc.add(s, end, "identifier")
        if "_" in text:
            end = 0
            i = text.find("_")
            while i != -1:
                if i >= end:
                    s = i
                    while s > 0 and _is_word_char(text[s - 1]):
                        s -= 1
                    e = i + 1
                    while e < len(text) and _is_word_char(text[e]):
                        e += 1
                    end = e
                    token = text[s:e]
                    if (s == 0 or text[s - 1] not in ".@/\\-") and (
                        _SNAKE_RE.fullmatch(token) or _DUNDER_RE.fullmatch(token)
                    ):
                        core = token.strip("_")
                        errorish = core.isupper() and not _ERROR_PARTS.isdisjoint(core.split("_"))
                        sc.add(s, e, "error" if errorish else "identifier")
                i = text.find("_", i + 1)
        end = 0
        mask = sc.mask
        for m in _CAMEL_ANCHOR_RE.finditer(text):
            if m.start() < end or mask[m.start()]:
                continue
            s = _expand_left(text, m.start(), _ALNUM_CHARS)
            while s < m.start() and text[s].isdigit():
                s += 1
            t = _CAMEL_TOKEN_RE.match(text, s)
            if t is None:
                continue
            end = t.end()
            w = t.group()
            if _bounded(text, s) and (end >= len(text) or not _is_word_char(text[end])) \
                    and not _NOT_CAMEL_RE.fullmatch(w):
                sc.add(s, end, "identifier")
        if "()" in text:
            i = text.find("()")
            while i != -1:
                s = i
                while s > 0 and _is_word_char(text[s - 1]):
                    s -= 1
                if s < i and not text[s].isdigit() and (s == 0 or text[s - 1] != "."):
                    sc.add(s, i, "identifier")
                i = text.find("()", i + 2)

    def _quantities(self, sc: _Scan) -> None:
        text, low, stop = sc.text, sc.low, self._stop
        if _CURRENCY_HINT_RE.search(text) is not None:
            for m in _CURRENCY_RE.finditer(text):
                if _bounded(text, m.start()):
                    key = m.group().replace(" ", "").replace("\t", "").replace(",", "").casefold()
                    sc.add(m.start(), m.end(), "quantity", key)
        mask = sc.mask
        for a in sc.digits:
            if mask[a]:
                continue
            qm = _QTY_RE.match(text, a)
            if qm is None:
                continue
            surface = qm.group()
            unit = qm.group("unit")
            if unit is not None:
                lu = unit.casefold()
                number = surface[: len(surface) - len(unit)].strip()
                if lu in stop or lu in _NUMBER_WORDS or lu in _MONTH_WORDS or not _plausible_unit(unit, number):
                    continue
                if _after_name(text, a, stop):
                    continue  # a version or a number in a title, not a count
                sc.add(a, qm.end(), "quantity", qty_key(surface))
            elif qm.group("hyph") is not None:
                sc.add(a, qm.end(), "quantity", surface.replace(",", "").casefold())
            else:  # percent or attached unit
                sc.add(a, qm.end(), "quantity", qty_key(surface))
        for w in sc.words & _NUMBER_WORD_SET:
            for p in _positions(low, w):
                wm = _WORD_QTY_RE.match(low, p)
                if wm is None:
                    continue
                unit = text[wm.start(1):wm.end(1)]
                lu = unit.casefold()
                if lu in stop or lu in _NUMBER_WORDS or not _plausible_unit(unit, w):
                    continue
                sc.add(p, wm.end(), "quantity", f"{_NUMBER_WORDS[w]} {fold_key(lu)}")

    def _names(self, sc: _Scan) -> None:
        # Capitalised words separated only by blanks (and "of", "de", "the"...) form one run.
        text = sc.text
        run: list[re.Match[str]] = []
        prev_end = -1
        for tok in _NAME_TOKEN_RE.finditer(text):
            ts = tok.start()
            if run and ts - prev_end <= _MAX_GAP and _NAME_GAP_RE.fullmatch(text, prev_end, ts):
                run.append(tok)
            else:
                if run:
                    self._name_run(sc, run)
                run = [tok]
            prev_end = tok.end()
        if run:
            self._name_run(sc, run)

    def _name_run(self, sc: _Scan, run: list[re.Match[str]]) -> None:
        text, mask, stop, found = sc.text, sc.mask, self._stop, sc.found
        if len(run) == 1:  # fast path: one capitalised word
            ss, se = run[0].span()
            w = run[0].group()
            lw = w.casefold()
            is_acr = w[:-1].isupper()
            if is_acr and lw[-1] == "s" and len(lw) > 2:
                lw = lw[:-1]
            if lw in stop or mask.find(1, ss, se) != -1 or (is_acr and _shouted(lw)):
                return
            if _is_common_word(lw) and _sentence_start(text, ss):
                return  # "Painting is fun": a common word capitalised by the sentence
            found.append((ss, se, "name", w, fold_key(w)))
            return
        # Split the run at stopwords and claimed characters.
        segments: list[list[tuple[int, int, str]]] = [[]]
        prev_acr = False
        for tok in run:
            ts, te = tok.span()
            w = tok.group()
            lw = w.casefold()
            is_acr = w[:-1].isupper()
            if is_acr and lw[-1] == "s" and len(lw) > 2:
                lw = lw[:-1]
            if lw in stop or mask.find(1, ts, te) != -1 or (is_acr and _shouted(lw)):
                if segments[-1]:
                    segments.append([])
                continue
            if is_acr and prev_acr and segments[-1]:
                segments.append([])  # "MP3 GPT-4": two acronyms in a row are two entities
            prev_acr = is_acr
            segments[-1].append((ts, te, lw))
        # A sentence opener is usually a common word that happens to be capitalised.
        if segments[0] and _sentence_start(text, run[0].start()):
            first = segments[0]
            while first and first[0][2] in _SENTENCE_COMMON:
                first.pop(0)
            if len(first) == 1 and _is_common_word(first[0][2]):
                first.pop(0)
        for seg in segments:
            if not seg or len(seg) > _MAX_NAME_WORDS:
                continue  # nothing left, or a title-cased heading rather than a name
            ps, pe = seg[0][0], seg[-1][1]
            if len(seg) >= 3 and _SHOUT_RE.fullmatch(text, ps, pe):
                continue  # an all-caps run of 3+ words is shouting, not a name
            surface = text[ps:pe]
            found.append((ps, pe, "name", surface, fold_key(surface)))

    @staticmethod
    def _quoted(sc: _Scan) -> None:
        text = sc.text
        exact = {(t[0], t[1]) for t in sc.found}
        hits: list[re.Match[str]] = []
        if _DQUOTE_HINT_RE.search(text) is not None:
            hits.extend(_QUOTE_RE.finditer(text))
        if "'" in text or "‘" in text:
            hits.extend(_SQUOTE_RE.finditer(text))
        for m in hits:
            group = m.lastgroup or ""
            inner = m.group(group).strip()
            if not inner or not any(c.isalnum() for c in inner):
                continue
            if m.span(group) in exact:
                continue  # `config.yaml` is already a path; the quote adds nothing
            sc.found.append((m.start(), m.end(), "quoted", inner, fold_key(inner)))
