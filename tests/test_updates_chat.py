"""A user changes a fact they told the chatbot earlier, in their own words and without saying "update": the later
turn should come before the stale one. Real model, embedded Chroma, replayed as a chatbot runs chatrecall (retrieve,
then store the message and the reply). The stale turn may still come back (it is history: "I used to go to
PureGym"), but below the update.

Written in stop 32 before an "update pass" (criterion C12: a later turn of the same speaker about the same thing,
by turn cosine or a rare shared entity, gains a share of the earlier turn's score). With the pass these three held,
but the cross-validated search kept it off on every fold, and in-sample it cost LoCoMo R@10 0.786 -> 0.715 at a
share of 0.25 and 0.526 at 1.0 (LongMemEval turn recall 0.896 -> 0.833 / 0.521): between people, later turns about
the same thing are mostly not updates, and the questions often ask for the earlier one. Not shipped; the two cases
it would fix stayed here as strict xfails. Since stop 42 a user's statement that something changed ranks above the
earlier turns about it in a chatbot's store (C66, tests/test_update_lift.py): "we now fly out on the 10th of May"
now comes first; "so I report to Dev Mistry now" is not lifted above "My line manager is Grace Okafor" and is still
a strict xfail.
"""

from __future__ import annotations

from typing import Any

import pytest
from _chats import replay_fixture

from chatrecall import RetrievalResult

USER = "noor"
T0 = 1775030400.0  # 2026-04-01 08:00 UTC

SESSIONS = [
    (0.0, "s1", [
        ("morning! finally some sun", "Morning! Enjoy it while it lasts."),
        ("I pay £25 a month for PureGym on Mill Street, it's always packed after work.",
         "Packed gyms after work are common; early mornings or late evenings are usually quieter."),
        ("My line manager is Grace Okafor, she's lovely but always in meetings.",
         "A busy manager can still be a good one; short written updates often work best with them."),
        ("what's a good stretch for tight hamstrings?",
         "A standing forward fold or a lying hamstring stretch with a strap, held for 30 seconds, works well."),
        ("cheers", "Any time!"),
    ]),
    (4.0, "s2", [
        ("We're flying to Lisbon on the 3rd of May with easyJet, so excited.",
         "Lisbon in May is lovely: warm but not too hot. Try the pastéis de nata in Belém."),
        ("how do I convert a string to a date in pandas?",
         "Use pd.to_datetime(df['col']), with format='%Y-%m-%d' if you know it."),
        ("Grace left the company on Friday, so I report to Dev Mistry now.",
         "A change of manager is a good moment to agree on how you'll keep in touch."),
        ("haha yeah", "😄"),
    ]),
    (9.0, "s3", [
        ("Cancelled PureGym yesterday, I've joined the Boulder Barn climbing wall on Dock Road instead.",
         "Climbing is a great full-body workout, and bouldering gyms tend to be friendly places."),
        ("Had to move the Lisbon trip, we now fly out on the 10th of May, same airline.",
         "A week later still catches good weather; check that your accommodation moved too."),
        ("what's the capital of Australia?", "Canberra."),
    ]),
]

#: question -> (text of the update, text of the stale turn)
QUESTIONS = {
    "which gym am I a member of?": ("Boulder Barn", "I pay £25 a month for PureGym"),
    "who's my line manager?": ("Dev Mistry", "My line manager is Grace Okafor"),
    "when do we fly to Lisbon?": ("10th of May", "3rd of May"),
}

chat = replay_fixture("updates", USER, T0, [], SESSIONS + [(14.0, "s4", [(q, "ok") for q in QUESTIONS])])


def _position(res: RetrievalResult, needed: str) -> int | None:
    for i, item in enumerate(res.items):
        if item.source == "memory" and needed in item.text:
            return i
    return None


_STALE_FIRST = pytest.mark.xfail(strict=True, reason="known miss (stop 32): the stale turn ranks first; the update "
                                 "pass that fixed it cost LoCoMo / LongMemEval recall and was not shipped")


@pytest.mark.parametrize("question", [pytest.param(q, marks=_STALE_FIRST) if q.startswith("who's my line") else q
                                      for q in QUESTIONS])
def test_the_later_fact_comes_before_the_stale_one(chat: dict[str, Any], question: str) -> None:
    res = chat[question]
    new, old = QUESTIONS[question]
    assert res.route.wants_memory, res.explain()
    at_new, at_old = _position(res, new), _position(res, old)
    assert at_new is not None, res.explain()
    assert at_old is None or at_new < at_old, res.explain()
