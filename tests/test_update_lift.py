"""A fact changed in passing should come before the old value (README, Known limits). Not yet: strict xfails.

helper-119 (stop 40): "how many units of insulin is Pepper on?" brought "she's on insulin twice a day, 2 units" first
and two replies about other insulin questions; "her dose is going up to 3 units from tonight" came fourth and was
left out. helper-118 (stop 39): "the EP is now due on October 30th" came third, under the old deadline and the bot's
acknowledgement of it.

Tried in stop 40 and not shipped (docs/benchmarks.md, "Tried in stop 40"): C56 lifted a user's statement that
something changed above the earlier turns about the same thing. Both cases below passed and the held-out chat files
gained (the current value above the stale one 197 -> 218 of 310 questions), but the cross-validated LoCoMo R@10
(0.793 -> 0.792 / 0.782 / 0.785 over three variants) and LongMemEval figures fell. Strict: a change that makes them
pass must say so here.
"""

from __future__ import annotations

from typing import Any

import pytest

from chatrecall import ChatRecall
from chatrecall.testing import ManualClock

DAY = 86400.0


pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")


@pytest.fixture
def vet_chat(embedded_store: Any, st_embedder: Any) -> Any:
    clock = ManualClock(1_773_820_800.0)
    cr = ChatRecall(store=embedded_store, embedder=st_embedder, clock=clock)
    sessions = [
        [("My cat Pepper was diagnosed with diabetes last month, she's on insulin twice a day, 2 units at 7am and "
          "7pm.", "Poor Pepper. A fixed 7am / 7pm routine with meals is exactly right."),
         ("I'm mixing an EP for a band called The Low Tides, the deadline is October 23rd.",
          "Got it, The Low Tides EP is due on October 23rd.")],
        [("what time is Pepper's evening insulin?", "7pm, with her evening meal."),
         ("will PawSure pay for Pepper's insulin then?", "Yes, prescribed medication such as insulin is covered.")],
        [("Took Pepper to Dr Hallam at Kirkstall Vets yesterday, her dose is going up to 3 units from tonight.",
          "OK, 3 units at 7am and 7pm from tonight. Keep an eye on her appetite."),
         ("Update: The Low Tides pushed their deadline to October 30th.",
          "Good news, a bit more breathing room: the EP is now due on October 30th."),
         ("I was thinking about switching Pepper to a new food but the vet said no.", "Fair enough.")],
    ]
    for n, turns in enumerate(sessions):
        for user, reply in turns:
            cr.add(user, user_id="m", session_id=f"s{n}")
            clock.advance(30)
            cr.add(reply, user_id="m", session_id=f"s{n}", role="assistant")
            clock.advance(300)
        clock.advance(3 * DAY)
    try:
        yield cr
    finally:
        cr.close()


@pytest.mark.xfail(strict=True, reason="known limit: the old value ranks first (C56 not shipped, stop 40)")
def test_the_new_dose_comes_before_the_old_one(vet_chat: ChatRecall) -> None:
    res = vet_chat.retrieve("how many units of insulin is Pepper on?", user_id="m", session_id="s9")
    texts = [m.text for m in res.memories]
    assert texts and "3 units" in texts[0], res.explain()


@pytest.mark.xfail(strict=True, reason="known limit: the old value ranks first (C56 not shipped, stop 40)")
def test_the_new_deadline_comes_before_the_old_one(vet_chat: ChatRecall) -> None:
    res = vet_chat.retrieve("When is the EP for The Low Tides due?", user_id="m", session_id="s9")
    texts = [m.text for m in res.memories]
    first_new = next(i for i, t in enumerate(texts) if "October 30th" in t)
    first_old = next((i for i, t in enumerate(texts) if "October 23rd" in t), len(texts))
    assert first_new < first_old, res.explain()
