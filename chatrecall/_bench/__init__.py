"""Benchmarks of chatrecall (not part of the public API).

Each module measures one part on the shared data sets that lie beside the
checkout in ``../shared/`` (never copied into the repository):

* :mod:`._locomo`: LoCoMo turn-level evidence recall, plus the token study.
* :mod:`._longmemeval`: LongMemEval-S turn and session retrieval.
* :mod:`._gating`: the retrieval gate on TREC CAsT / iKAT labels.
* :mod:`._speed`: gate time, retrieve latency at 1K-100K memories, ingest, memory.
* :mod:`._replay`: conversations replayed turn by turn through ``retrieve``:
  evidence recall and tokens injected per turn against last-N + top-k.

``chatrecall bench <name> ... --out F`` writes ``F`` (JSON) and ``F`` with
``.md`` (markdown tables) and prints the tables.
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["run_bench"]


def _embedder(name: str | None) -> Any:
    """None (the harness default: bundled MiniLM), or the hash fake for smoke runs."""
    if name == "hash":
        from chatrecall.core import HashEmbedder

        return HashEmbedder()
    from . import _common

    # the bundled MiniLM on a chosen backend (minilm = auto: onnx when installed, else torch)
    _common.EMBED_BACKEND = {"torch": "torch", "onnx": "onnx", "onnx-int8": "onnx-int8",
                             "onnx-int8-query": "onnx-int8-query"}.get(str(name), "auto")
    return None


def _speed_extra(args: argparse.Namespace) -> dict[str, Any]:
    """Options of ``bench speed`` beyond the original four (absent in older parsers)."""
    out: dict[str, Any] = {}
    for name in ("server", "threads", "cold_start", "embedder_backends"):
        val = getattr(args, name, None)
        if val is not None:
            out[name] = val
    return out


def _run_gating(args: argparse.Namespace) -> dict[str, Any]:
    from . import _gating
    from ._common import machine_info, real_embedder

    path = Path(args.data)
    if args.limit:
        tmp = Path(tempfile.mkdtemp(prefix="chatrecall-gating-")) / path.name
        with path.open(encoding="utf-8") as src:
            tmp.write_text("".join(itertools.islice(src, args.limit)), encoding="utf-8")
        path = tmp
    choice = getattr(args, "embedder", "minilm")
    embedder = None if choice == "none" else (_embedder(choice) or real_embedder())
    res = _gating.run_gating(path, text_field=args.text_field, label_field=args.label_field,
                             embedder=embedder, progress=True)
    res["benchmark"] = "gating"
    res["machine"] = machine_info()
    return res


def run_bench(args: argparse.Namespace, console: Any) -> int:
    """Dispatch ``chatrecall bench <name>``; returns the process exit code."""
    from ._common import write_outputs

    name = args.bench
    emb = _embedder(getattr(args, "embedder", None))
    if name == "locomo":
        from ._locomo import run_locomo

        res = run_locomo(args.data, limit=args.limit, systems=args.systems, store=args.store, embedder=emb,
                         tokens=not args.no_tokens, console=console)
    elif name == "longmemeval":
        from ._longmemeval import run_longmemeval

        res = run_longmemeval(args.data, limit=args.limit, systems=args.systems, store=args.store, embedder=emb,
                              console=console)
    elif name == "replay":
        from ._replay import run_replay

        res = run_replay(args.data, limit=args.limit, max_questions=args.max_questions, systems=args.systems,
                         store=args.store, embedder=emb, chitchat=args.chitchat, feed_retrieve=args.feed_retrieve,
                         ask_in=args.ask_in, assistant_turns=args.assistant_turns,
                         sentence_vectors=args.sentence_vectors, console=console)
    elif name == "speed":
        from ._speed import run_speed

        sizes = [int(s) for s in str(args.sizes).split(",") if s.strip()]
        res = run_speed(sizes=sizes, queries=args.queries, store=args.store, data_dir=args.data_dir,
                        console=console, **_speed_extra(args))
    elif name == "gating":
        from . import _gating

        res = _run_gating(args)
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(res, indent=1, default=str) + "\n", encoding="utf-8")
        md = _gating.render_markdown(res)
        out.with_suffix(".md").write_text("# Gating benchmark\n\n" + md, encoding="utf-8")
        from rich.markdown import Markdown

        console.print(Markdown(md))
        console.print(f"[green]wrote[/] {out} and {out.with_suffix('.md')}")
        return 0
    else:  # pragma: no cover - argparse restricts the choices
        console.print(f"[red]unknown benchmark {name!r}[/]")
        return 2
    write_outputs(res, args.out, console)
    return 0
