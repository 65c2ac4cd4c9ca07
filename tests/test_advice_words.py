"""Which messages ask for advice, rules or what is allowed (``asks_advice``): a memory route that does searches the
documents too. The first list was written (stop 27) before the patterns that catch its new forms, from a new-user
chat's miss ("how long does he legally have to fix it?") and forms like it."""

from __future__ import annotations

import pytest

from chatrecall.core._classifier import asks_advice

ASKS = [
    "my flight TP1351 was 4 hours late, what am I owed?",
    "is it safe to give him ibuprofen?",
    "the sink is still leaking and my landlord still hasn't replied, how long does he legally have to fix it?",
    "how long does my landlord have to return the deposit?",
    "can my landlord keep the deposit for a stained carpet?",
    "can they charge me for the late cancellation?",
    "is my employer allowed to cut my hours like that?",
    "what are my rights if the airline lost my bag?",
    "does my boss have to pay me for the training day?",
    "how much notice does my landlord need to give before visiting?",
    "is it legal for them to read my work emails?",
    "what happens if I miss the tax deadline for my side gig?",
    # stop 28, written before the patterns that catch them: what a rule or an event requires ("what jars do I need
    # for my show entry?" from a new-user chat never read the show rules) and forms like it
    "what jars do I need for my show entry?",
    "what documents do I need for my visa appointment?",
    "what paperwork do we need for the mortgage application?",
    "what vaccinations does my dog need for the trip to France?",
    "what forms do I need to fill in for my tax return?",
    "what do I need to bring to my driving test?",
    # stop 41 (C58), written before the clause: whether the user's own plan still holds under a condition
    # (helper-119's long ride took the plan from memory and never read the plan's wet-weather rule)
    "if it's still raining this afternoon, can I still do my long ride?",
    "can we still go out if the wind picks up to 20 knots?",
    "if my flight is delayed, can I still make the connection in Frankfurt?",
    "could I still do the 10k with a cold?",
    "if the hotel cancels, will we get our money back?",
]
PLAIN = [
    "what's my landlord's name?",
    "how long has my sister been in Lyon?",
    "who's our internet provider?",
    "when does my flight leave?",
    "what did the landlord say about the sink?",
    "how much do we pay for internet?",
    "does my boss know about the trip?",
    "what happened with the deposit in the end?",
    "can you remind me what my cat is called?",
    "what did I tell you about my rights at work?",
    "what groceries did we need for the party?",
    "what did I need the ladder for?",
    # stop 41: "still" and "if" in plain memory questions
    "do I still have the spare key?",
    "is Marek still coming on Friday?",
    "what did I say I'd do if it rained?",
    "are we still on for dinner?",
]
#: Plain questions the older "do I need to" form flags (a known over-reach, left as is in stop 28: narrowing it
#: would change which held-out messages it catches, and it was not measured).
OVER_REACH = [
    "what do I need to pick up from the store?",
    "what do I need to tell Sarah before Friday?",
    "what time do I need to leave for my flight?",
]


@pytest.mark.parametrize("message", ASKS)
def test_asks_advice(message: str) -> None:
    assert asks_advice(message)


@pytest.mark.parametrize("message", PLAIN)
def test_a_plain_memory_question_does_not(message: str) -> None:
    assert not asks_advice(message)


@pytest.mark.parametrize("message", OVER_REACH)
@pytest.mark.xfail(strict=True, reason="the 'do I need to' form flags a to-do question too")
def test_known_over_reach(message: str) -> None:
    assert not asks_advice(message)
