"""Command line: chatrecall demo | prepare | ingest | ask | pins | forget | stats | mcp | bench."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ._version import __version__
from .adapters._guard import MissingExtraError
from .core import (
    ChatRecall,
    ChatRecallError,
    NotFoundError,
    RetrievalResult,
    StoreError,
    StoreUnavailableError,
    Strategy,
    Turn,
    closest_name,
)
from .core._config import StoreLimits
from .core._validate import check_turn

console = Console()
err_console = Console(stderr=True)

_DESCRIPTION = """\
chatrecall: the memory layer between a chatbot's user message and its LLM.

Stores conversation turns in Chroma (embedded by default, no server needed) and
shows, per message, whether memory is searched, what would be injected and why.
Commands that only read the store (stats, pins) never load the embedding model."""

_EPILOG = """\
examples:
  chatrecall demo                                   sample conversation, decisions, scores
  chatrecall prepare                                export the model once (deploy / Docker build step)
  chatrecall ingest turns.jsonl --user u1           store turns from a JSON / JSONL file
  chatrecall ask "what about that function?" --user u1
  chatrecall pins --user u1 --add "We use Postgres"
  chatrecall forget --user u1 --yes                 delete u1's memories and pins (--session S: one session's)
  chatrecall stats                                  every namespace in the store

Global options (--path, --url, --namespace) may go before or after the command.
Run "chatrecall COMMAND --help" for the options of one command."""

_INGEST_EPILOG = """\
file formats (fields per turn: text (or content), role, session_id, user_id, timestamp, metadata):
  JSONL   one turn per line:  {"role": "user", "text": "We use Postgres.", "session_id": "s1"}
  JSON    a list of turns, or {"turns": [...]}
user_id / session_id default to --user / --session; role defaults to "user";
timestamp is epoch seconds or ISO 8601 ("2025-01-31T09:00:00Z"); metadata is a flat object.
In a file with timestamps, a turn without one takes the previous dated turn's time plus one
second (before the first dated turn: its time minus one second); a file without any is
stored at ingest time."""


# ---------------------------------------------------------------- argparse plumbing

class _Help(argparse.RawDescriptionHelpFormatter):
    """Keeps our line breaks; appends "(default: X)" where a default is worth showing."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (not action.option_strings or "default" in text.lower()
                or action.default in (None, False, argparse.SUPPRESS)):
            return text
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose subparsers (added anywhere) share our help formatter, and whose usage errors name an
    option it does not know, with the closest one it takes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)
        self._argv: list[str] = []

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        self._argv = list(sys.argv[1:] if args is None else args)  # for error(): the words this parser was given
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> Any:  # argparse's own: prints usage and the message, exits 2
        """An unknown option is named first: ``ask hi --usr u`` said only "the following arguments are required:
        --user" (nu47 A4)."""
        super().error(_unknown_option(self, self._argv) or message)


