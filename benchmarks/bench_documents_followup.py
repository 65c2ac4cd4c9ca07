#!/usr/bin/env python
"""A memory-shaped question right after a turn the documents answered: is the document on that topic found?

nu54 (stop 49): right after "how much is the rye flour?" (answered from the supplier's price list), "when does the
supplier deliver?" went to memory; no memory answered, and the documents were searched with the message alone: the
tax-deadline sheet came above the price list. F1 (stop 50, measured, not shipped) queried the documents of such a turn
with the session's recent user turns, as a turn that searches both does: results/documents_followup_f1.md.

Data: ``benchmarks/data/documents_followup/set_f.json`` (helper-177, who read no project file; the corpus-context
format of ``chatrecall/_bench/_context.py``): 25 ``implied`` follow-ups whose answer is in a document on the recent
topic, each with a distractor document answering the same vague question for another thing (another supplier's
delivery days), and 15 ``explicit`` controls that switch topic and name their subject. Every question is asked at
the end of the session that named its topic (``evidence``, the case being measured) and in a new session, with the
gate's own route. Never tuned on.

Usage::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 python benchmarks/bench_documents_followup.py [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chatrecall._bench._common import machine_info, md_table
from chatrecall._bench._context import ContextHarness, load_context_set, summarise
from chatrecall.core._tuned import CORPUS_MEMORY_ITEMS, CORPUS_RECENT_CONTEXT

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "documents_followup" / "set_f.json"
OUT = ROOT / "benchmarks" / "results" / "documents_followup"


def measure(path: Path = DATA) -> dict[str, Any]:
    """Per way of asking and kind: hit@1, hit@3, MRR, gold injected, routes; and every scenario's outcome."""
    cs = load_context_set(path)
    h = ContextHarness([cs])
    out: dict[str, Any] = {"summary": {}, "routes": {}, "scenarios": {}}
    try:
        for ask in ("evidence", "new"):
            rows = h.run(items=CORPUS_MEMORY_ITEMS, recent=CORPUS_RECENT_CONTEXT, route=None, ask_in=ask)[cs.name]
            for kind in ("implied", "explicit"):
                out["summary"][f"{ask} / {kind}"] = summarise([o for o in rows if o.kind == kind])
            out["routes"][ask] = dict(Counter(f"{o.kind}:{o.route}" for o in rows))
            out["scenarios"][ask] = [{"id": o.sid, "kind": o.kind, "rank": o.rank, "injected": o.injected,
                                      "route": o.route} for o in rows]
    finally:
        h.close()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT, help="path without suffix: writes .json and .md")
    args = ap.parse_args(argv)
    res = measure()
    res["machine"] = machine_info()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(res, indent=1), encoding="utf-8")
    rows = [{"system": k, **{m: v for m, v in s.items() if m in ("n", "hit1", "hit3", "mrr", "injected")}}
            for k, s in res["summary"].items()]
    md = ("# A memory-shaped question right after a documents turn (`benchmarks/bench_documents_followup.py`)\n\n"
          "Gate's own route; held out (never tuned on). `evidence`: asked at the end of the session that named the "
          "topic.\n\n" + md_table(rows, ["n", "hit1", "hit3", "mrr", "injected"], first="system") + "\n\nRoutes: "
          + json.dumps(res["routes"]) + "\n")
    args.out.with_suffix(".md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
