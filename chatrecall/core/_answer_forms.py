"""Which answer form a question asks for ("what time…?": a clock time) and whether a text holds one.

The usefulness check of the two-phase search uses it: memories that name the subject but hold no clock time do not
answer "what time does my wave set off?", so the documents are searched too. Patterns:
:mod:`chatrecall.core._answer_form_table`.
"""

from __future__ import annotations

import re
from functools import cache

from ._answer_form_table import FORMS
from ._errors import InvalidInputError

__all__ = ["asked_form", "holds_form"]


@cache
def _compiled(form: str) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    asked, past, held = FORMS[form]
    return re.compile(asked), re.compile(past), re.compile(held)


def _low(text: str) -> str:
    return text.replace("\u2019", "'").lower()


def asked_form(question: str) -> str | None:
    """The answer form ``question`` asks for (a key of ``FORMS``, e.g. ``"time"``), or None.

    Example:
        >>> asked_form("What time does the club run start?")
        'time'
        >>> asked_form("what time did I get home?") is None
        True
    """
    low = _low(question)
    for form in FORMS:
        asked, past, _ = _compiled(form)
        if asked.search(low) and not past.search(low):
            return form
    return None


def holds_form(form: str, text: str) -> bool:
    """Whether ``text`` holds an answer of ``form`` ("time": a clock time such as "6:30pm" or "at 9").

    Raises:
        InvalidInputError: ``form`` is not a known form.
    """
    if form not in FORMS:
        raise InvalidInputError(f"answer form {form!r} is unknown; use one of {sorted(FORMS)}")
    return _compiled(form)[2].search(_low(text)) is not None
