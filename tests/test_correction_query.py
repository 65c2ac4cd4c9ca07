"""A correction searches with the question it corrects.

"no, I meant the other hive" names the new referent; the question before it ("what colour is the queen
marked?") names what is asked. Two new users' chats corrected a question and got nothing useful back: the search
looked for "the other hive" (the marking fact not among 14 items) or for "the other one, the first quote we got"
(the top memory matched only "got"). The session's last user turn before the correction is now searched with it.
Both chats below are those users' own turns.
"""

from __future__ import annotations

from typing import Any

import pytest

from chatrecall import ChatRecall, Turn

T0 = 1_780_000_000.0
DAY = 86400.0

BEES = [
    ("s1", [("I'm Priya, I started beekeeping this spring and I've got two hives on my allotment on Fernside Road.",
             "Welcome to beekeeping, Priya! Two hives is a great way to start."),
            ("The strong colony is called Juniper and the weaker one is Clover.",
             "Lovely names. Keep an eye on Clover's stores and brood pattern."),
            ("I do my inspections every Saturday morning before it gets hot.",
             "Morning inspections are sensible, the bees are calmer.")]),
    ("s2", [("Juniper has two supers on now.", "Two supers already, Juniper is doing well."),
            ("Juniper's queen is marked blue, and Clover's queen is marked yellow since she's from last year.",
             "Good, marked queens are much easier to spot."),
            ("Clover's mite drop was 12 a day on the board this week.",
             "12 a day is above the usual threshold; Clover probably needs a treatment."),
            ("cool, thanks", "Any time!")]),
    ("s3", [("Added a third super to Juniper yesterday, she's booming.", "Three supers, brilliant!"),
            ("Treated Clover with an oxalic acid dribble on Tuesday.",
             "Good, that should bring Clover's mite load down."),
            ("lol ok", "It sounds scarier than it is!")]),
    ("s4", [("what colour is the queen marked?", "Juniper's queen is marked blue.")]),
]
INTERNET = [
    ("s1", [("also we're getting internet set up at the new place, Comcast quoted us $65 a month for 300 Mbps, "
             "is that reasonable?",
             "$65 a month for 300 Mbps from Comcast is about average; just check whether it's a promo rate that "
             "goes up after 12 months."),
            ("thanks!", "You're welcome!")]),
    ("s2", [("my sister Priya is coming to stay on the 22nd and she's vegan, any easy dinner ideas?",
             "For Priya's visit on the 22nd, a chickpea coconut curry or a tofu veggie stir-fry are easy vegan "
             "dinners that still feel special.")]),
    ("s3", [("we ended up going with Verizon Fios, $50 a month",
             "Nice, Verizon Fios at $50 a month is a good deal, and fiber should hold up well on your "
             "work-from-home days."),
            ("oh and Priya's flight got moved, she's coming on the 29th now",
             "Got it, Priya arrives on the 29th now, so you have an extra week to plan the curry night.")]),
    ("s4", [("what was the internet quote again?", "You're on Verizon Fios at $50 a month.")]),
]
CASES = {
    "bees": (BEES, "no, I meant the other hive", "Clover's queen is marked yellow"),
    "internet": (INTERNET, "no, I meant the other one, the first quote we got", "Comcast quoted us $65"),
}


def _store(cr: ChatRecall, chat: list[tuple[str, list[tuple[str, str]]]]) -> None:
    turns = []
    for n, (session, pairs) in enumerate(chat):
        for j, (user, reply) in enumerate(pairs):
            t = T0 + n * 6 * DAY + j * 120
            turns += [Turn(text=user, user_id="u", session_id=session, role="user", timestamp=t),
                      Turn(text=reply, user_id="u", session_id=session, role="assistant", timestamp=t + 30)]
    cr.add_many(turns)


def _top_memories(res: Any, n: int = 3) -> list[str]:
    return [i.text for i in res.items if i.source == "memory"][:n]


@pytest.mark.model
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("stored_first", [False, True])
def test_a_correction_finds_what_the_corrected_question_asked(real_engine: ChatRecall, case: str,
                                                              stored_first: bool) -> None:
    chat, correction, fact = CASES[case]
    cr = real_engine
    _store(cr, chat)
    if stored_first:  # LlamaIndex's put, then get: the correction itself is the session's last user turn
        cr.add(correction, user_id="u", session_id="s4", role="user")
    res = cr.retrieve(correction, user_id="u", session_id="s4")
    assert res.gate.correction
    assert any(n.startswith("correction: searched with the turn it corrects") for n in res.notes), res.notes
    assert any(fact in t for t in _top_memories(res)), res.explain()


def test_with_no_earlier_user_turn_the_correction_is_searched_alone(make_engine: Any) -> None:
    eng = make_engine()
    eng.add("Juniper's queen is marked blue, and Clover's queen is marked yellow.", user_id="u", session_id="s1")
    res = eng.retrieve("no, I meant the other hive", user_id="u", session_id="s2")
    assert res.gate.correction
    assert not any("the turn it corrects" in n for n in res.notes), res.notes


def test_the_corrected_turn_is_the_last_user_turn_of_the_window(make_engine: Any, monkeypatch: Any) -> None:
    eng = make_engine()
    for i, (role, text) in enumerate([("user", "how many supers does Juniper have?"),
                                      ("assistant", "Juniper has three supers."),
                                      ("user", "what colour is the queen marked?"),
                                      ("assistant", "Juniper's queen is marked blue.")]):
        eng.add(text, user_id="u", session_id="s4", role=role, timestamp=T0 + i)
    seen: list[str] = []
    real = eng.embedder.embed_query
    monkeypatch.setattr(eng.embedder, "embed_query", lambda q: seen.append(q) or real(q))
    eng.retrieve("no, I meant the other hive", user_id="u", session_id="s4")
    assert seen and seen[0] == "what colour is the queen marked? no, I meant the other hive"


@pytest.mark.parametrize(("message", "ruled", "kept"), [
    ("no, I meant the other one, Kirkstall, not Hartley's", {"hartley"}, {"kirkstall"}),
    ("no I meant the kitchen, not the bathroom", {"bathroom"}, {"kitchen"}),
    ("not that one, the one from tuesday", set(), set()),  # "that one" names nothing
    ("no, I meant the other hive", set(), set()),  # nothing ruled out
])
def test_what_a_correction_rules_out(message: str, ruled: set[str], kept: set[str]) -> None:
    from chatrecall.core._classifier import ruled_out

    assert ruled_out(message) == (frozenset(ruled), frozenset(kept))


def test_an_item_naming_only_what_is_ruled_out_is_left_out(make_engine: Any) -> None:
    eng = make_engine()
    eng.add("Hartley's Garage quoted 1850 for the gearbox", user_id="u", session_id="s1", timestamp=T0)
    eng.add("Kirkstall Motors will do the gearbox for 2400", user_id="u", session_id="s1", timestamp=T0 + 60)
    eng.add("we compared Hartley's and Kirkstall on the gearbox", user_id="u", session_id="s1", timestamp=T0 + 120)
    res = eng.retrieve("no, I meant the gearbox at Kirkstall, not Hartley's", user_id="u", session_id="s2")
    texts = [i.text for i in res.items if i.source == "memory"]
    assert "Hartley's Garage quoted 1850 for the gearbox" not in texts, res.explain()
    assert "we compared Hartley's and Kirkstall on the gearbox" in texts, res.explain()
    assert any(i.why == "the correction rules out 'hartley'" for i in res.rejected)
