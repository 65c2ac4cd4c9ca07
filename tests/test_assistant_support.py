"""A chatbot's reply is ranked on its own score: no support from the user's turns around it."""

from __future__ import annotations

import numpy as np

from chatrecall import ChatRecall
from chatrecall.core import RetrievalConfig, UserIndex
from chatrecall.core._ranking import rank_memories
from chatrecall.core._types import Record

QUERY = "which streaming service do we pay for?"
STALE = "Trying to cut costs. Right now the only streaming thing we pay for is Netflix."
REPLY = "That's already pretty lean! Rotating services month to month is another way to save."
UPDATE = "Cancelled Netflix this week and signed up for Disney+ because the kids want Bluey."


def _index(turns: list[tuple[str, str, str, list[float]]]) -> UserIndex:
    """(session, role, text, vector) per turn, a minute apart."""
    v = np.asarray([t[3] for t in turns], dtype=np.float32)
    idx = UserIndex(dim=v.shape[1])
    idx.add([Record(id=f"r{i}", text=text, user_id="u", session_id=s, role=role, timestamp=1000.0 + 60 * i, seq=i)
             for i, (s, role, text, _) in enumerate(turns)], v / np.linalg.norm(v, axis=1, keepdims=True))
    return idx


def _ranked(idx: UserIndex) -> list[str]:
    r = rank_memories(idx, QUERY, np.asarray([1.0, 0.0, 0.0], dtype=np.float32), [], strategy=None, k=3,
                      now=9000.0, config=RetrievalConfig())
    return [idx.records[int(p)].text for p in r.positions]


def _chat(first: str, second: str) -> list[str]:
    # cosines to the query: the stale fact 0.8, the replies 0.1, the closing turn 0.05, the update 0.3
    return _ranked(_index([
        ("s1", first, STALE, [0.8, 0.6, 0.0]), ("s1", second, REPLY, [0.1, 0.0, 0.995]),
        ("s1", first, "ok thanks", [0.05, 0.999, 0.0]), ("s1", second, CLOSING, [0.1, 0.995, 0.0]),
        ("s2", first, UPDATE, [0.3, 0.0, 0.954]), ("s2", second, "Enjoy Bluey!", [0.0, 0.6, 0.8])]))


CLOSING = "Anytime! Enjoy the shows."


def test_a_chatbots_reply_rides_on_nothing_but_the_turn_it_answers() -> None:
    ranked = _chat("user", "assistant")
    # the reply to the fact keeps that turn's neighbour support (the bot's answer to what the user said stays
    # reachable); the closing reply, answering "ok thanks", no longer rides on the session's match. Since stop 44
    # (R1c) the update, which names what it replaces ("Cancelled Netflix"), is lifted above the stale fact naming
    # Netflix; before, it came third
    assert ranked[:3] == [UPDATE, STALE, REPLY], ranked


def test_between_two_people_the_support_is_unchanged() -> None:
    ranked = _chat("Caroline", "Melanie")
    assert ranked[:3] == [STALE, REPLY, CLOSING], ranked  # the session's turns support each other there


def test_the_update_reaches_the_memories_in_a_real_chat(real_engine: ChatRecall) -> None:
    """Real model, embedded Chroma: the replies around a stale fact no longer crowd its update out of the memory
    route's three."""
    cr = real_engine
    sessions = [
        [("user", STALE),
         ("assistant", "That's already pretty lean! If you want to go lower, the ad-supported tier is cheaper, or you "
                       "could rotate services month to month: subscribe, binge what you want, cancel, switch."),
         ("user", "got it, thanks"), ("assistant", "Anytime! Enjoy the shows.")],
        [("user", "what's a quick dinner with chickpeas?"),
         ("assistant", "Roast them with cumin and paprika, then toss with greens, feta and a lemon dressing."),
         ("user", "So we took your rotating advice. " + UPDATE),
         ("assistant", "Good call, Disney+ has every season of Bluey."),
         ("user", "how do I get wax out of a tablecloth?"),
         ("assistant", "Freeze it, scrape off what you can, then iron it between paper towels.")],
    ]
    t0 = 1_700_000_000.0
    cr.add_many([{"text": text, "user_id": "u", "session_id": f"s{s}", "role": role,
                  "timestamp": t0 + s * 7 * 86400.0 + 60 * i}
                 for s, turns in enumerate(sessions) for i, (role, text) in enumerate(turns)])
    res = cr.retrieve("what streaming service are we paying for at the moment?", user_id="u", session_id="now",
                      route="memory", k=3)
    texts = [it.text for it in res.memories]
    assert any(UPDATE in t for t in texts), texts
