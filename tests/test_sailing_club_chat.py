"""helper-118's new-user chat shape (stop 39): a sound engineer with a sailing club handbook and a studio's terms.

C52, a correction after a turn that memory answered stays a memory turn.

"When is Marek landing?" names Marek, whom memory knows: memory answers it, and the documents (a sailing club
handbook, a studio's terms) add only weak passages beside it. "no, I meant what time he lands, not the date" then
counted that turn as one the documents answered and searched both: k memories (every one holding a date or a time
matched the "what time" form) and every weak passage: 11 items, about 1,050 tokens, for an answer in one memory.
A turn brought documents (for the correction rule and the follow-up rule) when it injected a strong passage or
no memory: a correction after a question the documents answered still searches them (tests/test_recall_new_user.py,
"no, I meant the kitchen").

C53, a corpus question naming someone memory knows keeps the memories useful on their own when it speaks of the
user's things: "Can Marek join the sailing class today as my guest? What does it cost?" searched memory only
because it names Marek, and kept only memories naming him, so the guest fee the assistant had quoted ("one guest
per calendar month, 15 EUR") was left out.
"""

from __future__ import annotations

from typing import Any

import pytest

from chatrecall import ChatRecall
from chatrecall.testing import ManualClock

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

DAY = 86400.0
HANDBOOK = (
    "Tejo Sailing Club member handbook. Beginners (Level 1 and Level 2) may sail only when the mean wind speed is "
    "14 knots or less and gusts stay under 18 knots. Always wear a buoyancy aid; the club lends them free of charge "
    "from the rack beside the changing rooms. Bring a spare change of clothes, a hat and sunscreen, as the river "
    "reflects a lot of sun. Guests sail only in a boat with an instructor or a Level 3 member on board; the guest "
    "fee is 15 EUR, paid at the office before launching. If you capsize, stay with the boat.")
STUDIO = (
    "Alfama Rooms studio rental terms. Room A (live room) costs 35 EUR per hour, room B (control room) 25 EUR per "
    "hour. Engineers must bring their own hard drives; nothing is kept on the studio computers after a session. "
    "Cancellations less than 48 hours before a booking are charged in full. Cables and stands are provided.")
MEMORY = [
    ("My brother Marek is coming to visit from Kraków on October 14th, his flight is AN1273 with Atlantic Air, "
     "landing at 21:40.", "How nice! A late arrival on the 14th then."),
    ("I just signed up for beginner dinghy sailing lessons at the Tejo Sailing Club, classes are on Tuesdays at "
     "18:00.", "That's exciting!"),
    ("I'm mixing an EP for a band called The Low Tides, the deadline is October 23rd.",
     "Got it, The Low Tides EP is due on October 23rd."),
    ("I booked the Alfama Rooms studio for the recording with Marek: October 16th, 14:00 to 20:00, room B.",
     "Noted: room B on the 16th."),
    ("Also my sailing class moved, it's now on Thursdays at 18:30 instead of Tuesdays.",
     "Noted: sailing is now Thursdays at 18:30."),
]


@pytest.fixture
def tomasz(embedded_store: Any, st_embedder: Any) -> Any:
    clock = ManualClock(1_791_230_400.0)  # 2026-10-05 19:00 UTC
    cr = ChatRecall(store=embedded_store, embedder=st_embedder, clock=clock)
    cr.add_documents([{"title": "Tejo Sailing Club handbook", "text": HANDBOOK},
                      {"title": "Alfama Rooms terms", "text": STUDIO}])
    for user, reply in MEMORY:
        cr.add(user, user_id="t", session_id="s1")
        clock.advance(30)
        cr.add(reply, user_id="t", session_id="s1", role="assistant")
        clock.advance(600)
    clock.advance(4 * DAY)
    for user, reply in [("My girlfriend Ana wants to come along, she's never sailed.", "She can come as a guest."),
                        ("What should she wear?", "Closed-toe shoes, quick-drying clothes, a hat and sunscreen."),
                        ("nice, thanks a lot", "Any time!")]:
        cr.retrieve(user, user_id="t", session_id="s3")
        cr.add(user, user_id="t", session_id="s3")
        cr.add(reply, user_id="t", session_id="s3", role="assistant")
        clock.advance(60)
    try:
        yield cr, clock
    finally:
        cr.close()


def test_a_correction_after_a_question_memory_answered_searches_memory_only(tomasz: Any) -> None:
    cr, clock = tomasz
    first = cr.retrieve("When is Marek landing?", user_id="t", session_id="s3")
    assert first.memories and "AN1273" in first.memories[0].text, first.explain()
    assert not any(p.score >= cr.retrieval_config.strong_corpus_score for p in first.passages), first.explain()
    cr.add("When is Marek landing?", user_id="t", session_id="s3")
    cr.add("Marek arrives on October 14th.", user_id="t", session_id="s3", role="assistant")
    clock.advance(60)
    res = cr.retrieve("no, I meant what time he lands, not the date", user_id="t", session_id="s3")
    assert res.gate.correction, res.explain()
    assert res.memories and "21:40" in res.memories[0].text, res.explain()
    # the small lookup of a memory turn, not k memories; no weak passage beside the answer
    assert len(res.memories) <= cr.retrieval_config.phase1_top_k, res.explain()
    assert all(p.score >= cr.retrieval_config.strong_corpus_score for p in res.passages), res.explain()
    assert not any("corpus searched too" in n for n in res.notes), res.explain()


def test_a_question_naming_a_known_person_keeps_the_users_useful_memories(tomasz: Any) -> None:
    cr, clock = tomasz
    for user, reply in [("Can I bring a friend to a sailing class as a guest?",
                         "Yes: one guest per calendar month, 15 EUR paid at the office before launching."),
                        ("Is my sailing class today?", "No, your class moved to Thursdays at 18:30, so it's not today.")]:
        cr.add(user, user_id="t", session_id="s3")
        cr.add(reply, user_id="t", session_id="s3", role="assistant")
        clock.advance(60)
    clock.advance(5 * DAY)
    cr.add("Marek arrived safely last night, the flight was only 10 minutes late!", user_id="t", session_id="s5")
    cr.add("Great to hear he made it!", user_id="t", session_id="s5", role="assistant")
    clock.advance(60)
    res = cr.retrieve("Can Marek join the sailing class today as my guest? What does it cost?", user_id="t",
                      session_id="s5")
    assert any("15 EUR" in m.text for m in res.memories), res.explain()
    # the rule still keeps out what is not about the message: nothing about the EP or the studio booking
    assert not any("Low Tides" in m.text for m in res.memories), res.explain()
