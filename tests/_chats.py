"""Helpers shared by the new-user chat replays (test_*_chat.py; imported by them, not collected)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest

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


def feed_sessions(cr: ChatRecall, clock: ManualClock, user: str, sessions: Sequence[Sequence[tuple[str, str]]], *,
                  days_between: float = 3.0) -> None:
    """Store each session's (user turn, reply) pairs, no retrieve: half a minute between a turn and its reply, five
    minutes between pairs, ``days_between`` days between sessions (named ``s0``, ``s1``, ...)."""
    for n, turns in enumerate(sessions):
        for said, reply in turns:
            cr.add(said, user_id=user, session_id=f"s{n}")
            clock.advance(30)
            cr.add(reply, user_id=user, session_id=f"s{n}", role="assistant")
            clock.advance(300)
        clock.advance(days_between * 86400.0)


@contextlib.contextmanager
def seeded_engine(store: Any, embedder: Any, t0: float, user: str, turns: Sequence[tuple[str, str]], *,
                  documents: Sequence[Mapping[str, str]] = (), days_later: float = 0.0
                  ) -> Iterator[tuple[ChatRecall, ManualClock]]:
    """An engine on ``store`` whose clock starts at ``t0``, with the user's private ``documents`` and a first session
    ("s1") of (message, reply) ``turns`` stored, the clock then moved ``days_later``; closed on exit."""
    clock = ManualClock(t0)
    cr = ChatRecall(store=store, embedder=embedder, clock=clock)
    try:
        if documents:
            cr.add_documents(documents, user_id=user)
        for message, reply in turns:
            chat_turn(cr, clock, user, "s1", message, reply, ask=False)
        clock.advance(days_later * 86400.0)
        yield cr, clock
    finally:
        cr.close()


def replay_chat(cr: ChatRecall, clock: ManualClock, user: str, t0: float,
                sessions: Sequence[tuple[float, str, Sequence[tuple[str, str]]]]) -> dict[str, RetrievalResult]:
    """Replay a scripted chat, every turn retrieved then stored: ``sessions`` are (day after ``t0``, session id,
    [(message, reply), ...]). Returns {message: its RetrievalResult}."""
    results: dict[str, RetrievalResult] = {}
    for day, sid, turns in sessions:
        clock.t = t0 + day * 86400.0
        for message, reply in turns:
            res = chat_turn(cr, clock, user, sid, message, reply)
            assert res is not None
            results[message] = res
    return results


def memory_texts(res: RetrievalResult) -> list[str]:
    """The texts of the injected memories, best first."""
    return [i.text for i in res.items if i.source == "memory"]


def passages_hold(res: RetrievalResult, needed: str) -> bool:
    """Whether a corpus passage of the injected items holds ``needed``."""
    return any(needed in i.text for i in res.items if i.source == "corpus")


def replay_with_documents(directory: str, embedder: Any, user: str, t0: float, documents: Sequence[dict[str, str]],
                          sessions: Sequence[tuple[float, str, Sequence[tuple[str, str]]]], *,
                          retrieval: Any = None) -> dict[str, RetrievalResult]:
    """A fresh engine on embedded Chroma in ``directory`` (``retrieval``: its RetrievalConfig) with the user's
    private ``documents``, the chat replayed through it (:func:`replay_chat`), then closed."""
    from chatrecall.adapters.chroma import ChromaStore

    clock = ManualClock(t0)
    cr = ChatRecall(store=ChromaStore(path=directory), embedder=embedder, clock=clock, retrieval=retrieval)
    try:
        cr.add_documents(documents, user_id=user)
        return replay_chat(cr, clock, user, t0, sessions)
    finally:
        cr.close()


def replay_fixture(name: str, user: str, t0: float, documents: Sequence[dict[str, str]],
                   sessions: Sequence[tuple[float, str, Sequence[tuple[str, str]]]], *,
                   retrieval: Any = None) -> Callable[..., Any]:
    """A module-scoped ``chat`` fixture: the chat replayed once on embedded Chroma and the real model
    (:func:`replay_with_documents`, the documents private to ``user``), as {message: its RetrievalResult}."""

    @pytest.fixture(scope="module")
    def chat(tmp_path_factory: pytest.TempPathFactory, st_embedder: Any) -> dict[str, RetrievalResult]:
        return replay_with_documents(str(tmp_path_factory.mktemp(name) / "db"), st_embedder, user, t0, documents,
                                     sessions, retrieval=retrieval)

    return chat
