"""Chat commands that manage pinned constraints: ``/pin``, ``/unpin``, ``/pins``.

Framework-free so that every adapter (LangChain callback, LlamaIndex, a CLI)
parses and applies commands the same way::

    /pin Always answer in French      -> pin "Always answer in French"
    /unpin pin-3f2a...                -> unpin by id
    /unpin always answer in french    -> unpin by text (case/space insensitive)
    /pins                             -> list the pins

Command words are case-insensitive, surrounding whitespace is ignored, an
optional ``:`` may follow the command word and one pair of matching quotes
around the argument is stripped. Anything that does not start with one of the
three command words is not a command (:func:`parse_pin_command` returns None).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._errors import InvalidInputError, NotFoundError
from ._types import Pin

__all__ = ["PinCommand", "PinCommandResult", "apply_pin_command", "check_pin_scope", "find_pin", "parse_pin_command"]

PinAction = Literal["pin", "unpin", "list"]

# "/pins" must be tried before "/pin"; \b-like lookahead keeps "/pinned" from matching.
_COMMAND = re.compile(r"^\s*/(pins|unpin|pin)(?=$|[\s:])\s*:?\s*(.*?)\s*$", re.IGNORECASE | re.DOTALL)
_QUOTES = (('"', '"'), ("'", "'"), ("\u201c", "\u201d"), ("\u2018", "\u2019"), ("`", "`"))
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class PinCommand:
    """A parsed pin command.

    Attributes:
        action: ``pin``, ``unpin`` or ``list``.
        argument: The text to pin, the pin id or text to unpin, or None for ``list``.
    """

    action: PinAction
    argument: str | None = None


@dataclass(frozen=True, slots=True)
class PinCommandResult:
    """What applying a command did.

    Attributes:
        command: The command applied.
        pins: For ``pin``/``unpin`` the pin added or removed; for ``list`` every pin.
        message: A one-line confirmation to show the user (or a model).
    """

    command: PinCommand
    pins: tuple[Pin, ...]
    message: str


def _unquote(text: str) -> str:
    for left, right in _QUOTES:
        if len(text) >= 2 and text.startswith(left) and text.endswith(right):
            return text[len(left) : -len(right)].strip()
    return text


def _fold(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def parse_pin_command(text: Any) -> PinCommand | None:
    """Parse ``/pin <text>``, ``/unpin <id or text>`` or ``/pins``.

    Example:
        >>> parse_pin_command("  /PIN:  'answer in French' ")
        PinCommand(action='pin', argument='answer in French')
        >>> parse_pin_command("/pins")
        PinCommand(action='list', argument=None)
        >>> parse_pin_command("what did I pin?") is None
        True

    Args:
        text: A chat message.

    Returns:
        The command, or None when ``text`` is an ordinary message.

    Raises:
        InvalidInputError: ``text`` is not a str, or it is a command with a
            missing argument (``/pin``) or an unexpected one (``/pins x``).
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"message must be a str, got {type(text).__name__}: {text!r:.60}")
    m = _COMMAND.match(text)
    if m is None:
        return None
    word, arg = m.group(1).casefold(), _unquote(m.group(2))
    if word == "pins":
        if arg:
            raise InvalidInputError(f"/pins takes no argument, got {arg!r:.60}")
        return PinCommand("list")
    if not arg:
        what = "the text to pin" if word == "pin" else "the id or text of the pin to remove"
        raise InvalidInputError(f"/{word} needs {what}, got {text.strip()!r:.60}")
    return PinCommand("pin" if word == "pin" else "unpin", arg)


def find_pin(pins: Sequence[Pin], target: str) -> Pin | None:
    """The pin that ``target`` designates: its id, else its text.

    Text matching ignores case and runs of whitespace; when no text matches
    exactly, a target contained in exactly one pin's text selects that pin
    (``/unpin french`` removes "Always answer in French").

    Example:
        >>> p = Pin(id="pin-1", text="Always answer in French", user_id="u", session_id=None,
        ...         created_at=0.0, tokens=4)
        >>> find_pin([p], "ALWAYS answer   in french") is p, find_pin([p], "french") is p
        (True, True)
    """
    for p in pins:
        if p.id == target:
            return p
    want = _fold(target)
    if not want:
        return None
    exact = [p for p in pins if _fold(p.text) == want]
    if exact:
        return exact[0]
    partial = [p for p in pins if want in _fold(p.text)]
    return partial[0] if len(partial) == 1 else None


def check_pin_scope(scope: Any) -> str:
    """``scope`` of :func:`apply_pin_command`, checked.

    Raises:
        InvalidInputError: ``scope`` is neither ``"session"`` nor ``"user"``.
    """
    if scope not in ("session", "user"):
        raise InvalidInputError(f"scope={scope!r} is unknown; use 'user' (a pin applies in every session of the "
                                "user) or 'session' (a pin of this session only)")
    return str(scope)


def apply_pin_command(
    engine: Any, command: PinCommand, *, user_id: str, session_id: str | None = None, scope: str = "session"
) -> PinCommandResult:
    """Apply a parsed command to a :class:`~chatrecall.ChatRecall` engine.

    Example:
        >>> from chatrecall.testing import fake_engine
        >>> cr = fake_engine()
        >>> apply_pin_command(cr, parse_pin_command("/pin no emojis"), user_id="u1").message
        "Pinned: 'no emojis'"

    Args:
        engine: The engine (anything with ``pin``, ``unpin`` and ``pins``).
        command: From :func:`parse_pin_command`.
        user_id: Whose pins.
        session_id: Pin to this session only (None: every session of the user).
            ``list`` shows the global pins plus this session's.
        scope: ``"user"``: ``pin`` applies in every session of the user even
            when ``session_id`` is given (a standing constraint said in one
            conversation); ``list`` and ``unpin`` still see ``session_id``'s
            pins. ``"session"`` (default): as ``session_id`` says.

    Raises:
        NotFoundError: ``unpin`` names no pin of the user (the message lists them). A pin of another
            session of the user is found too (this session's and the user-wide ones first).
        PinLimitError: ``pin`` would exceed the pin caps.
        InvalidInputError: Bad ids, text or ``scope``.
    """
    if not isinstance(command, PinCommand):
        raise InvalidInputError(f"command must be a PinCommand, got {type(command).__name__}")
    scope = check_pin_scope(scope)
    if command.action == "list":
        pins = tuple(engine.pins(user_id, session_id))
        if not pins:
            return PinCommandResult(command, (), "No pinned constraints.")
        lines = "\n".join(f"- {p.text} (id {p.id})" for p in pins)
        return PinCommandResult(command, pins, f"{len(pins)} pinned constraint(s):\n{lines}")
    arg = command.argument or ""
    if command.action == "pin":
        pin = engine.pin(arg, user_id=user_id, session_id=None if scope == "user" else session_id)
        return PinCommandResult(command, (pin,), f"Pinned: {pin.text!r}")
    current = engine.pins(user_id, session_id)
    target = find_pin(current, arg)
    if target is None and session_id is not None:
        # A pin made in another conversation is still the user's: "drop the metric thing" removes it from here too
        # (a new-user chat pinned in one thread and could not unpin from the next).
        current = engine.pins(user_id)
        target = find_pin(current, arg)
    if target is None:
        known = ", ".join(repr(p.text) + (f" (session {p.session_id!r})" if p.session_id else "")
                          for p in current) or "none"
        raise NotFoundError(f"no pin of user {user_id!r} matches {arg!r}; current pins: {known}")
    removed = engine.unpin(target.id, user_id=user_id)
    return PinCommandResult(command, (removed,), f"Unpinned: {removed.text!r}")