def _unknown_option(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str | None:
    """"unknown option --usr: did you mean --user?" for the first option in ``argv`` that ``parser`` (or the
    subcommand ``argv`` names) does not take; None when there is none."""
    known = set(parser._option_string_actions)
    for word in argv:
        if word == "--":
            break
        sub = next((a.choices[word] for a in parser._actions
                    if isinstance(a, argparse._SubParsersAction) and word in a.choices), None)
        if sub is not None:  # the options after a command are the command's (global ones included)
            parser = sub
            known |= set(sub._option_string_actions)
            continue
        if not word.startswith("-") or word == "-" or " " in word or re.match(r"-\.?\d", word):
            continue  # a positional, a message, a negative number
        name = word.split("=", 1)[0]
        if name in known or (name.startswith("--") and any(k.startswith(name) for k in known)):
            continue  # known, or argparse's unambiguous abbreviation
        offered = sorted(k for k in parser._option_string_actions if k.startswith("--"))
        hint = closest_name(name.lstrip("-"), [k[2:] for k in offered], cutoff=0.6)  # "--" alike in every name
        if hint:
            return f"unknown option {name}: did you mean --{hint}?"
        return f"unknown option {name}; {parser.prog} takes {', '.join(offered)}"
    return None


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _moment(text: str) -> float:
    """``--at``: an ISO date / date-time (UTC unless it names a zone) or Unix seconds."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither an ISO date-time (2026-03-07T08:30) nor Unix "
                                         "seconds") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()


def _nonempty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def _global_options() -> list[tuple[str, dict[str, Any]]]:
    from .adapters.chroma import default_path  # cheap: chromadb itself is imported on first use

    return [
        ("--path", {"metavar": "DIR", "help": f"embedded Chroma directory (default: {default_path()}; "
                                               "$CHATRECALL_HOME/chroma when CHATRECALL_HOME is set)"}),
        ("--url", {"metavar": "URL", "help": "Chroma server (http://host:8000) instead of the embedded store"}),
        ("--namespace", {"metavar": "NAME", "default": "chatrecall",
                         "help": "collection prefix, to keep apps apart (default: chatrecall; "
                                 "the demo uses chatrecall_demo)"}),
    ]


def _add_global_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """Top level: with defaults. Subcommands: the same flags, set only when given (so they may follow the command)."""
    for flag, spec in _global_options():
        if flag in parser._option_string_actions:
            continue
        kw = dict(spec)
        if not top:
            kw["default"] = argparse.SUPPRESS
        parser.add_argument(flag, **kw)


#: Help of options that several (bench) commands define without one.
_FALLBACK_HELP = {
    "data": "input data file",
    "out": "output JSON file (a markdown table is written beside it)",
    "limit": "only the first N conversations / questions",
    "systems": "comma-separated subset of the systems to run",
    "store": "chatrecall's store: embedded Chroma in a temp dir, or in-memory",
    "embedder": "bundled MiniLM, or the hash fake (smoke runs only)",
    "sizes": "comma-separated store sizes (memories)",
    "queries": "questions timed per size",
    "text_field": "field holding the message text",
    "label_field": "field holding the true/false label",
}


def _finish(parser: argparse.ArgumentParser, *, top: bool = True) -> None:
    """Fill in what subparsers added anywhere lack: global options, descriptions, help texts."""
    for action in parser._actions:
        if action.help is None and action.dest in _FALLBACK_HELP:
            action.help = _FALLBACK_HELP[action.dest]
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sp in action.choices.items():
                if sp.description is None:
                    sp.description = helps.get(name)
                if top:
                    _add_global_options(sp, top=False)
                _finish(sp, top=False)


# ---------------------------------------------------------------- helpers

def _engine(args: argparse.Namespace) -> ChatRecall:
    from ._connect import connect

    at = getattr(args, "at", None)
    extra: dict[str, Any] = {} if at is None else {"clock": lambda: at}
    with console.status("opening the store…"):
        # one message at most per run: compiling every regex of the gate up front would cost more than it saves
        try:
            return connect(path=args.path, url=args.url, namespace=args.namespace, warm=False, **extra)
        except StoreUnavailableError:  # connect()'s fix names a Python argument (lazy=True): name the CLI's
            raise StoreUnavailableError(_no_server(args.url)) from None


def _no_server(url: str | None) -> str:
    return (f"no Chroma server answers at --url {url!r}. Start one (chroma run --path DIR --port 8000) and pass its "
            "URL, or leave --url out to use the embedded store (--path)")


def _model_status(cr: ChatRecall) -> contextlib.AbstractContextManager[Any]:
    """A spinner while the embedding model loads (first embedding of the process)."""
    if getattr(cr.embedder, "loaded", True):
        return contextlib.nullcontext()
    return console.status("loading the embedding model…")


def _load_sample() -> dict[str, Any]:
    data = resources.files("chatrecall").joinpath("data/sample_conversation.json").read_text(encoding="utf-8")
    return json.loads(data)  # type: ignore[no-any-return]


def _reason(r: Any) -> str:
    """``name:'matched words' +weight`` (never the regex)."""
    return f"{getattr(r, 'name', None) or r.category}:{r.match!r} {r.weight:+.2f}"


def show_result(res: RetrievalResult, *, title: str | None = None) -> None:
    """Render one retrieval decision as rich tables."""
    head = Table.grid(padding=(0, 1))
    head.add_row("[bold]message[/]", Text(res.message))
    head.add_row("[bold]gate[/]", f"{res.gate.route.value} (confidence {res.gate.confidence:.2f})")
    head.add_row("[bold]route taken[/]", res.route.value)
    if res.strategy:
        qtype = res.query_type.value if res.query_type else "-"
        head.add_row("[bold]strategy[/]", f"{res.strategy.value} (query type {qtype})")
    head.add_row("[bold]reasons[/]", Text(", ".join(_reason(r) for r in res.gate.reasons) or "no pattern fired"))
    for n in res.notes:
        head.add_row("[bold]note[/]", Text(n))
    head.add_row("[bold]tokens[/]", f"{res.tokens_used} used, {res.tokens_left} left; "
                 + ", ".join(f"{k} {v:.1f} ms" for k, v in res.timings_ms.items()))
    console.print(Panel(head, title=title or "retrieve", expand=False))
    if res.items:
        t = Table(title="selected", show_lines=False)
        for col in ("source", "tier", "score", "components", "why", "text"):
            t.add_column(col, overflow="fold")
        for it in res.items:
            comps = " ".join(f"{k[:3]}={v:.2f}" for k, v in it.components.items())
            t.add_row(it.source, it.tier, f"{it.score:.3f}", comps, Text(it.why), Text(it.text[:90]))
        console.print(t)
    if res.context:
        console.print(Panel(Text(res.context), title="context block", expand=False))


def _metrics_dir(args: argparse.Namespace) -> Path:
    from .adapters.chroma import default_path

    return Path(args.path).expanduser() if args.path else default_path().parent


def _metrics_path(args: argparse.Namespace, namespace: str | None = None) -> Path:
    return _metrics_dir(args) / f"{namespace or args.namespace}-metrics.json"


def _save_metrics(args: argparse.Namespace, cr: ChatRecall, *, user: str,
                  stats: Mapping[str, Any] | None = None) -> None:
    """Save the run's metrics (``stats``: a snapshot already taken, else ``cr.stats()``) beside the embedded store, one
    file per namespace (the last run's), with the command and the user it ran for: ``stats`` says whose run they
    are."""
    if args.url:
        return
    path = _metrics_path(args)
    path.parent.mkdir(parents=True, exist_ok=True)
    snap = dict(cr.stats() if stats is None else stats)
    snap["run"] = {"command": args.command, "user": user, "at": time.time()}
    path.write_text(json.dumps(snap, indent=1), encoding="utf-8")


# ---------------------------------------------------------------- demo

def cmd_demo(args: argparse.Namespace) -> int:
    sample = _load_sample()
    args.namespace = args.namespace if args.namespace != "chatrecall" else "chatrecall_demo"
    cr = _engine(args)
    user = sample["user_id"]
    with contextlib.suppress(NotFoundError):
        cr.forget(user)  # start from the same state on every run
    with _model_status(cr):
        cr.add_many([Turn(user_id=user, **t) for t in sample["turns"]])
    cr.add_documents(sample["documents"], user_id=user)
    for p in sample["pins"]:
        cr.pin(p, user_id=user)
    console.print(f"[green]loaded[/] {len(sample['turns'])} turns, {len(sample['documents'])} documents, "
                  f"{len(sample['pins'])} pin(s) for user {user!r} in namespace {args.namespace!r}")
    for msg in sample["messages"]:
        show_result(cr.retrieve(msg, user_id=user, session_id="demo"))
    _save_metrics(args, cr, user=user)
    cr.close()
    console.print(f"see the stored data with: chatrecall stats --namespace {args.namespace} --user {user}",
                  highlight=False, soft_wrap=True)
    return 0


# ---------------------------------------------------------------- prepare

def cmd_prepare(args: argparse.Namespace) -> int:
    """Export the embedding model to ONNX (once per $CHATRECALL_HOME) and load it, and build the gate."""
    from .adapters.sentence_transformers import SentenceTransformerEmbedder
    from .core import Gate

    embedder = SentenceTransformerEmbedder()
    t = time.perf_counter()
    with console.status("exporting / loading the embedding model (the first time: 10–40 s)…"):
        embedder.warm()
    took = time.perf_counter() - t
    files = embedder.model_files
    size = sum(f.stat().st_size for f in files if f.exists()) / 1e6
    where = ", ".join(str(f) for f in files) if files else "PyTorch (nothing exported)"
    console.print(f"[green]embedding model ready[/] in {took:.1f} s: backend {embedder.backend}, {where}"
                  + (f" ({size:.0f} MB)" if files else ""), highlight=False, soft_wrap=True)
    t = time.perf_counter()
    n = Gate().warm()
    console.print(f"[green]gate ready[/] in {time.perf_counter() - t:.2f} s ({n} regexes compiled)", highlight=False)
    return 0


# ---------------------------------------------------------------- ingest

_WS = re.compile(r"\s*")


def _parse_json_turns(path: Path, text: str) -> list[tuple[int, Any]]:
    """(line, turn) pairs of a JSON list of turns or ``{"turns": [...]}``."""
    data = json.loads(text)  # JSONDecodeError is reported by the caller with line:column
    if isinstance(data, dict):
        if "turns" not in data:
            keys = ", ".join(repr(k) for k in list(data)[:5])
            raise ChatRecallError(f"{path}: expected a list of turns or {{\"turns\": [...]}}, got an object with "
                                  f"keys {keys}")
        items = data["turns"]
        m = re.search(r'"turns"\s*:\s*\[', text)
        start = m.end() if m else -1
    else:
        items = data
        start = text.index("[") + 1 if isinstance(data, list) else -1
    if not isinstance(items, list):
        raise ChatRecallError(f"{path}: expected a list of turns or {{\"turns\": [...]}}, got {type(items).__name__}")
    lines = _element_lines(text, start, len(items))
    return list(zip(lines, items, strict=True))


def _element_lines(text: str, start: int, n: int) -> list[int]:
    """Line number of each element of the JSON array whose items begin at ``start`` (best effort)."""
    if start < 0:
        return [1] * n
    dec = json.JSONDecoder()
    lines: list[int] = []
    pos, line, counted = start, 1, 0
    try:
        for _ in range(n):
            pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
            line += text.count("\n", counted, pos)
            counted = pos
            lines.append(line)
            _, pos = dec.raw_decode(text, pos)
            pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
            if text.startswith(",", pos):
                pos += 1
    except (ValueError, AttributeError):
        return [1] * n
    return lines


def _parse_jsonl_turns(path: Path, text: str) -> list[tuple[int, Any]]:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append((n, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise ChatRecallError(f"{path}:{n}:{exc.colno}: invalid JSON ({exc.msg}); a .jsonl file holds "
                                      "one turn object per line") from None
    return out


def _read_turns(path: Path) -> list[tuple[int, Any]]:
    """(line, raw turn) pairs of a JSON or JSONL file; format by suffix, else detected."""
    if not path.exists():
        raise ChatRecallError(f"file not found: {path}")
    if path.is_dir():
        raise ChatRecallError(f"{path} is a directory; give a JSON or JSONL file of turns")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ChatRecallError(f"{path}: not UTF-8 text (byte {exc.start}); expected JSON or JSONL turns") from None
    except OSError as exc:
        raise ChatRecallError(f"{path}: cannot read ({exc.strerror or exc})") from None
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _parse_jsonl_turns(path, text)
    try:
        return _parse_json_turns(path, text)
    except json.JSONDecodeError as exc:
        if suffix != ".json":
            with contextlib.suppress(ChatRecallError):
                return _parse_jsonl_turns(path, text)
        raise ChatRecallError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}). chatrecall ingest reads a JSON list of "
            'turns, {"turns": [...]}, or JSONL (one {"text": ..., "role": ...} object per line); '
            "see chatrecall ingest --help"
        ) from None


def _check_turns(path: Path, rows: list[tuple[int, Any]], user: str, session: str) -> list[Turn]:
    """Validate every turn before anything is stored; errors name file:line."""
    limits = StoreLimits()
    turns = []
    for line, raw in rows:
        where = f"{path}:{line}"
        if not isinstance(raw, dict):
            raise ChatRecallError(f"{where}: expected a turn object like {{\"role\": \"user\", \"text\": \"...\"}}, "
                                  f"got {type(raw).__name__} {json.dumps(raw)[:60]}")
        raw = dict(raw)
        raw.setdefault("user_id", user)
        raw.setdefault("session_id", session)
        try:
            turns.append(check_turn(raw, limits))
        except ChatRecallError as exc:
            raise ChatRecallError(f"{where}: {exc}") from None
    return _date_undated(turns)


def _date_undated(turns: list[Turn]) -> list[Turn]:
    """In a file whose other turns are dated, date each undated turn from its neighbours in the file: the previous
    dated turn's time plus one second, or, before the first dated turn, that turn's time minus one second. Stored
    at ingest time instead, the assistant's reply to a turn of last March became the newest memory (nu47 A2). A
    file with no timestamps at all is left as it is (each turn dated when stored)."""
    dated = [t.timestamp for t in turns if t.timestamp is not None]
    if not dated or len(dated) == len(turns):
        return turns
    out = []
    previous: float | None = None
    for t in turns:
        if t.timestamp is not None:
            previous = t.timestamp
            out.append(t)
        else:
            out.append(dataclasses.replace(t, timestamp=dated[0] - 1.0 if previous is None else previous + 1.0))
    return out


def cmd_ingest(args: argparse.Namespace) -> int:
    from rich.progress import Progress

    path = Path(args.file).expanduser()
    turns = _check_turns(path, _read_turns(path), args.user, args.session)
    if not turns:
        raise ChatRecallError(f"{path}: no turns found")
    cr = _engine(args)
    stored = 0
    with _model_status(cr):
        cr.embedder.embed_query("warm-up")  # load the model before the progress bar starts
    with Progress(console=console) as prog:
        task = prog.add_task(f"ingesting {path.name}", total=len(turns))
        for i in range(0, len(turns), args.batch):
            batch = turns[i : i + args.batch]
            stored += len(cr.add_many(batch))
            prog.update(task, advance=len(batch))
    console.print(f"[green]ingested[/] {stored} turns from {escape(str(path))} into namespace {args.namespace!r}")
    return 0


# ---------------------------------------------------------------- ask

def cmd_ask(args: argparse.Namespace) -> int:
    cr = _engine(args)
    # A new process builds the gate's regexes on its first message (0.1-1 s); built here first, the timings
    # shown are the retrieve's own, as in a long-running app (the gate's part is then tens of microseconds).
    cr.decide(args.message)
    with _model_status(cr):
        # --at: as of that moment; what was stored or pinned after it is left out, as it was not there then
        res = cr.retrieve(args.message, user_id=args.user, session_id=args.session, strategy=args.strategy,
                          as_of=args.at)
    if args.json:
        print(json.dumps(_result_json(res), indent=2, ensure_ascii=False))
    else:
        show_result(res)
    _save_metrics(args, cr, user=args.user)
    return 0


def _result_json(res: RetrievalResult) -> dict[str, Any]:
    return {
        "route": res.route.value,
        "gate": {"route": res.gate.route.value, "confidence": res.gate.confidence,
                 "reasons": [{"name": getattr(r, "name", None) or r.category, "category": r.category,
                              "match": r.match, "weight": r.weight} for r in res.gate.reasons]},
        "strategy": res.strategy.value if res.strategy else None,
        "items": [{"id": i.id, "source": i.source, "score": i.score, "components": dict(i.components),
                   "why": i.why, "text": i.text} for i in res.items],
        "pins": [p.text for p in res.pins],
        "tokens_used": res.tokens_used,
        "notes": list(res.notes),
        "timings_ms": dict(res.timings_ms),
        "context": res.context,
    }


# ---------------------------------------------------------------- pins

def _find_pin(cr: ChatRecall, user: str, given: str, namespace: str = "chatrecall") -> str:
    """The id of the user's pin ``given`` names: the full id or a unique prefix (with or without ``pin-``)."""
    ids = [p.id for p in cr.pins(user)]
    if given in ids:
        return given
    hits = [i for i in ids if i.startswith(given) or i.removeprefix("pin-").startswith(given)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise ChatRecallError(f"user {user!r} has no pin {given!r}; list them with: chatrecall pins --user {user}"
                              + (f" --namespace {namespace}" if namespace != "chatrecall" else ""))
    raise ChatRecallError(f"{given!r} matches {len(hits)} pins of user {user!r} ({', '.join(hits)}); "
                          "give more of the id")


def cmd_pins(args: argparse.Namespace) -> int:
    cr = _engine(args)
    if args.add is not None:
        with _model_status(cr):
            p = cr.pin(args.add, user_id=args.user, session_id=args.session)
        console.print(f"[green]pinned[/] {p.id}", highlight=False, soft_wrap=True)
    if args.remove is not None:
        pid = _find_pin(cr, args.user, args.remove, args.namespace)
        cr.unpin(pid, user_id=args.user)
        console.print(f"[yellow]unpinned[/] {pid}", highlight=False, soft_wrap=True)
    pins = cr.pins(args.user, args.session)
    if not pins:
        console.print(f"user {args.user!r} has no pins in namespace {args.namespace!r}", highlight=False)
    elif console.width < 100:  # narrow terminal: whole ids on their own lines, text below
        console.print(f"[bold]pins of {escape(args.user)}[/]", highlight=False)
        for p in pins:
            console.print(f"{p.id}  session {p.session_id or '*'}, {p.tokens} tokens", highlight=False,
                          soft_wrap=True)
            console.print(Text("    " + p.text))
    else:
        t = Table(title=f"pins of {args.user}")
        t.add_column("id", no_wrap=True, min_width=36)
        t.add_column("session", no_wrap=True)
        t.add_column("tokens", justify="right")
        t.add_column("text", overflow="fold")
        for p in pins:
            t.add_row(p.id, p.session_id or "*", str(p.tokens), Text(p.text))
        console.print(t)
    return 0


# ---------------------------------------------------------------- forget

def cmd_forget(args: argparse.Namespace) -> int:
    """Delete a user's memories and pins (and private documents), or one session's; only with --yes."""
    cr = _engine(args)
    where = f"user {args.user!r}" + (f", session {args.session!r}" if args.session else "") \
        + f" in namespace {args.namespace!r}"
    if not args.yes:
        memories = cr.count(args.user, args.session)
        pins = [p for p in cr.pins(args.user, args.session) if args.session is None or p.session_id == args.session]
        if not memories and not pins:
            raise NotFoundError(f"nothing to forget: {where} has no memories or pins" + (
                "" if args.session else " (--yes would still delete the user's private documents, if any)"))
        what = f"{memories} memories and {len(pins)} pins" + ("" if args.session else " (and private documents)")
        forget = ["chatrecall", "forget", "--user", args.user, *(["--session", args.session] if args.session else []),
                  *(["--namespace", args.namespace] if args.namespace != "chatrecall" else []), "--yes"]
        raise ChatRecallError(f"not deleted: forget needs --yes to delete the {what} of {where}; to delete them: "
                              + " ".join(forget))
    try:
        report = cr.forget(args.user, args.session)
    except NotFoundError:
        raise NotFoundError(f"nothing stored for {where} (user ids are exact, and each namespace is a store of its "
                            "own: --namespace NAME)") from None
    console.print(f"[yellow]forgot[/] {report.memories} memories and {report.pins} pins of {escape(where)}",
                  highlight=False, soft_wrap=True)
    return 0


# ---------------------------------------------------------------- stats

_COLLECTIONS = ("memories", "pins", "corpus")
#: Seconds between two saves of an MCP server's metrics while they change (:class:`_MetricsSaver`).
_MCP_METRICS_EVERY_S = 10.0


def _namespaces(cr: ChatRecall, current: str) -> dict[str, dict[str, int]]:
    """Record counts per namespace and collection, for every namespace found in the store."""
    from .adapters.chroma import ChromaStore

    found: dict[str, dict[str, int]] = {}
    store = cr.store
    get_client = getattr(store, "_get_client", None)
    names: list[str] = []
    if isinstance(store, ChromaStore) and get_client is not None:
        for c in get_client().list_collections():
            names.append(c if isinstance(c, str) else c.name)
    for name in names:
        m = re.fullmatch(r"(.+)_(memories|pins|corpus)", name)
        if m:
            found.setdefault(m.group(1), {})
    found.setdefault(current, {})
    for ns in sorted(found):
        other = store if ns == current else ChromaStore(client=get_client(), namespace=ns)  # type: ignore[misc]
        found[ns] = {col: other.count(col) for col in _COLLECTIONS}
    return found


def cmd_stats(args: argparse.Namespace) -> int:
    cr = _engine(args)
    counts = Table(title=f"store {getattr(cr.store, 'url', None) or getattr(cr.store, 'path', '')}")
    counts.add_column("namespace")
    for col in _COLLECTIONS:
        counts.add_column(col, justify="right")
    found = _namespaces(cr, args.namespace)
    for ns, n in found.items():
        label = f"{ns} (current)" if ns == args.namespace and len(found) > 1 else ns
        counts.add_row(Text(label), *(str(n[c]) for c in _COLLECTIONS))
    console.print(counts)
    if len(found) > 1:
        console.print("use --namespace NAME for another namespace's users and metrics", highlight=False)
    if args.user:
        console.print(f"user {args.user!r} in {args.namespace!r}: {cr.count(args.user)} memories, "
                      f"{len(cr.pins(args.user))} pins", highlight=False)
    path = _metrics_path(args)
    if args.url:
        # metrics are saved beside an embedded store only: a file here would be another store's
        console.print("metrics: kept per process (see cr.stats()); the CLI saves none for a server store",
                      highlight=False)
    elif path.exists():
        snap = json.loads(path.read_text(encoding="utf-8"))
        run = snap.get("run") or {}
        whose = run.get("user")
        if whose is None:  # saved by a version that did not record it
            head = f"metrics of the last demo / ask run in namespace {args.namespace!r} (its user not recorded)"
        else:
            when = datetime.datetime.fromtimestamp(run.get("at", 0), datetime.timezone.utc).strftime(
                "%Y-%m-%d %H:%M UTC")
            head = (f"metrics of the last {run.get('command', 'ask')} run in namespace {args.namespace!r}, for user "
                    f"{whose!r} ({when})")
        if args.user and whose != args.user:
            # one file per namespace, of its last run: under another user's line it read as theirs (nu47 A5)
            head += (f", not {args.user!r}" if whose else f", maybe not {args.user!r}") + \
                ": the CLI keeps one run's metrics per namespace, not per user"
        console.print(head + ":", highlight=False, soft_wrap=True)
        t = Table()
        t.add_column("metric")
        t.add_column("value", justify="right")
        for k, v in sorted(snap["counters"].items()):
            t.add_row(k, str(v))
        for k, h in sorted(snap["histograms"].items()):
            t.add_row(k, f"p50 {h['p50']:.2f}  p95 {h['p95']:.2f}  (n={h['count']})")
        console.print(t)
    else:
        others = sorted(p.name.removesuffix("-metrics.json") for p in _metrics_dir(args).glob("*-metrics.json"))
        also = f" (saved for: {', '.join(others)})" if others else ""
        console.print(f"no metrics saved for namespace {args.namespace!r} yet; demo, ask and a running mcp server "
                      f"save them{also}", highlight=False)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from ._bench import run_bench

    try:
        return run_bench(args, console)
    except ImportError as exc:  # a harness or baseline library is missing: name the extra that installs it
        from ._bench._common import bench_dependency_message

        msg = bench_dependency_message(exc)
        if msg is None:
            raise
        err_console.print(f"[red]error:[/] {escape(msg)}", highlight=False, soft_wrap=True)
        return 2


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the memory over MCP (stdio, or streamable HTTP with --http); nothing is printed to stdout."""
    from .adapters.chroma import ChromaStore
    from .mcp_server import serve

    if args.embedder == "hash":
        from .core import HashEmbedder

        embedder: Any = HashEmbedder()
    else:
        from .adapters.sentence_transformers import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder()
    store = ChromaStore(path=args.path, url=args.url, namespace=args.namespace)
    if args.url is not None:
        # A server that does not answer now would serve every recall from an empty index while looking healthy
        # (helper-92): refuse to start, as connect() and `ask` do.
        try:
            store.ping()
        except StoreError:
            store.close()
            raise StoreUnavailableError(_no_server(args.url)) from None
    cr = ChatRecall(store=store, embedder=embedder)
    cr.warm(background=True)  # a long-lived server: the model and the gate are ready before the first call
    saver = _MetricsSaver(args, cr, user=args.user or "the auth file's token holders")
    try:
        serve(cr, user_id=args.user, auth_file=args.auth_file, http_port=args.http, host=args.host,
              session_id=args.session)
    finally:
        saver.stop()
        cr.close()
    return 0


class _MetricsSaver:
    """Saves a server's metrics where ``stats`` reads them, every ``_MCP_METRICS_EVERY_S`` while they change and once
    more when it stops: ``stats`` showed only the last CLI run, none of the server's recalls (nu49)."""

    def __init__(self, args: argparse.Namespace, cr: ChatRecall, *, user: str) -> None:
        self._args, self._cr, self._user = args, cr, user
        self._last: Any = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="chatrecall-mcp-metrics", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._done.wait(_MCP_METRICS_EVERY_S):
            self.save()

    def save(self) -> None:
        stats = self._cr.stats()
        counters = stats.get("counters")
        if counters == self._last:
            return
        with contextlib.suppress(OSError):  # a read-only directory must not stop the server
            _save_metrics(self._args, self._cr, user=self._user, stats=stats)
            self._last = counters

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=5)
        self.save()


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="chatrecall", description=_DESCRIPTION, epilog=_EPILOG)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_global_options(p, top=True)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("demo", help="load a sample conversation and show decisions").set_defaults(func=cmd_demo)
    sub.add_parser("prepare", help="export the embedding model to ONNX now (once; e.g. in a Docker build), then "
                                   "load it").set_defaults(func=cmd_prepare)

    s = sub.add_parser("ingest", help="store turns from a JSON / JSONL file", epilog=_INGEST_EPILOG)
    s.add_argument("file", help="JSON or JSONL file of turns (formats below)")
    s.add_argument("--user", default="default", help="user_id of turns that have none")
    s.add_argument("--session", default="default", help="session_id of turns that have none")
    s.add_argument("--batch", type=_positive_int, default=256, help="turns embedded and stored per batch")
    s.set_defaults(func=cmd_ingest)

    s = sub.add_parser("ask", help="show what chatrecall would inject for a message (stores nothing)")
    s.add_argument("message", help="the user's message")
    s.add_argument("--user", required=True, help="whose memory to search")
    s.add_argument("--session", help="current session (its recent turns form the recent window)")
    s.add_argument("--strategy", choices=[x.value for x in Strategy],
                   help="force a ranking strategy (default: picked per query by the classifier)")
    s.add_argument("--json", action="store_true", help="print the result as JSON")
    s.add_argument("--at", type=_moment, metavar="WHEN",
                   help="decide as of this moment (ISO date-time, UTC unless it names a zone, or Unix seconds): "
                        "turns stored and pins made after it are left out, and recency and 'last week' are read "
                        "from it, as with an app's fixed clock")
    s.set_defaults(func=cmd_ask)

    s = sub.add_parser("pins", help="list, add or remove pinned constraints")
    s.add_argument("--user", required=True, help="whose pins")
    s.add_argument("--session", help="pin only for this session (with --add); list global + this session's pins")
    s.add_argument("--add", metavar="TEXT", type=_nonempty, help="pin TEXT (a standing constraint)")
    s.add_argument("--remove", metavar="PIN_ID", type=_nonempty,
                   help="unpin by id, or by a unique prefix of the id as listed")
    s.set_defaults(func=cmd_pins)

    s = sub.add_parser("forget", help="delete a user's memories and pins, or one session's (needs --yes)")
    s.add_argument("--user", required=True, help="whose memories and pins (and, without --session, private "
                                                 "documents) to delete")
    s.add_argument("--session", help="delete only this session's memories and pins")
    s.add_argument("--yes", action="store_true",
                   help="confirm: without it nothing is deleted, and what would be is counted")
    s.set_defaults(func=cmd_forget)

    s = sub.add_parser("stats", help="record counts of every namespace, and the last run's metrics")
    s.add_argument("--user", help="also count this user's memories and pins")
    s.set_defaults(func=cmd_stats)

    s = sub.add_parser("mcp", help="MCP server: stdio for one --user, or streamable HTTP with --http PORT")
    s.add_argument("--user", help="bind the server to this user (required for stdio)")
    s.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on PORT instead of stdio")
    s.add_argument("--host", default="127.0.0.1", help="HTTP interface (default 127.0.0.1)")
    s.add_argument("--auth-file", help='JSON {"<token>": "<user_id>"}: bearer tokens mapped to users (HTTP)')
    s.add_argument("--session", default="mcp", help="session of turns stored without one (default mcp)")
    s.add_argument("--embedder", choices=("minilm", "hash"), default="minilm",
                   help="bundled MiniLM (default) or the hash fake (tests only)")
    s.set_defaults(func=cmd_mcp)

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
        s.add_argument("--embedder", choices=("minilm", "torch", "onnx", "onnx-int8", "onnx-int8-query", "hash"),
                       default="minilm",
                       help="bundled MiniLM on the default backend (minilm), on a chosen backend, "
                            "or the hash fake (smoke runs only)")
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
    s.add_argument("--server", default=None, help="server mode (a real `chroma run`): auto (default), on, off, or the "
                                                  "size to run it at (default 10000)")
    s.add_argument("--threads", type=int, default=None, help="threads of the throughput mode (default 8; 0: skip)")
    s.add_argument("--cold-start", default=None, help="sizes to time a fresh process's first retrieve at, with and "
                                                      "without snapshot (default: every size; none: skip)")
    s.add_argument("--embedder-backends", default=None, help="also time query embedding on these backends, e.g. "
                                                             "torch,onnx,onnx-int8,onnx-int8-query (torch is the baseline)")
    s = bsub.add_parser("replay", help="replay LoCoMo / LongMemEval turn by turn: recall and tokens per turn")
    s.add_argument("data", help="LoCoMo or LongMemEval file (format detected)")
    s.add_argument("--out", required=True)
    s.add_argument("--limit", type=int, default=None, help="only the first N conversations / LongMemEval records")
    s.add_argument("--max-questions", type=int, default=None, help="only the first N questions per conversation")
    s.add_argument("--systems", default=None,
                   help="subset of chatrecall,chatrecall_always,lastN+topk_chatrecall,lastN+topk_dense")
    s.add_argument("--store", choices=("chroma", "memory"), default="chroma")
    s.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    s.add_argument("--chitchat", type=int, default=None,
                   help="own messages replayed per conversation (default 30 LoCoMo, 4 LongMemEval)")
    s.add_argument("--feed-retrieve", choices=("sample", "all"), default="sample",
                   help="retrieve on every fed message (all) or on the --chitchat sample")
    s.add_argument("--ask-in", choices=("new", "last"), default="new",
                   help="ask each question in a new session (default) or in the last fed session")
    s.add_argument("--assistant-turns", action="store_true", help="LongMemEval: store assistant turns too")
    s.add_argument("--sentence-vectors", action=argparse.BooleanOptionalAction, default=None,
                   help="chatrecall with sentence vectors or without (default: RetrievalConfig's default, on)")
    b.set_defaults(func=cmd_bench)
    _finish(p)  # keep last: global options and help texts for every subcommand
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors: argparse already printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    try:
        return int(args.func(args))
    except (ChatRecallError, OSError, MissingExtraError) as exc:  # a missing extra: named, no traceback
        err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
