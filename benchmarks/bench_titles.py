#!/usr/bin/env python
"""Titled documents: does a question naming a document's subject find that document? (stop 43, T1)

Data: ``benchmarks/data/titled_docs/set_t*.json``, written for this by a helper who saw no code, before the change
that searches titles (T1) was written: four domains (market trader rules, espresso machine manuals, an employer's
office policies, course syllabi), 43 documents with look-alike siblings whose subject is often named in the title
only, some generic titles ("FAQ", "Rules 2025"), and 89 questions: ``names_title`` (the question names the subject
that tells the gold document from its siblings), ``content_only`` (a unique gold document, no name) and
``general`` (no document answers; gold is empty). Nothing is chosen on it: T1 has no constant.

Each file's documents go into one fresh store (the real model, embedded Chroma) twice: as written, and with the
titles left out, which is how every document was searched before T1 (the title was a label only). Every question
is asked through ``retrieve`` with a new session (no memories), the route forced to the corpus and the gate's own.
Reported per question kind: gold injected (a chunk of a gold document among the passages), gold first, passages and
passage tokens. The stop 43 run against the code before T1 gave the same "without" numbers as that code.

Usage::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 python benchmarks/bench_titles.py [--out benchmarks/results/titled_docs]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import chatrecall
from chatrecall._bench._common import machine_info, md_table
from chatrecall.core import Route

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "titled_docs"
KINDS = ("names_title", "content_only", "general")


def ask_file(path: Path, *, titles: bool) -> list[dict[str, Any]]:
    """Every question of one file, both routes, against that file's documents (with or without titles)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    docs = [d if titles else {k: v for k, v in d.items() if k != "title"} for d in data["documents"]]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_titles_") as tmp:
        cr = chatrecall.connect(path=tmp)
        try:
            cr.add_documents(docs)
            for q in data["questions"]:
                for mode, route in (("corpus", Route.CORPUS), ("gate", None)):
                    res = cr.retrieve(q["text"], user_id="u", session_id=f"{q['id']}-{mode}", route=route)
                    got = [p.record.session_id if p.record else "" for p in res.passages]
                    rows.append({"question": q["id"], "kind": q["kind"], "mode": mode, "gold": q["gold"],
                                 "route": res.route.value, "documents": got,
                                 "tokens": sum(p.tokens for p in res.passages)})
        finally:
            cr.close()
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        a = out.setdefault(f"{r['kind']} / {r['mode']}", {"questions": 0, "gold_injected": 0, "gold_first": 0,
                                                           "passages": 0, "tokens": 0})
        a["questions"] += 1
        a["passages"] += len(r["documents"])
        a["tokens"] += r["tokens"]
        if r["gold"]:
            a["gold_injected"] += bool(set(r["gold"]) & set(r["documents"]))
            a["gold_first"] += bool(r["documents"] and r["documents"][0] in r["gold"])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "titled_docs")
    args = ap.parse_args(argv)
    files = sorted(DATA.glob("set_t*.json"))
    if not files:
        raise SystemExit(f"no data in {DATA}")
    result: dict[str, Any] = {"machine": machine_info(), "files": [f.name for f in files], "systems": {}}
    for titles in (True, False):
        rows = [r for f in files for r in ask_file(f, titles=titles)]
        result["systems"]["titles searched" if titles else "titles left out"] = {"summary": summarise(rows),
                                                                                 "rows": rows}
    lines = ["# Titled documents (`benchmarks/bench_titles.py`)", "",
             "Questions by kind and route; gold injected / gold first count questions (general: no gold).", ""]
    table = []
    for name, sysres in result["systems"].items():
        for key, a in sysres["summary"].items():
            table.append({"system": name, "questions / route": key, **{k: int(v) for k, v in a.items()}})
    table.sort(key=lambda r: (r["questions / route"], r["system"]))
    lines.append(md_table(table, ["questions / route", "questions", "gold_injected", "gold_first",
                                  "passages", "tokens"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
