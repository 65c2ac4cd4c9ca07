"""Pin commands: parsing (/pin, /unpin, /pins), pin lookup and applying them to the engine."""

from __future__ import annotations

import pytest

from chatrecall import InvalidInputError, NotFoundError, Pin, PinConfig, PinLimitError
from chatrecall.core._commands import PinCommand, apply_pin_command, find_pin, parse_pin_command
from chatrecall.testing import fake_engine


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/pin Always answer in French", PinCommand("pin", "Always answer in French")),
        ("  /PIN   answer in French  ", PinCommand("pin", "answer in French")),
        ("/Pin: use metric units", PinCommand("pin", "use metric units")),
        ('/pin "quoted text"', PinCommand("pin", "quoted text")),
        ("/pin \u201csmart quotes\u201d", PinCommand("pin", "smart quotes")),
        ("/pin\tmulti\nline", PinCommand("pin", "multi\nline")),
        ("/unpin pin-abc123", PinCommand("unpin", "pin-abc123")),
        ("/UNPIN  French ", PinCommand("unpin", "French")),
        ("/pins", PinCommand("list")),
        ("  /PINS  ", PinCommand("list")),
        ("/pins:", PinCommand("list")),
    ],
)
def test_parse_commands(text: str, expected: PinCommand) -> None:
    assert parse_pin_command(text) == expected


@pytest.mark.parametrize(
    "text",
    ["hello", "what did I pin?", "/pinned the bug", "/pinsx", "/unpinned", "pin this", "//pin x", "", "   ",
     "please /pin this"],
)
def test_ordinary_messages_are_not_commands(text: str) -> None:
    assert parse_pin_command(text) is None


@pytest.mark.parametrize(("text", "fragment"), [("/pin", "needs the text"), ("  /PIN   ", "needs the text"),
                                                ('/pin ""', "needs the text"), ("/unpin", "id or text"),
                                                ("/pins everything", "no argument")])
def test_malformed_commands_raise_naming_the_command(text: str, fragment: str) -> None:
    with pytest.raises(InvalidInputError, match=fragment):
        parse_pin_command(text)


def test_non_str_raises() -> None:
    with pytest.raises(InvalidInputError, match="int"):
        parse_pin_command(42)


def _pin(pid: str, text: str) -> Pin:
    return Pin(id=pid, text=text, user_id="u", session_id=None, created_at=0.0, tokens=3)


def test_find_pin_by_id_text_and_unique_fragment() -> None:
    french, metric = _pin("p1", "Always answer in French"), _pin("p2", "Use metric units, always")
    pins = [french, metric]
    assert find_pin(pins, "p2") is metric
    assert find_pin(pins, "always  ANSWER in french") is french
    assert find_pin(pins, "metric") is metric
    assert find_pin(pins, "always") is None  # ambiguous fragment: in both
    assert find_pin(pins, "german") is None
    assert find_pin(pins, "   ") is None


def test_apply_pin_list_unpin_roundtrip() -> None:
    cr = fake_engine()
    command = parse_pin_command("/pin Always answer in French")
    assert command is not None
    res = apply_pin_command(cr, command, user_id="u1")
    assert res.message == "Pinned: 'Always answer in French'"
    assert [p.text for p in cr.pins("u1")] == ["Always answer in French"]
    listed = apply_pin_command(cr, PinCommand("list"), user_id="u1")
    assert res.pins[0].id in listed.message and len(listed.pins) == 1
    assert cr.pins("u2") == []  # other users unaffected
    gone = apply_pin_command(cr, PinCommand("unpin", "french"), user_id="u1")
    assert gone.pins[0].id == res.pins[0].id
    assert cr.pins("u1") == []
    assert apply_pin_command(cr, PinCommand("list"), user_id="u1").message == "No pinned constraints."


def test_apply_session_pin_only_lists_in_its_session() -> None:
    cr = fake_engine()
    apply_pin_command(cr, PinCommand("pin", "short answers"), user_id="u1", session_id="s1")
    assert [p.text for p in cr.pins("u1", "s1")] == ["short answers"]
    assert cr.pins("u1", "s2") == []


def test_apply_unknown_unpin_and_other_users_pin_raise_not_found() -> None:
    cr = fake_engine()
    cr.pin("Always answer in French", user_id="u1")
    with pytest.raises(NotFoundError, match="german"):
        apply_pin_command(cr, PinCommand("unpin", "german"), user_id="u1")
    with pytest.raises(NotFoundError, match="u2"):
        apply_pin_command(cr, PinCommand("unpin", "french"), user_id="u2")
    assert len(cr.pins("u1")) == 1


def test_apply_respects_pin_limit_and_bad_command() -> None:
    cr = fake_engine(pins=PinConfig(max_pins=1))
    apply_pin_command(cr, PinCommand("pin", "one"), user_id="u1")
    with pytest.raises(PinLimitError, match="max_pins"):
        apply_pin_command(cr, PinCommand("pin", "two"), user_id="u1")
    with pytest.raises(InvalidInputError, match="PinCommand"):
        apply_pin_command(cr, "/pin x", user_id="u1")  # type: ignore[arg-type]
