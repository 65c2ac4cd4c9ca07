"""Answer forms: what a question asks for and what a text must hold to give it. Data, not mechanism.

Each form has a question regex (the message asks for it), an exclusion regex (the message does not, although the
question regex matches: the past tense, whose answer is the dated turn itself) and an evidence regex (a text holds
an answer of that form). Regexes run on the lowercased text with typographic apostrophes straightened. Mechanism:
:mod:`chatrecall.core._answer_forms`.
"""

from __future__ import annotations

__all__ = ["FORMS", "FORM_WORDS"]

# "what time does …", "at what time", "what hour", "how early / late", "when does X open / close / start / leave …"
_TIME_ASKED = (
    r"\b(?:what|which)\s+time(?:'s|s)?\b(?!\s+(?:of\s+(?:the\s+)?(?:year|day|month|week|season)|zone))"
    r"|\bwhat\s+hour\b|\bhow\s+(?:early|late)\b"
    r"|\bwhen(?:'s|\s+(?:does|do|is|are|will|should|must))\b[^?.!]*?"
    r"\b(?:opens?|closes?|starts?|begins?|finish(?:es)?|ends?|leaves?|departs?|arrives?|lands?|boards?"
    r"|(?:sets?|kicks?)\s+off)\b"
)
# the answer is the dated turn itself ("what time did I get home?") or what was said about it
_TIME_PAST = r"\b(?:did|was|were|had)\b"
# a clock time: "6:30pm", "7 am", "18:00", "14.05", "at 9", "from 3pm", noon, midnight, "half past two", "o'clock"
_UNITS = r"(?:k|km|kg|g|mi|miles?|lbs?|pounds?|euros?|dollars?|%|percent|minutes?|mins?|hours?|hrs?|days?|weeks?" \
         r"|months?|years?|people|nights?|times?|kids?|children|x)\b"
_TIME_HELD = (
    r"\b(?:[01]?\d|2[0-3])(?:[:.][0-5]\d)?\s*(?:am|pm|a\.m\.|p\.m\.)(?![a-z])"
    r"|(?<![\d$£€.:])\b(?:[01]\d|2[0-3])[:.][0-5]\d\b(?![.:]\d)(?!\s*" + _UNITS + r")"
    r"|\b(?:at|from|until|till|til|by|before|after|around)\s+(?:[01]?\d|2[0-3])(?:[:.][0-5]\d)?\b"
    r"(?![.:]\d)(?!\s*" + _UNITS + r")"
    r"|\b(?:noon|midday|midnight|o'clock)\b|\bhalf\s+past\b|\bquarter\s+(?:past|to)\b"
)

#: form -> (asked, not asked although matched, held)
FORMS: dict[str, tuple[str, str, str]] = {
    "time": (_TIME_ASKED, _TIME_PAST, _TIME_HELD),
}
#: form -> how notes and ``why`` name it
FORM_WORDS: dict[str, str] = {"time": "clock time"}
