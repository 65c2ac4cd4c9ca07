"""The shipped regex analysis (``chatrecall/data/gate_analysis.json``) is exactly what the analysis computes.

A process's first gate spent about 2.2 s analysing the default patterns' regexes (helper-109, stop 35: a message sent
right after ``connect()`` waited 2.4-3.0 s); the results ship with the package and a gate reads them instead. A stale or
wrong entry would change what the gate decides, so every entry is checked against a fresh analysis here, and the
default gates must find every regex they ask for in the table (re-run ``benchmarks/build_gate_analysis.py`` after
changing a pattern).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from chatrecall import Gate, GateConfig, GatePattern
from chatrecall.core import _regex_index as rx

NAMES = ("analyse", "ascii_safe", "closed_words", "required_words", "required_by_first_word", "required_chars")
_FUNCS = {name: getattr(rx, name) for name in NAMES}

needs_table = pytest.mark.skipif(not rx._table(), reason="the shipped table was written by another Python version")


def _clear() -> None:
    for fn in _FUNCS.values():
        fn.cache_clear()
    rx.COMPUTED.clear()


def _regexes() -> set[tuple[str, int]]:
    out = set()
    for pat in GateConfig().patterns:
        out.add((pat.regex, re.IGNORECASE if rx.needs_ignorecase(pat.regex) else 0))
        if pat.unless_before:
            out.add((pat.unless_before, re.IGNORECASE))
    return out


@needs_table
def test_every_shipped_entry_is_what_the_analysis_computes() -> None:
    table = rx._table()
    checked = 0
    for regex, flags in _regexes():
        key = rx.table_key(regex, flags)
        for name in NAMES:
            if key in table.get(name, {}):
                assert _FUNCS[name](regex, flags) == rx.compute(name, regex, flags), (name, regex[:80])
                checked += 1
    assert checked == sum(len(v) for v in table.values())  # no entry for a regex the defaults no longer hold


@needs_table
def test_the_default_gates_read_every_analysis_from_the_table() -> None:
    _clear()
    try:
        Gate(GateConfig())
        Gate(GateConfig(learned=False))
        missing = sorted({(name, regex[:60]) for name, _, regex in rx.COMPUTED})
        assert not missing, f"re-run benchmarks/build_gate_analysis.py: {missing[:5]}"
    finally:
        _clear()


def test_a_users_own_pattern_is_analysed(monkeypatch: Any) -> None:
    extra = GatePattern(category="personal", regex=r"\bmy\s+allotment\b", weight=0.9, target="memory",
                        name="user.allotment")
    _clear()
    try:
        g = Gate(GateConfig(extra_patterns=(extra,)))
        assert ("analyse", 0, extra.regex) in rx.COMPUTED or ("analyse", re.IGNORECASE, extra.regex) in rx.COMPUTED
        assert any(r.name == "user.allotment" for r in g.decide("how's my allotment doing?").reasons)
    finally:
        _clear()


def test_a_table_written_by_another_python_is_not_read(monkeypatch: Any) -> None:
    monkeypatch.setattr(rx, "_python", lambda: "2.7")
    assert rx._table.__wrapped__() == {}
