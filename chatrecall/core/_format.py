"""Formatting of the context block injected into the prompt."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterator, Sequence

from ._types import Pin, ScoredItem

__all__ = ["chunk_text", "format_context"]


def _when(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M")


def format_context(
    pins: Sequence[Pin], recent: Sequence[ScoredItem], items: Sequence[ScoredItem], *, now: float | None = None
) -> str:
    """Labelled sections: pinned constraints, recent turns, memories, passages.

    Empty sections are left out, so a turn that needs nothing injects "".

    Args:
        pins: Pinned constraints.
        recent: The recent window, oldest first.
        items: Memories and passages, in the order to show them.
        now: When the question is asked (POSIX seconds): the memories' heading says it, so "three weeks ago" or
            "if we postponed now" can be read against their dates (helper-85, stop 29). None: not said.
    """
    parts: list[str] = []
    if pins:
        parts.append("## Pinned constraints (always apply)\n" + "\n".join(f"- {p.text}" for p in pins))
    if recent:
        parts.append(
            "## Recent conversation\n"
            + "\n".join(f"{it.record.role if it.record else 'user'}: {it.text}" for it in recent)
        )
    mem = [it for it in items if it.source == "memory"]
    if mem:
        lines = []
        for it in mem:
            r = it.record
            label = f"[{_when(r.timestamp)} · {r.role}]" if r else "[memory]"
            lines.append(f"- {label} {it.text}")
        moment = None if now is None else _dt.datetime.fromtimestamp(now, _dt.timezone.utc)
        today = "" if moment is None else f"; now {moment:%Y-%m-%d %H:%M}, {moment:%A}"
        parts.append(f"## Relevant memories from the conversation history (dated, UTC{today})\n" + "\n".join(lines))
    docs = [it for it in items if it.source == "corpus"]
    if docs:
        lines = []
        for it in docs:
            title = str(it.record.metadata.get("title", it.record.session_id)) if it.record else "document"
            lines.append(f"- [{title}] {it.text}")
        parts.append("## Knowledge base passages\n" + "\n".join(lines))
    return "\n\n".join(parts)


_SENT = re.compile(r"(?<=[.!?])\s+|\n{2,}")


def chunk_text(text: str, max_words: int = 160, overlap_words: int = 30) -> Iterator[str]:
    """Split a document into overlapping chunks along sentence boundaries."""
    sentences = [s.strip() for s in _SENT.split(text) if s.strip()]
    chunk: list[str] = []
    size = 0
    for s in sentences:
        n = len(s.split())
        if chunk and size + n > max_words:
            yield " ".join(chunk)
            # carry the tail of the previous chunk so an answer spanning the cut survives
            tail: list[str] = []
            t = 0
            for prev in reversed(chunk):
                t += len(prev.split())
                if t > overlap_words:
                    break
                tail.insert(0, prev)
            chunk, size = tail, sum(len(x.split()) for x in tail)
        if n > max_words:  # one giant sentence: hard split on words
            words = s.split()
            for i in range(0, len(words), max_words):
                yield " ".join(words[i : i + max_words])
            chunk, size = [], 0
            continue
        chunk.append(s)
        size += n
    if chunk:
        yield " ".join(chunk)
