"""A user's turn that states something about the user keeps its score when it also asks the chatbot something."""

from __future__ import annotations

import numpy as np
import pytest

from chatrecall import ChatRecall
from chatrecall.core import RetrievalConfig, UserIndex
from chatrecall.core._index import _states_own
from chatrecall.core._ranking import RankParams, rank_memories
from chatrecall.core._types import Record

FACT = "Our internet is with Northwave and it drops every evening around 8. Any ideas?"
REPLY = ("Evening drops usually mean congestion on the provider's side. Restart the router, test on a cable, and if "
         "the internet still drops call them and ask for a line check.")


@pytest.mark.parametrize(("text", "states"), [
    (FACT, True),
    ("My flight TP1351 was 4 hours late, what am I owed?", True),
    ("I use VS Code for everything, can you recommend some extensions for Python?", True),
    ("what's the capital of Peru?", False),
    ("Can you help me with my CV?", False),
    ("hey, I have a question: how do I boil an egg?", False),
    ("Need to pick a database for billing", False),
    ("Which hotel did we book?", False),
    ("do you think I should ask my manager for a raise?", False),
    # a question or request opened by a connective is still one (helper-112: "and how did we fix it?")
    ("and how did we fix it?", False),
    ("ok so what did we decide about my budget?", False),
    ("And can you remind me of our hotel?", False),
    # ... but a connective before a statement leaves a statement
    ("and I pay 20 a month for it", True),
    ("so we moved it to Friday, right?", True),
    ("I've been with Three for two years and pay 20 a month - is that too much?", True),
])
def test_a_turn_states_something_about_the_speaker(text: str, states: bool) -> None:
    assert _states_own(text) is states


def _index(roles: list[str], vecs: list[list[float]], texts: list[str]) -> UserIndex:
    v = np.asarray(vecs, dtype=np.float32)
    idx = UserIndex(dim=v.shape[1])
    idx.add([Record(id=f"r{i}", text=t, user_id="u", session_id="s", role=r, timestamp=1000.0 + 60 * i, seq=i)
             for i, (r, t) in enumerate(zip(roles, texts))], v / np.linalg.norm(v, axis=1, keepdims=True))
    return idx


def _first(idx: UserIndex, params: RankParams | None = None) -> int:
    r = rank_memories(idx, "who is our internet provider?", np.asarray([1.0, 0.0, 0.0], dtype=np.float32), [],
                      strategy=None, k=3, now=5000.0, config=RetrievalConfig(), params=params or RankParams())
    return int(r.positions[0])


VECS = [[0.8, 0.6, 0.0], [0.3, 0.95, 0.1], [0.0, 0.2, 1.0]]  # cosines to the query 0.8, 0.3, 0


def test_the_fact_keeps_its_place_above_the_chatbots_reply() -> None:
    idx = _index(["user", "assistant", "user"], VECS, [FACT, REPLY, "thanks, I'll try that"])
    assert _first(idx) == 0
    # the same turns, the user's turn a bare question: it hands the reply the larger share, as before
    idx = _index(["user", "assistant", "user"], VECS, ["who should we get internet from? any ideas?", REPLY, "ok"])
    assert _first(idx) == 1


def test_between_two_people_the_question_pass_is_unchanged() -> None:
    idx = _index(["Caroline", "Melanie", "Caroline"], VECS, [FACT, REPLY, "thanks, I'll try that"])
    assert _first(idx, RankParams(question_pass=0.5)) == 1  # the peer pass still hands half to the answer


def test_the_facts_come_back_first_from_a_real_chat(real_engine: ChatRecall) -> None:
    """Real model, embedded Chroma: the user's facts lead the memory route's three, above the reply that repeats
    their words (before: the reply first, with 60 % of the fact's score). Since stop 42 the later change ("We moved
    the internet to Fibrelink") comes before the fact it replaces (C66, tests/test_update_lift.py); before, the
    old provider came first and this test asked for that order."""
    cr = real_engine
    moved = "We moved the internet to Fibrelink last week, the evening drops are gone."
    sessions = [
        [("user", "how many bones are in the human body?"), ("assistant", "206 in adults."),
         ("user", FACT), ("assistant", REPLY), ("user", "ok will do"),
         ("assistant", "Good luck! Tell me how the line check goes.")],
        [("user", "can you give me a quick pancake recipe?"),
         ("assistant", "Whisk 1 cup flour, 1 egg, 1 cup milk, a spoon of sugar; fry in butter."),
         ("user", moved), ("assistant", "Great news, a fibre line should be far steadier in the evenings."),
         ("user", "what's a good name for a sourdough starter?"), ("assistant", "Clint Yeastwood!")],
    ]
    t0 = 1_700_000_000.0
    cr.add_many([{"text": text, "user_id": "u", "session_id": f"s{s}", "role": role,
                  "timestamp": t0 + s * 7 * 86400.0 + 60 * i}
                 for s, turns in enumerate(sessions) for i, (role, text) in enumerate(turns)])
    res = cr.retrieve("who do we get our internet from?", user_id="u", session_id="now", route="memory", k=3)
    texts = [it.text for it in res.memories]
    assert texts[:2] == [moved, FACT], texts
