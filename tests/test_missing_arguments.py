"""A missing required argument fails at once with our error naming it (helper-111, stop 36: ``add(..., user_id=...)``
without ``session_id`` raised Python's bare ``TypeError``; README's guarantees say every bad call raises a
``ChatRecallError``). Written before the change."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chatrecall import ChatRecallError, InvalidArgumentError


@pytest.mark.parametrize(("call", "missing"), [
    (lambda e: e.add("My cat is Noodle", user_id="u"), "session_id"),
    (lambda e: e.add("My cat is Noodle", session_id="s"), "user_id"),
    (lambda e: e.retrieve("what's my cat called?"), "user_id"),
    (lambda e: e.retrieve(user_id="u"), "message"),
    (lambda e: e.pin(user_id="u"), "text"),
])
def test_a_missing_argument_is_named(make_engine: Any, call: Any, missing: str) -> None:
    eng = make_engine()
    with pytest.raises(InvalidArgumentError) as info:
        call(eng)
    msg = str(info.value)
    assert repr(missing) in msg and "missing" in msg, msg
    assert isinstance(info.value, ChatRecallError) and isinstance(info.value, TypeError)
    assert eng.count("u") == 0


def test_async_methods_name_it_too(make_engine: Any) -> None:
    eng = make_engine()
    with pytest.raises(InvalidArgumentError, match="'session_id'"):
        asyncio.run(eng.aadd("My cat is Noodle", user_id="u"))
    # by the class the user holds, not the private mixin that defines it (nu46: "_AsyncMixin.aadd() is missing ...")
    with pytest.raises(InvalidArgumentError, match=r"^ChatRecall\.aadd\(\) is missing the argument 'user_id'"):
        asyncio.run(eng.aadd("My cat is Noodle", session_id="s"))
    with pytest.raises(InvalidArgumentError, match=r"of ChatRecall\.aretrieve\(\) \(did you mean 'user_id'\?\)"):
        asyncio.run(eng.aretrieve("hi", user="u"))


def test_positional_arguments_count(make_engine: Any) -> None:
    eng = make_engine()
    eng.add("My cat is Noodle", user_id="u", session_id="s")  # message given by position: nothing missing
    assert eng.count("u") == 1


def test_an_error_raised_inside_is_not_renamed(make_engine: Any) -> None:
    eng = make_engine()
    with pytest.raises(ChatRecallError) as info:
        eng.retrieve("", user_id="u")
    assert "missing" not in str(info.value)
