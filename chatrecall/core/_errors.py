"""Exception types raised by chatrecall.

Every error a caller can trigger with bad input or a failing backend is one of
these, so ``except ChatRecallError`` catches everything the library raises on
purpose. Messages always name the offending value.
"""

from __future__ import annotations

__all__ = [
    "ChatRecallError",
    "ConfigError",
    "InvalidArgumentError",
    "InvalidInputError",
    "NotFoundError",
    "PinLimitError",
    "StoreError",
    "StoreUnavailableError",
]


class ChatRecallError(Exception):
    """Base class of every error chatrecall raises deliberately."""


class InvalidInputError(ChatRecallError, ValueError):
    """A caller passed a value the API does not accept (empty text, wrong type, ...)."""


class InvalidArgumentError(ChatRecallError, TypeError):
    """A call named a keyword argument it does not take (a misspelt ``user_id``, ``k``...); the message names it
    and the closest argument the call takes. A ``TypeError`` too, as Python's own would be."""


class ConfigError(ChatRecallError, ValueError):
    """A configuration object was built with an invalid value."""


class ClosedError(ChatRecallError, RuntimeError):
    """A method that reads or writes the store was called on a ChatRecall after its ``close()``; the message
    names the call. Nothing stored is lost: open a new ChatRecall (``chatrecall.connect(...)``) on the store."""


class NotFoundError(ChatRecallError, KeyError):
    """An id (pin, memory) or user that was asked for does not exist."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class PinLimitError(ChatRecallError):
    """Adding a pin would exceed the configured count or token cap."""


class StoreError(ChatRecallError):
    """The memory store failed to read or write."""


class StoreUnavailableError(StoreError):
    """The memory store could not be reached (server down, timed out)."""
