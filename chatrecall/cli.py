"""Command line: ``chatrecall demo | ingest | ask | pins | stats | bench``."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from .core import ChatRecall, ChatRecallError, NotFoundError, RetrievalResult, Turn

console = Console()


def _engine(args: argparse.Namespace) -> ChatRecall:
    from ._connect import connect

    with console.status("loading embedding model and store…"):
        return connect(path=args.path, url=args.url, namespace=args.namespace)


def _load_sample() -> dict[str, Any]:
    data = resources.files("chatrecall").joinpath("data/sample_conversation.json").read_text(encoding="utf-8")
    return json.loads(data)  # type: ignore[no-any-return]


def show_result(res: RetrievalResult, *, title: str | None = None) -> None:
    """Render one retrieval decision as rich tables."""
    head = Table.grid(padding=(0, 1))
    head.add_row("[bold]message[/]", res.message)
    head.add_row("[bold]gate[/]", f"{res.gate.route.value} (confidence {res.gate.confidence:.2f})")
    head.add_row("[bold]route taken[/]", res.route.value)
    if res.strategy:
        head.add_row("[bold]strategy[/]", f"{res.strategy.value} (query type {res.query_type.value if res.query_type else '-'})")
    reasons = ", ".join(f"{r.category}:{r.match!r} {r.weight:+.2f}" for r in res.gate.reasons) or "no pattern fired"
    head.add_row("[bold]reasons[/]", reasons)
    for n in res.notes:
        head.add_row("[bold]note[/]", n)
    head.add_row("[bold]tokens[/]", f"{res.tokens_used} used, {res.tokens_left} left; "
                 + ", ".join(f"{k} {v:.1f} ms" for k, v in res.timings_ms.items()))
    console.print(Panel(head, title=title or "retrieve", expand=False))
    if res.items:
        t = Table(title="selected", show_lines=False)
        for col in ("source", "tier", "score", "components", "why", "text"):
            t.add_column(col, overflow="fold")
        for it in res.items:
            comps = " ".join(f"{k[:3]}={v:.2f}" for k, v in it.components.items())
            t.add_row(it.source, it.tier, f"{it.score:.3f}", comps, it.why, it.text[:90])
        console.print(t)
    if res.context:
        console.print(Panel(res.context, title="context block", expand=False))


def cmd_demo(args: argparse.Namespace) -> int:
    sample = _load_sample()
    args.namespace = args.namespace if args.namespace != "chatrecall" else "chatrecall_demo"
    cr = _engine(args)
    user = sample["user_id"]
    with contextlib.suppress(NotFoundError):
        cr.forget(user)  # start from the same state on every run
    cr.add_many([Turn(user_id=user, **t) for t in sample["turns"]])
    cr.add_documents(sample["documents"], user_id=user)
    for p in sample["pins"]:
        cr.pin(p, user_id=user)
    console.print(f"[green]loaded[/] {len(sample['turns'])} turns, {len(sample['documents'])} documents, "
                  f"{len(sample['pins'])} pin(s) for user {user!r}")
    for msg in sample["messages"]:
        show_result(cr.retrieve(msg, user_id=user, session_id="demo"))
    _save_metrics(args, cr)
    cr.close()
    return 0


def _read_turns(path: Path) -> Iterator[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ChatRecallError(f"{path}:{n}: invalid JSON ({exc.msg})") from None
        return
    data = json.loads(text)
    if isinstance(data, dict):
        data = data.get("turns", [])
    if not isinstance(data, list):
        raise ChatRecallError(f"{path}: expected a list of turns or {{'turns': [...]}}")
    yield from data


def cmd_ingest(args: argparse.Namespace) -> int:
    from rich.progress import Progress

    path = Path(args.file)
    if not path.exists():
        raise ChatRecallError(f"file not found: {path}")
    turns = list(_read_turns(path))
    for t in turns:
        if isinstance(t, dict):
            t.setdefault("user_id", args.user)
            t.setdefault("session_id", args.session)
            if "content" in t and "text" not in t:
                t["text"] = t.pop("content")
    cr = _engine(args)
    stored = 0
    with Progress(console=console) as prog:
        task = prog.add_task(f"ingesting {path.name}", total=len(turns))
        for i in range(0, len(turns), args.batch):
            stored += len(cr.add_many(turns[i : i + args.batch]))
            prog.update(task, advance=len(turns[i : i + args.batch]))
    console.print(f"[green]ingested[/] {stored} turns from {path}")
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    cr = _engine(args)
    res = cr.retrieve(args.message, user_id=args.user, session_id=args.session, strategy=args.strategy)
    if args.json:
        print(json.dumps(_result_json(res), indent=2))
    else:
        show_result(res)
    _save_metrics(args, cr)
    return 0


def _result_json(res: RetrievalResult) -> dict[str, Any]:
    return {
        "route": res.route.value,
        "gate": {"route": res.gate.route.value, "confidence": res.gate.confidence,
                 "reasons": [r.__repr__() for r in res.gate.reasons]},
        "items": [{"id": i.id, "source": i.source, "score": i.score, "components": dict(i.components),
                   "why": i.why, "text": i.text} for i in res.items],
        "pins": [p.text for p in res.pins],
        "tokens_used": res.tokens_used,
        "notes": list(res.notes),
        "timings_ms": dict(res.timings_ms),
        "context": res.context,
    }


def cmd_pins(args: argparse.Namespace) -> int:
    cr = _engine(args)
    if args.add:
        p = cr.pin(args.add, user_id=args.user, session_id=args.session)
        console.print(f"[green]pinned[/] {p.id}")
    if args.remove:
        cr.unpin(args.remove, user_id=args.user)
        console.print(f"[yellow]unpinned[/] {args.remove}")
    t = Table(title=f"pins of {args.user}")
    for col in ("id", "session", "tokens", "text"):
        t.add_column(col)
    for p in cr.pins(args.user):
        t.add_row(p.id, p.session_id or "*", str(p.tokens), p.text)
    console.print(t)
    return 0


def _metrics_path(args: argparse.Namespace) -> Path:
    home = Path(args.path) if args.path else Path(os.environ.get("CHATRECALL_HOME", Path.home() / ".local/share/chatrecall"))
    return home / f"{args.namespace}-metrics.json"


def _save_metrics(args: argparse.Namespace, cr: ChatRecall) -> None:
    if args.url:
        return
    path = _metrics_path(args)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cr.stats(), indent=1), encoding="utf-8")


def cmd_stats(args: argparse.Namespace) -> int:
    cr = _engine(args)
    counts = Table(title="store")
    counts.add_column("collection")
    counts.add_column("records", justify="right")
    for col in ("memories", "pins", "corpus"):
        counts.add_row(col, str(cr.store.count(col)))
    console.print(counts)
    if args.user:
        console.print(f"user {args.user!r}: {cr.count(args.user)} memories, {len(cr.pins(args.user))} pins")
    path = _metrics_path(args)
    if path.exists():
        snap = json.loads(path.read_text(encoding="utf-8"))
        t = Table(title="last run metrics")
        t.add_column("metric")
        t.add_column("value", justify="right")
        for k, v in sorted(snap["counters"].items()):
            t.add_row(k, str(v))
        for k, h in sorted(snap["histograms"].items()):
            t.add_row(k, f"p50 {h['p50']:.2f}  p95 {h['p95']:.2f}  (n={h['count']})")
        console.print(t)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from ._bench import run_bench

    return run_bench(args, console)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="chatrecall", description=__doc__)
    p.add_argument("--path", help="embedded Chroma directory (default $CHATRECALL_HOME or ~/.local/share/chatrecall)")
    p.add_argument("--url", help="Chroma server URL instead of the embedded store")
    p.add_argument("--namespace", default="chatrecall", help="collection prefix")
    sub = p.add_subparsers(dest="command", required=True)

    sub.add_parser("demo", help="load a sample conversation and show decisions").set_defaults(func=cmd_demo)

    s = sub.add_parser("ingest", help="store turns from a JSON / JSONL file")
    s.add_argument("file")
    s.add_argument("--user", default="default")
    s.add_argument("--session", default="default")
    s.add_argument("--batch", type=int, default=256)
    s.set_defaults(func=cmd_ingest)

    s = sub.add_parser("ask", help="show what chatrecall would inject for a message")
    s.add_argument("message")
    s.add_argument("--user", required=True)
    s.add_argument("--session")
    s.add_argument("--strategy")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_ask)

    s = sub.add_parser("pins", help="list, add or remove pinned constraints")
    s.add_argument("--user", required=True)
    s.add_argument("--session")
    s.add_argument("--add", metavar="TEXT")
    s.add_argument("--remove", metavar="PIN_ID")
    s.set_defaults(func=cmd_pins)

    s = sub.add_parser("stats", help="store counts and the last run's metrics")
    s.add_argument("--user")
    s.set_defaults(func=cmd_stats)

    b = sub.add_parser("bench", help="benchmarks against baselines (see README)")
    bsub = b.add_subparsers(dest="bench", required=True)
    for name in ("locomo", "longmemeval"):
        s = bsub.add_parser(name)
        s.add_argument("data")
        s.add_argument("--out", required=True)
        s.add_argument("--limit", type=int, default=None, help="only the first N conversations/questions")
        s.add_argument("--systems", default=None, help="comma-separated subset of systems")
        s.add_argument("--store", choices=("chroma", "memory"), default="chroma",
                       help="chatrecall's store: embedded Chroma in a temp dir (default) or in-memory")
        s.add_argument("--embedder", choices=("minilm", "hash"), default="minilm",
                       help="bundled MiniLM (default) or the hash fake (smoke runs only)")
        if name == "locomo":
            s.add_argument("--no-tokens", action="store_true", help="skip the injected-tokens study")
    s = bsub.add_parser("gating")
    s.add_argument("data")
    s.add_argument("--text-field", required=True)
    s.add_argument("--label-field", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--limit", type=int, default=None)
    s.add_argument("--embedder", choices=("minilm", "hash", "none"), default="minilm",
                   help="embedder of the embedding-similarity baseline (none: skip it)")
    s = bsub.add_parser("speed")
    s.add_argument("--out", required=True)
    s.add_argument("--sizes", default="1000,10000,100000")
    s.add_argument("--queries", type=int, default=50)
    s.add_argument("--store", choices=("chroma", "memory"), default="chroma")
    s.add_argument("--data-dir", default=None, help="shared data directory (default ../shared/data)")
    b.set_defaults(func=cmd_bench)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ChatRecallError as exc:
        console.print(f"[red]error:[/] {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
