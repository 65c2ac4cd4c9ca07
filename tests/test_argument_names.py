"""A misspelt keyword argument fails at once with our error naming it and the closest accepted name.

helper-109 / helper-110 (stop 35): ``retrieve(..., user="dana")`` and ``ChatRecallRetriever(..., as_contxt=True)``
raised a bare ``TypeError`` (README: every bad call raises a ``ChatRecallError``), and worse, the pydantic-based
adapters took a misspelt option silently (``ChatRecallRetriever(engine=cr, user_id="u", kk=3)`` searched the default
4), and ``ChatRecallMemory.from_defaults(sesion_id=...)`` said ``session_id=None`` without naming the typo.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from chatrecall import ChatRecallError, InvalidArgumentError


def _raises_naming(call: Callable[[], Any], wrong: str, right: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        call()
    msg = str(info.value)
    assert repr(wrong) in msg and f"did you mean {right!r}" in msg, msg
    assert isinstance(info.value, ChatRecallError) and isinstance(info.value, TypeError)


@pytest.mark.parametrize(("name", "call", "wrong", "right"), [
    ("retrieve", lambda e: e.retrieve("what's my cat called?", user="u"), "user", "user_id"),
    ("add", lambda e: e.add("My cat is Noodle", user_id="u", sesion_id="s"), "sesion_id", "session_id"),
    ("search", lambda e: e.search("cat", user_id="u", kk=3), "kk", "k"),
    ("add_documents", lambda e: e.add_documents([{"text": "x"}], user_ids="u"), "user_ids", "user_id"),
    ("pin", lambda e: e.pin("Use metric units", userid="u"), "userid", "user_id"),
    ("retrieve budget", lambda e: e.retrieve("hi", user_id="u", budget_token=500), "budget_token", "budget_tokens"),
    # other libraries' names, which the closest spelling misses (helper-119: topk=3 named nothing)
    ("retrieve topk", lambda e: e.retrieve("hi", user_id="u", topk=3), "topk", "k"),
    ("search top_n", lambda e: e.search("cat", user_id="u", top_n=3), "top_n", "k"),
    ("retrieve thread_id", lambda e: e.retrieve("hi", user_id="u", thread_id="t"), "thread_id", "session_id"),
    ("retrieve query", lambda e: e.retrieve(user_id="u", query="hi"), "query", "message"),
    ("search text", lambda e: e.search(user_id="u", text="hi"), "text", "query"),
])
def test_engine_methods_name_a_misspelt_keyword(make_engine: Any, name: str, call: Any, wrong: str,
                                                 right: str) -> None:
    eng = make_engine()
    _raises_naming(lambda: call(eng), wrong, right)
    assert eng.count("u") == 0  # nothing stored by a refused call


def test_async_methods_name_it_too(make_engine: Any) -> None:
    eng = make_engine()
    _raises_naming(lambda: asyncio.run(eng.aretrieve("hi", user="u")), "user", "user_id")


def test_langchain_classes_refuse_an_option_they_do_not_take(make_engine: Any) -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("langchain.agents")
    from chatrecall.adapters.langchain import ChatRecallMemory, ChatRecallMiddleware, ChatRecallRetriever

    eng = make_engine()
    _raises_naming(lambda: ChatRecallRetriever(engine=eng, user_id="u", kk=3), "kk", "k")
    _raises_naming(lambda: ChatRecallMemory(engine=eng, user_id="u", session_id="s", budget_token=9),
                   "budget_token", "budget_tokens")
    _raises_naming(lambda: ChatRecallMiddleware(eng, user_id="u", budget_token=3), "budget_token", "budget_tokens")
    assert ChatRecallRetriever(engine=eng, user_id="u", k=3, tags=["x"]).k == 3  # the framework's own fields pass


def test_llamaindex_classes_refuse_an_option_they_do_not_take(make_engine: Any) -> None:
    pytest.importorskip("llama_index.core")
    from chatrecall.adapters.llamaindex import ChatRecallMemory, ChatRecallPostprocessor, ChatRecallRetriever

    eng = make_engine()
    _raises_naming(lambda: ChatRecallRetriever(eng, user_id="u", as_contxt=True), "as_contxt", "as_context")
    _raises_naming(lambda: ChatRecallMemory.from_defaults(engine=eng, user_id="u", sesion_id="s"),
                   "sesion_id", "session_id")
    _raises_naming(lambda: ChatRecallMemory(engine=eng, user_id="u", session_id="s", kk=1), "kk", "k")
    _raises_naming(lambda: ChatRecallPostprocessor(topn=3), "topn", "top_n")


def test_langgraph_store_and_mcp_server_name_it_too(make_engine: Any) -> None:
    eng = make_engine()
    pytest.importorskip("langgraph.store.base")
    from chatrecall.adapters.langgraph import ChatRecallStore

    _raises_naming(lambda: ChatRecallStore(eng, user_postion=1), "user_postion", "user_position")
    pytest.importorskip("mcp")
    from chatrecall.mcp_server import build_server

    _raises_naming(lambda: build_server(eng, userid="u"), "userid", "user_id")
