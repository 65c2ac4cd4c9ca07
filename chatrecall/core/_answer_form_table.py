"""Answer forms: what a question asks for and what a text must hold to give it. Data, not mechanism.

Each form has a question regex (the message asks for it), an exclusion regex (the message does not, although the
question regex matches: the past tense, whose answer is the dated turn itself) and an evidence regex (a text holds
an answer of that form). Regexes run on the lowercased text with typographic apostrophes straightened. Mechanism:
:mod:`chatrecall.core._answer_forms`.
"""

from __future__ import annotations

__all__ = ["FORMS", "FORM_WORDS", "FORM_QUESTION_WORDS"]

#: events whose time is a clock time ("what's the check-in time?"); durations ("cooking time") are not events
_EVENTS = (
    r"check[- ]?in", r"check[- ]?out", r"kick[- ]?off", r"start(?:ing)?", r"departure", r"arrival", r"boarding",
    r"pick[- ]?up", r"drop[- ]?off", r"collection", r"delivery", r"opening", r"closing", r"finish(?:ing)?",
    r"meeting", r"appointment", r"reservation", r"booking", r"breakfast", r"lunch", r"dinner", r"curtain[- ]?up",
    r"doors?", r"gate", r"show", r"match", r"game", r"class", r"session", r"ceremony", r"service", r"launch",
    r"flight", r"train", r"bus", r"ferry", r"tee",
)
# "what time does …", "at what time", "what hour", "how early / late"
_TIME_ASKED = (
    r"\b(?:what|which)\s+time(?:'s|s)?\b(?!\s+(?:of\s+(?:the\s+)?(?:year|day|month|week|season)|zone))"
    r"|\bwhat\s+hour\b|\bhow\s+(?:early|late)\b"
    # "what's the check-in time?": an event named by its noun (not a duration: "the cooking / journey time")
    r"|\bwhat(?:'s|\s+is|\s+are)\s+(?:the\s+|my\s+|our\s+|their\s+|his\s+|her\s+)?(?:" + "|".join(_EVENTS) + r")"
    r"\s+times?\b"
)
# "when does X open / close / start / leave …": a day as often as a time ("when does Tom start work?")
_WHEN_ASKED = (
    r"\bwhen(?:'s|\s+(?:does|do|is|are|will|should|must))\b[^?.!]*?"
    r"\b(?:opens?|closes?|starts?|begins?|finish(?:es)?|ends?|leaves?|departs?|arrives?|lands?|boards?"
    r"|(?:sets?|kicks?)\s+off|due)\b"
    # a deadline or cut-off: "what's the bag drop deadline?", "when's the deadline for…", "by when do I…"
    r"|\b(?:what|when)(?:'s|s|\s+is)\s+(?:the\s+|my\s+|our\s+|their\s+)?(?:[\w-]+\s+){0,4}?"
    r"(?:deadline|cut[- ]?off)(?!\s+(?:score|mark|grade|point|age|weight|level))\b"
    r"|\bby\s+when\b"
    # the next one of something: "when's the next association meeting?", "when's my next night shift?"
    r"|\bwhen(?:'s|\s+(?:is|are|will))\s+(?:the|my|our|their|his|her)\s+next\b"
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

_DAY = (r"(?:mon|tues?|wed(?:nes)?|thu(?:rs)?|fri|sat(?:ur)?|sun)(?:day)?s?|weekdays?|weekends?|every\s+day|daily"
        r"|bank\s+holidays?|public\s+holidays?")
# "is the vet open on sundays?", "opening hours", "what days is X open", "when is X open", "are they open late"
_HOURS_ASKED = (
    r"\bopening\s+(?:hours|times)\b"
    r"|\b(?:is|are|does|do|will)\b[^?.!]{0,40}?\b(?:open|closed)\b[^?.!]{0,20}?"
    r"\b(?:today|tonight|tomorrow|late|early|on|at|this|over|during|in)\b"
    r"|\bwhat\s+days?\b[^?.!]{0,40}?\bopen\b|\bwhen\s+(?:is|are)\b[^?.!]{0,40}?\bopen\b"
)
# "Saturday 9:00 to 13:00", "open 9-5 on weekdays", "closed on Sunday", "opens at 10 on saturdays", "open 24 hours"
_RANGE = r"\d{1,2}(?:[:.]\d{2})?\s*(?:am|pm)?\s*(?:-|–|to|until|till)\s*\d{1,2}"
_HOURS_HELD = (
    r"\b(?:" + _DAY + r")\b[^.;]{0,30}?(?:" + _RANGE + r"|\bclosed\b|\bopen\b)"
    r"|(?:" + _RANGE + r"|\bclosed\b|\bopens?\b)[^.;]{0,30}?\b(?:" + _DAY + r")\b"
    r"|\bopens?\s+(?:at|from)\s+\d|\bopen\s+24\s+hours\b|\b24/7\b"
)

# a day or a date: "Monday", "30 March", "October 23rd", "the 14th", "tomorrow", "next week", "on 3/4"
_DAY_HELD = (
    r"\b(?:" + _DAY + r"|today|tonight|tomorrow|yesterday|next\s+(?:week|month)|this\s+(?:week|month))\b"
    r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b\s*\d{1,2}(?:st|nd|rd|th)?\b"
    r"|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b"
    r"|\bthe\s+\d{1,2}(?:st|nd|rd|th)\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b"
    # stop 41 (C63, helper-122: "live by the end of April" held "no day"): a month with a part of it or a preposition
    r"|\b(?:(?:end|start|beginning|middle)\s+of|mid|early|late)[\s-]+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|"
    r"nov|dec)[a-z]*\b"
    r"|\b(?:in|by|before|after|until|till|from|since|during|next|last|this)\s+(?:january|february|march|april|june|"
    r"july|august|september|october|november|december)\b"
)

# "how much is breakfast club?", "how much does parking cost?", "what's the pitch fee?"
_PRICE_ASKED = (
    r"\bhow\s+much\s+(?:is|are|'s|for)\b"
    r"|\bhow\s+much\s+(?:does|do|will|would|should)\b[^?.!]{0,40}?\b(?:cost|charge|be|come\s+to)\b"
    r"|\bwhat(?:'s|\s+is|\s+are|\s+does)\s+(?:the\s+|a\s+|it\s+)?(?:\w+\s+)?(?:price|cost|fee|fare|charge|rate)s?\b"
)
# an amount of money: "£4.50", "$12", "30 euros", "15 pounds", "GBP 280" (a quote's currency code first), "free"
_PRICE_HELD = (
    r"[£$€¥₹]\s?\d|\b\d+(?:[.,]\d+)?\s?(?:p|pence|pounds?|quid|dollars?|euros?|gbp|usd|eur)\b"
    r"|\b(?:gbp|usd|eur|aud|cad|nzd|chf|jpy|inr|sek|nok|dkk)\s?\d"
    r"|\bfree\b(?!\s+(?:time|day|afternoon|morning|evening|weekend))|\bno\s+charge\b"
)

#: form -> (asked, not asked although matched, held); tried in this order
FORMS: dict[str, tuple[str, str, str]] = {
    "time": (_TIME_ASKED, _TIME_PAST, _TIME_HELD),
    "hours": (_HOURS_ASKED, _TIME_PAST, _HOURS_HELD),
    "when": (_WHEN_ASKED, _TIME_PAST, _TIME_HELD + "|" + _DAY_HELD),
    "price": (_PRICE_ASKED, _TIME_PAST, _PRICE_HELD),
}
#: form -> how notes and ``why`` name it
FORM_WORDS: dict[str, str] = {"time": "clock time", "hours": "opening hours", "when": "day or time", "price": "price"}
#: Words of a question that only say which form is asked ("what TIME does ... START", "the entry DEADLINE", "the
#: NEXT meeting"): a memory that holds a time answers the question only when it shares one of the question's other
#: words (a shift swap "at 19:45" does not answer "when's the honey show entry deadline?").
FORM_QUESTION_WORDS = (
    "time", "times", "hour", "hours", "clock", "deadline", "cut", "cutoff", "off", "day", "days", "date", "when",
    "much", "price", "cost", "costs", "fee", "fare", "charge", "open", "opens", "opening", "close", "closes",
    "closing", "start", "starts", "begin", "begins", "finish", "finishes", "end", "ends", "leave", "leaves", "next",
    "early", "late", "exactly", "usually", "due",
)
