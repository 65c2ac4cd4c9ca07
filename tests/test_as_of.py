"""``retrieve(..., as_of=T)`` answers as of T: what was stored or pinned after T is neither searched nor shown.

nu47 A1: ``chatrecall ask "what's my rate for Acme?" --at 2026-03-05T08:00`` ranked first, and showed, the turn
"Acme agreed to a new rate" stored on 2026-03-09: ``--at`` moved only the clock that recency is read from.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import Callable
from typing import Any

import pytest

from chatrecall import ChatRecall, InvalidInputError, Turn

T_OLD = dt.datetime(2025, 3, 2, 9, 0, tzinfo=dt.timezone.utc).timestamp()
T_NEW = dt.datetime(2025, 3, 9, 10, 0, tzinfo=dt.timezone.utc).timestamp()
AS_OF = "2025-03-05T08:00"  # naive ISO: UTC
AS_OF_TS = dt.datetime(2025, 3, 5, 8, 0, tzinfo=dt.timezone.utc).timestamp()
OLD_RATE = "Acme pays me €0.09 per word for shipping manuals."
NEW_RATE = "Acme agreed to a new rate: €0.11 per word from April."
LATER_IN_SESSION = "Ferreira sent the sworn translation back for one more signature."


def _translator(cr: ChatRecall) -> None:
    cr.add_many([
        Turn(text=OLD_RATE, user_id="ines", session_id="s1", timestamp=T_OLD),
        Turn(text="Noted: Acme, €0.09 per word.", user_id="ines", session_id="s1", role="assistant",
             timestamp=T_OLD + 1),
        Turn(text="I'm meeting Acme's project manager on Tuesday about the manuals.", user_id="ines",
             session_id="s2", timestamp=AS_OF_TS - 3600),
        Turn(text=NEW_RATE, user_id="ines", session_id="s3", timestamp=T_NEW),
        Turn(text=LATER_IN_SESSION, user_id="ines", session_id="s2", timestamp=T_NEW + 60),
    ])


@pytest.mark.model
def test_as_of_leaves_out_later_turns_and_pins_on_real_parts(real_engine: ChatRecall) -> None:
    cr = real_engine
    _translator(cr)
    cr.pin("Quote rates in euros.", user_id="ines")  # pinned now (the engine's clock), long after AS_OF
    question = "what's my rate for Acme?"

    now = cr.retrieve(question, user_id="ines", session_id="s2")
    assert NEW_RATE in now.context, "without as_of the newer rate is there: the test below means something"
    assert LATER_IN_SESSION in [r.text for r in now.recent] and now.pins

    then = cr.retrieve(question, user_id="ines", session_id="s2", as_of=AS_OF)
    shown = [i.text for i in then.items] + [r.text for r in then.recent] + [r.text for r in then.rejected]
    assert NEW_RATE not in shown and NEW_RATE not in then.context
    assert LATER_IN_SESSION not in shown and LATER_IN_SESSION not in then.context
    assert then.items and then.items[0].text == OLD_RATE, [i.text for i in then.items]
    assert [r.text for r in then.recent] == ["I'm meeting Acme's project manager on Tuesday about the manuals."]
    assert then.pins == () and "Quote rates in euros." not in then.context
    assert "now 2025-03-05 08:00" in then.context, "the context's 'now' is the moment asked about"
    assert "as of 2025-03-05 08:00:00 UTC: 2 turns stored after it and 1 pin made after it left out" in then.notes

    # the same moment as epoch seconds or an aware datetime; a later moment sees the new rate again
    assert [i.id for i in cr.retrieve(question, user_id="ines", session_id="s2", as_of=AS_OF_TS).items] == \
        [i.id for i in then.items]
    later = cr.retrieve(question, user_id="ines", as_of=dt.datetime.fromtimestamp(T_NEW + 5, dt.timezone.utc))
    assert later.items[0].text == NEW_RATE

    res = asyncio.run(cr.aretrieve(question, user_id="ines", session_id="s2", as_of=AS_OF))
    assert NEW_RATE not in res.context and res.items[0].text == OLD_RATE


def test_as_of_with_many_later_turns_still_fills_every_candidate_list(make_engine: Callable[..., ChatRecall]) -> None:
    """More later turns than a candidate list holds (``RetrievalConfig.candidates``): the newest-turns list of the
    recency strategy is taken among the turns up to ``as_of``, not emptied by the later ones."""
    cr = make_engine()
    early = [f"Early note number {i} about the Lisbon trip." for i in range(3)]
    cr.add_many([Turn(text=t, user_id="u", session_id="a", timestamp=T_OLD + i) for i, t in enumerate(early)])
    cr.add_many([Turn(text=f"Later note {i} about the invoices.", user_id="u", session_id="b",
                      timestamp=T_NEW + i) for i in range(120)])
    res = cr.retrieve("what did we talk about?", user_id="u", route="memory", strategy="recency", k=3,
                      as_of=T_OLD + 3600)
    assert sorted(i.text for i in res.items) == sorted(early)


@pytest.mark.parametrize(("value", "needle"), [
    ("yesterday", "as_of='yesterday' is neither epoch seconds"),
    (True, "as_of must be a finite number"),
    (float("nan"), "as_of must be a finite number"),
    (1e20, "as_of=1e+20 is out of range"),
    (1_780_000_000_000, "it looks like milliseconds: divide by 1000"),  # stop 45: Date.now() and many APIs
])
def test_a_bad_as_of_names_it(make_engine: Callable[..., ChatRecall], value: Any, needle: str) -> None:
    cr = make_engine()
    with pytest.raises(InvalidInputError, match=re.escape(needle)):
        cr.retrieve("what's my rate?", user_id="u", as_of=value)
