#!/usr/bin/env python
"""Write ``chatrecall/data/gate_analysis.json``: the regex analysis of the default gate's patterns.

Building a process's first gate spent about 2 s analysing its patterns' regexes (which words a match can begin
with, which words every match holds; ``chatrecall/core/_regex_index.py``), and a message sent right after
``connect()`` waited for it. The analysis is a pure function of each regex, so its results for the default
patterns ship with the package and a gate reads them instead; any other regex (a user's extra patterns) is
analysed as before. The table is read only on the Python version (major.minor) that wrote it.

This script builds the default gates (learned and patterns-only) with the table switched off, records every
analysis they asked for, and writes them. ``tests/test_gate_analysis.py`` checks every entry against a fresh
analysis and that the default gates find every regex they ask for in it: re-run this script after changing a
pattern (the test names the regex that is missing or stale).

Usage::

    python benchmarks/build_gate_analysis.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chatrecall.core import _regex_index as rx
from chatrecall.core._gate import Gate, GateConfig

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "chatrecall" / "data" / "gate_analysis.json"


def table() -> dict[str, Any]:
    """The analysis every default gate asks for, computed now (the shipped table switched off)."""
    saved = rx._table
    rx._table = lambda: {}  # type: ignore[assignment]
    try:
        for fn in (rx.analyse, rx.ascii_safe, rx.closed_words, rx.required_words, rx.required_by_first_word,
                   rx.required_chars):
            fn.cache_clear()
        rx.COMPUTED.clear()
        Gate(GateConfig())
        Gate(GateConfig(learned=False))
        entries: dict[str, dict[str, Any]] = {}
        for (name, flags, regex), value in sorted(rx.COMPUTED.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
            entries.setdefault(name, {})[rx.table_key(regex, flags)] = rx.encode(name, value)
    finally:
        rx._table = saved  # type: ignore[assignment]
        for fn in (rx.analyse, rx.ascii_safe, rx.closed_words, rx.required_words, rx.required_by_first_word,
                   rx.required_chars):
            fn.cache_clear()
    return {"python": rx._python(), "written_by": "benchmarks/build_gate_analysis.py", "entries": entries}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the shipped file differs, write nothing")
    args = ap.parse_args(argv)
    text = json.dumps(table(), sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print(f"{OUT}: {'up to date' if same else 'STALE: re-run benchmarks/build_gate_analysis.py'}")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    n = sum(len(v) for v in json.loads(text)["entries"].values())
    print(f"wrote {OUT} ({n} entries, {len(text) / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
