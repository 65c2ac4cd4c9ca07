"""Helpers shared by the new-user chat replays (test_*_chat.py; imported by them, not collected)."""

from __future__ import annotations

from chatrecall import ChatRecall, RetrievalResult
from chatrecall.testing import ManualClock


def chat_turn(cr: ChatRecall, clock: ManualClock, user: str, session: str, message: str, reply: str, *,
              ask: bool = True) -> RetrievalResult | None:
    """One turn as a chatbot with chatrecall runs it: retrieve for the message (``ask``), then store the message and
    the reply, a minute apart from the turn before. Returns the retrieve's result (None when not asked)."""
    clock.advance(60)
    res = cr.retrieve(message, user_id=user, session_id=session) if ask else None
    cr.add(message, user_id=user, session_id=session, role="user")
    clock.advance(20)
    cr.add(reply, user_id=user, session_id=session, role="assistant")
    return res
