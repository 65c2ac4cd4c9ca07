"""A change that names what it replaces ranks above the earlier turn about that thing, even when it shares no word
with the question.

nu45 (stop 43, a LangChain chatbot for a coffee cart): "I use a Eureka Mignon Specialita grinder at the moment." in
the first session; "I sold the Eureka and bought a Mahlkönig E65S for the cart, it's way faster." weeks later. "Which
grinder am I bringing?" got the Eureka turn, its reply and the user's old question, and left the E65S turn out: it
says neither "grinder" nor any other word of the question, so the update lift (``_lift_changes``, which moves only a
change sharing a word with the question) skipped it, and "sold ... bought" was not read as a change at all.

The lift now also moves a user's change that names what it replaces ("sold the Eureka", "switched from Vodafone",
"the ThinkPad died") above an earlier turn that names the same thing and does share a word with the question. A
change that only mentions a name the earlier turn also has ("Swapped my Saturday shift with Dana") replaces nothing
and moves nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _chats import feed_sessions

from chatrecall import ChatRecall
from chatrecall.core._index import _replaced_words, _states_change
from chatrecall.testing import ManualClock


@pytest.mark.parametrize(("text", "words"), [
    ("I sold the Eureka and bought a Mahlkönig E65S for the cart, it's way faster.", {"eureka"}),
    ("switched from vodafone to three last week, way cheaper", {"vodafone"}),
    ("The ThinkPad finally died, replaced it with a MacBook Air M3.", {"thinkpad"}),
    ("Got rid of the Corolla, we share Mark's van now.", {"corolla"}),
    ("We cancelled Netflix and went with Disney+ instead.", {"netflix"}),
    ("Moved from Barclays to Monzo for the business account.", {"barclays"}),
    ("replaced my old Garmin Forerunner with a Coros Pace 3", {"garmin", "forerunner"}),
])
def test_the_replaced_thing_is_read(text: str, words: set[str]) -> None:
    assert _replaced_words(text) == frozenset(words)
    assert _states_change(text)


@pytest.mark.parametrize("text", [
    "I use a Eureka Mignon Specialita grinder at the moment.",
    "I was thinking about selling the Eureka.",  # considered, not done
    "Swapped my Saturday shift with Dana, so I'm on at 19:45 instead.",  # Dana is not replaced
    "We might switch from Vodafone next year.",
    "How do I sell a grinder online?",
    "my brother finally sold his Subaru and bought a Tesla Model Y",  # his, not the user's (stop 44, R1b)
    "my roommate switched from notion to obsidian, keeps going on about it",  # R1c: the roommate did
    "Jake finally got rid of the Kindle, he reads on his phone now",
    "Done, the error is gone. Staging is back up.",  # a problem solved
])

def test_nothing_replaced(text: str) -> None:
    assert _replaced_words(text) == frozenset()


def test_the_user_and_someone_else() -> None:
    assert _replaced_words("my wife and I sold the Corolla last week") == frozenset({"corolla"})
    assert _replaced_words("my partner cancelled our Netflix, we watch Disney+ now") == frozenset({"netflix"})


pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")


@pytest.fixture
def cr(embedded_store: Any, st_embedder: Any) -> Iterator[tuple[ChatRecall, ManualClock]]:
    clock = ManualClock(1_778_400_000.0)
    engine = ChatRecall(store=embedded_store, embedder=st_embedder, clock=clock)
    try:
        yield engine, clock
    finally:
        engine.close()


def _memories(cr: ChatRecall, question: str, user: str) -> list[str]:
    res = cr.retrieve(question, user_id=user, session_id="today")
    assert res.route.wants_memory, res.explain()
    return [it.text for it in res.memories]


def _first(texts: list[str], part: str) -> int:
    return next((i for i, t in enumerate(texts) if part in t), len(texts) + 99)


def test_the_new_grinder_comes_before_the_old_one(cr: tuple[ChatRecall, ManualClock]) -> None:
    engine, clock = cr
    feed_sessions(engine, clock, "tom", [
        [("I run a mobile espresso cart in Edinburgh called Brew & Roll.", "Lovely! How can I help with the cart?"),
         ("Our first big gig is a wedding on 13 June at Dalmeny, about 120 guests.",
          "Congratulations! 120 guests at Dalmeny on 13 June, noted."),
         ("Do you think I need a second grinder for that?",
          "For that many guests a second grinder helps keep the queue moving."),
         ("I use a Eureka Mignon Specialita grinder at the moment.",
          "The Specialita is fine for a market but slow for big events.")],
        [("morning!", "Morning!"),
         ("Which grinder do I use?", "The Eureka Mignon Specialita."),
         ("ok thanks", "You're welcome."),
         ("I sold the Eureka and bought a Mahlkönig E65S for the cart, it's way faster.",
          "Nice upgrade, that will keep up at the wedding."),
         ("What's the ideal water hardness for espresso?", "Around 50-175 ppm total hardness is the usual target.")],
    ], days_between=9)
    got = _memories(engine, "Which grinder am I bringing?", "tom")
    assert _first(got, "E65S") < _first(got, "Specialita grinder"), got


def test_the_new_phone_plan_comes_first(cr: tuple[ChatRecall, ManualClock]) -> None:
    engine, clock = cr
    feed_sessions(engine, clock, "ana", [
        [("My phone plan is with Vodafone, 30GB for 18 a month.", "Noted: Vodafone, 30GB, 18 per month."),
         ("Can you remind me to pay the gas bill on Friday?", "Sure, I'll note it for Friday.")],
        [("haha the dog stole my sandwich again", "Classic dog behaviour!"),
         ("switched from vodafone to three last week, way cheaper", "Nice, a cheaper deal is always welcome.")],
    ], days_between=9)
    got = _memories(engine, "which phone plan am I on?", "ana")
    assert _first(got, "three last week") < _first(got, "with Vodafone"), got


def test_a_change_that_replaces_nothing_moves_nothing(cr: tuple[ChatRecall, ManualClock]) -> None:
    engine, clock = cr
    feed_sessions(engine, clock, "kim", [
        [("Dana coaches our Thursday club run, it starts at 6:30pm from the leisure centre.",
          "Got it: Thursdays at 6:30pm, leisure centre, with Dana."),
         ("I need new trail shoes, any brands you like?", "Salomon and Hoka both make good trail shoes.")],
        [("Swapped my Saturday shift with Dana, so I'm on at 19:45 instead.", "OK, Saturday at 19:45 then."),
         ("thanks!", "Any time.")],
    ], days_between=9)
    got = _memories(engine, "What time does the club run start?", "kim")
    assert _first(got, "6:30pm from") < _first(got, "Swapped my Saturday"), got
