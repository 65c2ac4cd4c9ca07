"""Hugging Face tokenizer implementation of :class:`~chatrecall.core.TokenCounter`.

For budgets measured in the tokens of a local open model (Llama, Mistral,
Qwen...) rather than OpenAI's. Tokenizers are loaded from local files only.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from chatrecall.core import ConfigError, InvalidInputError

from ._guard import require

__all__ = ["TransformersTokenCounter"]


class TransformersTokenCounter:
    """Counts tokens with a Hugging Face tokenizer, without special tokens.

    Example:
        >>> counter = TransformersTokenCounter("/models/llama-3-8b")  # doctest: +SKIP
        >>> counter.count("hello world")  # doctest: +SKIP
        2

    Args:
        tokenizer: A local tokenizer directory, or a tokenizer object: a
            ``transformers`` tokenizer (``encode(text, add_special_tokens=False)``)
            or a ``tokenizers.Tokenizer`` (``encode(...).ids``).

    Raises:
        ImportError: Loading from a path needs transformers (extra ``[embeddings]``).
        ConfigError: The path cannot be loaded offline or the object cannot encode.
    """

    def __init__(self, tokenizer: str | os.PathLike[str] | Any) -> None:
        if isinstance(tokenizer, (str, os.PathLike)):
            transformers = require("transformers", "embeddings", adapter="transformers")
            path = Path(tokenizer).expanduser()
            try:
                tokenizer = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            except Exception as exc:  # noqa: BLE001 - HF raises many unrelated types
                raise ConfigError(
                    f"tokenizer={str(path)!r} could not be loaded offline: {type(exc).__name__}: {exc}"
                ) from exc
        if callable(getattr(tokenizer, "no_padding", None)) and callable(getattr(tokenizer, "to_str", None)):
            # A raw tokenizers.Tokenizer may carry padding/truncation from its
            # tokenizer.json (MiniLM pads to 128): count on a copy without them.
            tokenizer = type(tokenizer).from_str(tokenizer.to_str())
            tokenizer.no_padding()
            tokenizer.no_truncation()
        if not callable(getattr(tokenizer, "encode", None)):
            raise ConfigError(f"tokenizer={tokenizer!r} has no encode() method")
        self._tok = tokenizer
        # Fast (Rust) tokenizers raise "Already borrowed" when shared across threads.
        self._lock = threading.Lock()
        self.name = str(getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__)

    def __repr__(self) -> str:
        return f"TransformersTokenCounter({self.name!r})"

    def count(self, text: str) -> int:
        """Number of tokens of ``text``, special tokens (BOS, CLS, SEP...) excluded.

        Raises:
            InvalidInputError: ``text`` is not a string.
        """
        if not isinstance(text, str):
            raise InvalidInputError(f"text={text!r} must be a string")
        if not text:
            return 0
        with self._lock:
            try:
                out = self._tok.encode(text, add_special_tokens=False, verbose=False)
            except TypeError:  # tokenizers.Tokenizer takes no ``verbose``
                out = self._tok.encode(text, add_special_tokens=False)
        ids = getattr(out, "ids", out)  # tokenizers.Encoding -> .ids
        return len(ids)
