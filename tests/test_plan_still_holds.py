"""C58 (stop 41): a question whether the user's own plan still holds under a condition reads the documents too.

helper-119's new-user chat (stop 40, a teacher training for a triathlon): "if it's still raining this afternoon,
can I still do my long ride?" was a memory turn (the continuity "it" and "my"): the plan came back from memory,
but the training plan's wet-weather rule, in the user's documents, was never searched. ``asks_advice`` now also
takes "can/could I/we still <verb>" and "if <condition>, can/should/will I/we ...", so a memory route that asks it
searches both when there are documents (``RetrievalConfig.advice_both``). Written before the clause (it fails on
656571d). Real model, embedded Chroma.
"""

from __future__ import annotations

from typing import Any

import pytest
from _chats import chat_turn, seeded_engine

from chatrecall import Route

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

PLAN = ("Riverside Tri Club 12-week sprint plan, week 6. Saturday: long ride, 60 km at an easy pace, then a 10 "
        "minute run off the bike. Wet-weather rule: if the roads are wet, do the long ride as 90 minutes on the "
        "turbo trainer indoors instead; never ride the Riverside loop in rain, the bridge deck is slippery. "
        "Sunday: rest or an easy 30 minute swim.")
POOL = ("Riverside Leisure Centre pool timetable. Lane swimming weekdays 06:30 to 08:30 and 19:00 to 21:00; "
        "weekends 08:00 to 12:00. Goggles and swim caps are on sale at reception. The sauna is closed in August.")


@pytest.fixture
def rider(embedded_store: Any, st_embedder: Any) -> Any:
    turns = [("I'm training for the Riverside sprint triathlon in July, it's my first one.",
              "Exciting! How is the training going?"),
             ("This Saturday afternoon I'm doing my long ride with Priya, the 60 km one.", "Enjoy the ride with Priya!")]
    docs = [{"title": "Sprint plan week 6", "text": PLAN}, {"title": "Pool timetable", "text": POOL}]
    with seeded_engine(embedded_store, st_embedder, 1_780_560_000.0, "jo", turns, documents=docs,  # 2026-06-04
                       days_later=2) as (cr, _):
        yield cr


@pytest.mark.parametrize("message", [
    "if it's still raining this afternoon, can I still do my long ride?",
    "can I still do my long ride with Priya if it rains?",
])
def test_whether_the_plan_still_holds_reads_the_plan_too(rider: Any, message: str) -> None:
    res = rider.retrieve(message, user_id="jo", session_id="s2")
    assert res.route is Route.BOTH, res.explain()
    assert any("asks for advice" in n for n in res.notes), res.explain()
    assert any("Wet-weather rule" in p.text for p in res.passages), res.explain()
    assert any("long ride with Priya" in m.text for m in res.memories), res.explain()


def test_a_plain_question_about_the_plan_stays_in_memory(rider: Any) -> None:
    res = rider.retrieve("who am I riding with on Saturday?", user_id="jo", session_id="s2")
    assert res.gate.route is Route.MEMORY, res.explain()
    assert not any("asks for advice" in n for n in res.notes), res.explain()
    assert res.memories and "Priya" in res.memories[0].text, res.explain()


# ----------------------------------------------------------------- C61: a turn widened to both keeps a memory turn's memories
# Measured and not shipped (stop 41): a turn the engine widened from memory to both searching memory as a memory
# turn would (the small lookup, only memories useful on their own) passed both tests below, but on the held-out
# chat files with documents it lost a gold memory on two files (facts_heldout 71 -> 70, facts_heldout3 68 -> 67:
# both turns whose gold memory scored under useful_score among k) and raised repeats_heldout's tokens per ask
# (123.8 -> 126.0). Strict xfails until a change passes both.
_C61 = pytest.mark.xfail(strict=True, reason="C61 not shipped (stop 41): widened turns take k memories")
CLUB = ("Riverside Wheelers Sunday club ride policy. The Sunday club ride departs at 08:30 from the Old Mill car park. "
        "Helmets are mandatory. Mudguards are required on club rides from October to March. Wet weather: in rain "
        "the ride goes ahead on the 45 km short route instead of the usual 80 km loop.")


@pytest.fixture
def sam(embedded_store: Any, st_embedder: Any) -> Any:
    turns = [("The Harlow Bakery site is due on the 28th of February.", "Noted: 28 February."),
             ("Kestrel Physio want their booking system live by the end of April.", "Okay, end of April."),
             ("My race is the Cotswold Spring Classic on 19 April.", "Good luck on the 19th!"),
             ("I do the Sunday club ride with Riverside Wheelers.", "Nice, a club ride every week.")]
    docs = [{"title": "Club ride policy", "text": CLUB}, {"title": "Pool timetable", "text": POOL}]
    with seeded_engine(embedded_store, st_embedder, 1_770_019_200.0, "sam", turns, documents=docs,  # 2026-02-02
                       days_later=3) as engine:
        yield engine


@_C61
def test_a_follow_up_on_a_documents_turn_takes_no_memory_by_its_time_alone(sam: Any) -> None:
    cr, clock = sam
    first = cr.retrieve("do I need mudguards for the club ride in February?", user_id="sam", session_id="s2")
    assert any("Mudguards" in p.text for p in first.passages), first.explain()
    chat_turn(cr, clock, "sam", "s2", "do I need mudguards for the club ride in February?",
              "Yes, mudguards are required from October to March.", ask=False)
    res = cr.retrieve("what time does it leave?", user_id="sam", session_id="s2")
    assert any("continues a turn the documents answered" in n for n in res.notes), res.explain()
    assert any("08:30" in p.text for p in res.passages), res.explain()
    # before C61: every dated memory by its time fit alone (deadlines, the race), a full k
    assert len(res.memories) <= cr.retrieval_config.phase1_top_k, res.explain()
    assert not any("Harlow" in m.text or "Kestrel" in m.text for m in res.memories), res.explain()


@_C61
def test_an_advice_turn_keeps_only_memories_about_it(sam: Any) -> None:
    cr, _ = sam
    res = cr.retrieve("if it rains on Sunday can I still do the club ride?", user_id="sam", session_id="s3")
    assert res.route is Route.BOTH, res.explain()
    assert any("Wet weather" in p.text for p in res.passages), res.explain()
    assert any("Riverside Wheelers" in m.text for m in res.memories), res.explain()
    assert not any("Harlow" in m.text or "Kestrel" in m.text for m in res.memories), res.explain()
