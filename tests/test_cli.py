"""The command line on the real parts: demo, ingest, ask, pins, stats.

Commands that do not embed run on embedded Chroma with the hash embedder (or in a
fresh interpreter, to prove they never import the model stack); ``demo``, ``ask``
and ``ingest`` use the real model.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

from chatrecall import ChatRecall, __version__  # noqa: E402
from chatrecall import cli as cli_mod  # noqa: E402
from chatrecall.core import HashEmbedder, Strategy  # noqa: E402

Run = Callable[..., tuple[int, str, str]]


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"CHATRECALL_HOME": str(home), "COLUMNS": "200", "HF_HUB_OFFLINE": "1",
                        "ANONYMIZED_TELEMETRY": "False"}
    return subprocess.run([sys.executable, "-m", "chatrecall", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def _in_process(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], embedder: Any) -> Run:
    from chatrecall import _connect
    from chatrecall.adapters.chroma import ChromaStore

    def connect(*, path: Any = None, url: Any = None, namespace: str = "chatrecall", warm: bool = True,
                **kw: Any) -> ChatRecall:
        assert warm is False, "the CLI routes one message at most per run: no background warm-up"
        return ChatRecall(store=ChromaStore(path=path, url=url, namespace=namespace), embedder=embedder, **kw)

    monkeypatch.setattr(_connect, "connect", connect)
    monkeypatch.setattr(cli_mod.console, "width", 250)
    monkeypatch.setattr(cli_mod.err_console, "width", 250)

    def call(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = cli_mod.main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return call


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], st_embedder: Any) -> Run:
    """Run the CLI in-process on real Chroma, sharing the session's loaded model."""
    return _in_process(monkeypatch, capsys, st_embedder)


@pytest.fixture
def cli_hash(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    """The CLI in-process on real Chroma with the hash embedder (for commands that do not embed)."""
    return _in_process(monkeypatch, capsys, HashEmbedder(dim=384))


# ------------------------------------------------------------------ parser


def _all_parsers(p: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = [p]
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                out += _all_parsers(sp)
    return out


def test_every_option_has_help_and_choices_are_listed() -> None:
    parser = cli_mod.build_parser()
    for sp in _all_parsers(parser):
        for a in sp._actions:
            if isinstance(a, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                continue
            assert a.help, f"{sp.prog}: {a.option_strings or a.dest} has no help"
        assert sp.format_help()
    ask = next(sp for sp in _all_parsers(parser) if sp.prog.endswith(" ask"))
    text = ask.format_help()
    for s in Strategy:
        assert s.value in text
    top = parser.format_help()
    assert "``" not in top and "--version" in top and "before or after the command" in top


def test_path_help_shows_the_real_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CHATRECALL_HOME", str(tmp_path))
    flat = "".join(cli_mod.build_parser().format_help().split())  # help wraps long paths
    assert "".join(str(tmp_path / "chroma").split()) in flat


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_mod.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"chatrecall {__version__}"


@pytest.mark.parametrize("argv", [
    ["stats", "--namespace", "x", "--path", "/tmp/p"],
    ["--namespace", "x", "--path", "/tmp/p", "stats"],
    ["--path", "/tmp/p", "stats", "--namespace", "x"],
])
def test_global_options_before_or_after_the_command(argv: list[str]) -> None:
    args = cli_mod.build_parser().parse_args(argv)
    assert args.namespace == "x" and args.path == "/tmp/p" and args.url is None


def test_global_option_defaults() -> None:
    args = cli_mod.build_parser().parse_args(["pins", "--user", "u"])
    assert args.namespace == "chatrecall" and args.path is None and args.url is None


@pytest.mark.parametrize(("argv", "needle"), [
    (["ingest", "f.jsonl", "--batch", "0"], "--batch: must be at least 1"),
    (["ingest", "f.jsonl", "--batch", "x"], "not a whole number"),
    (["pins", "--user", "u", "--add", ""], "--add: must not be empty"),
    (["pins", "--user", "u", "--add", "   "], "--add: must not be empty"),
    (["ask", "hi", "--user", "u", "--strategy", "fast"], "invalid choice: 'fast'"),
])
def test_usage_errors_exit_2_without_traceback(argv: list[str], needle: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_mod.main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


# ------------------------------------------------------------------ turns files


def _ingest_error(cli_hash: Run, tmp_path: Path, name: str, content: str | bytes) -> str:
    f = tmp_path / name
    f.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    code, out, err = cli_hash("--path", str(tmp_path / "home"), "ingest", str(f))
    assert code == 2, (out, err)
    assert err.startswith("error: ") and "Traceback" not in err and err.count("\n") == 1, err
    return err


def test_bad_turns_files_name_file_and_line(cli_hash: Run, tmp_path: Path) -> None:
    err = _ingest_error(cli_hash, tmp_path, "notes.txt", "Some notes\nabout the project\n")
    assert "notes.txt:1:1: not valid JSON" in err and "JSONL" in err
    err = _ingest_error(cli_hash, tmp_path, "bad.jsonl", '{"text": "ok"}\n\n{"text": ""}\n')
    assert "bad.jsonl:3: text must not be empty" in err
    err = _ingest_error(cli_hash, tmp_path, "broken.jsonl", '{"text": "ok"}\n{"text": \n')
    assert "broken.jsonl:2:" in err and "invalid JSON" in err
    err = _ingest_error(cli_hash, tmp_path, "bad.json", '[\n  {"text": "a"},\n\n  {"content": "b", "role": 5}\n]')
    assert "bad.json:4: role must be a str" in err
    err = _ingest_error(cli_hash, tmp_path, "wrapped.json", '{"turns": [{"text": "a"},\n {"txt": "b"}]}')
    assert "wrapped.json:2: turn has unknown field(s) 'txt'" in err
    err = _ingest_error(cli_hash, tmp_path, "obj.json", '{"messages": []}')
    assert "obj.json: expected a list of turns" in err
    err = _ingest_error(cli_hash, tmp_path, "nums.json", "[1, 2]")
    assert "nums.json:1: expected a turn object" in err
    err = _ingest_error(cli_hash, tmp_path, "latin1.jsonl", b'{"text": "caf\xe9"}\n')
    assert "not UTF-8" in err
    err = _ingest_error(cli_hash, tmp_path, "ts.jsonl", '{"text": "a", "timestamp": "yesterday"}\n')
    assert "ts.jsonl:1: timestamp='yesterday'" in err and "ISO 8601" in err
    err = _ingest_error(cli_hash, tmp_path, "empty.jsonl", "\n")
    assert "no turns found" in err
    code, _, err = cli_hash("--path", str(tmp_path), "ingest", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "file not found" in err
    code, _, err = cli_hash("--path", str(tmp_path), "ingest", str(tmp_path))
    assert code == 2 and "is a directory" in err


def test_turns_file_formats() -> None:
    from chatrecall.cli import _check_turns, _parse_json_turns, _parse_jsonl_turns

    p = Path("t.json")
    rows = _parse_json_turns(p, '{"turns": [\n {"content": "a", "timestamp": "2025-01-06T09:00:00Z"},\n'
                                '\n {"text": "b", "session_id": "s9", "metadata": {"k": 1}}]}')
    assert [r[0] for r in rows] == [2, 4]
    turns = _check_turns(p, rows, "u1", "s1")
    assert [(t.text, t.user_id, t.session_id) for t in turns] == [("a", "u1", "s1"), ("b", "u1", "s9")]
    assert turns[0].timestamp == 1736154000.0
    assert [r[0] for r in _parse_jsonl_turns(Path("t.jsonl"), '{"text": "a"}\n\n{"text": "b"}\n')] == [1, 3]


# ------------------------------------------------------------------ commands that never load the model


def test_read_only_commands_never_import_the_model_stack(tmp_path: Path) -> None:
    from chatrecall.adapters.chroma import ChromaStore

    cr = ChatRecall(store=ChromaStore(path=tmp_path / "chroma"), embedder=HashEmbedder(dim=384))
    cr.add("We use Postgres.", user_id="u1", session_id="s1")
    pin = cr.pin("Answer in British English.", user_id="u1")
    cr.close()
    script = textwrap.dedent(f"""
        import sys
        from chatrecall.cli import main
        codes = [main(["stats", "--user", "u1"]), main(["pins", "--user", "u1"]),
                 main(["pins", "--user", "u1", "--remove", {pin.id[:12]!r}]), main(["--version"])]
        heavy = sorted(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules)
        print("RESULT", codes, heavy)
    """)
    env = os.environ | {"CHATRECALL_HOME": str(tmp_path), "COLUMNS": "200", "ANONYMIZED_TELEMETRY": "False"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "RESULT [0, 0, 0, 0] []" in out.stdout, out.stdout + out.stderr
    assert "unpinned " + pin.id in out.stdout and "1 memories" in out.stdout
    assert "Loading weights" not in out.stderr


def test_pins_by_full_id_or_prefix(cli_hash: Run, tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    ids = []
    for text in ("Never restart staging on Fridays.", "Answer in British English."):
        code, out, _ = cli_hash("--path", home, "pins", "--user", "u1", "--add", text)
        assert code == 0 and "pinned" in out
        ids.append(out.split("pinned")[1].split()[0])
    code, out, _ = cli_hash("pins", "--user", "u1", "--path", home)
    assert code == 0 and all(i in out for i in ids), "the table shows whole ids"
    code, _, err = cli_hash("--path", home, "pins", "--user", "u1", "--remove", "pin-")
    assert code == 2 and "matches 2 pins" in err
    code, _, err = cli_hash("--path", home, "pins", "--user", "u1", "--remove", "pin-zzz")
    assert code == 2 and "has no pin 'pin-zzz'" in err and "chatrecall pins --user u1" in err
    code, _, err = cli_hash("--path", home, "pins", "--user", "u2", "--remove", ids[0])
    assert code == 2 and "has no pin" in err, "another user's pin is not found"
    code, out, _ = cli_hash("--path", home, "pins", "--user", "u1", "--remove", ids[0][:10])
    assert code == 0 and f"unpinned {ids[0]}" in out
    code, out, _ = cli_hash("--path", home, "pins", "--user", "u1", "--remove", ids[1])
    assert code == 0 and f"unpinned {ids[1]}" in out and "British" not in out.split("unpinned")[1]


def test_stats_lists_every_namespace(cli_hash: Run, tmp_path: Path) -> None:
    from chatrecall.adapters.chroma import ChromaStore

    home = tmp_path / "home"
    for ns, n in (("chatrecall_demo", 3), ("support_bot", 1)):
        cr = ChatRecall(store=ChromaStore(path=home, namespace=ns), embedder=HashEmbedder(dim=384))
        cr.add_many([{"text": f"turn {i}", "user_id": "u1", "session_id": "s"} for i in range(n)])
        cr.close()
    code, out, _ = cli_hash("--path", str(home), "stats")
    assert code == 0
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") >= 4}
    assert "chatrecall_demo" in rows and " 3 " in rows["chatrecall_demo"]
    assert "support_bot" in rows and " 1 " in rows["support_bot"]
    assert "chatrecall (current)" in rows
    code, out, _ = cli_hash("stats", "--path", str(home), "--namespace", "support_bot", "--user", "u1")
    assert code == 0 and "support_bot (current)" in out and "1 memories" in out


# ------------------------------------------------------------------ the real model


@pytest.mark.model
def test_prepare_exports_once_then_the_demo_runs_on_embedded_default(prepared_home: Any) -> None:
    # a new CHATRECALL_HOME: prepare exports the model (a deploy step), a second prepare and the demo reuse it.
    # The first prepare ran in that new home in conftest's session fixture ``prepared_home`` (its graphs and
    # their mtimes taken right after it); the README blocks and test_onnx_backend use copies of its export.
    tmp_path = prepared_home.home
    ready = prepared_home.first
    assert ready.returncode == 0, ready.stderr
    assert "embedding model ready" in ready.stdout and "gate ready" in ready.stdout
    graphs = prepared_home.graphs
    assert graphs and all(str(g) in ready.stdout.replace("\n", "") for g in graphs), ready.stdout
    stamps = prepared_home.stamps
    again = run("prepare", home=tmp_path)
    assert again.returncode == 0 and sorted((tmp_path / "onnx").rglob("*.onnx")) == graphs
    assert [g.stat().st_mtime_ns for g in graphs] == stamps, "exported once"
    out = run("demo", home=tmp_path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for msg in ["How are you?", "Remember that cheese project?", "What does TriBridConfig do?",
                "That is cool", "what about that function?"]:
        assert msg in text
    assert re.search(r":'Remember' \+\d\.\d\d", text), "reasons name the pattern, the matched words and the weight"
    assert "\\b" not in text and "(?:" not in text, "no regex in the output"
    assert "context block" in text and "We use Postgres, not SQLite." in text
    assert "tri-bridge" in text
    assert "chatrecall stats --namespace chatrecall_demo" in text
    assert "Loading weights" not in out.stderr and "Traceback" not in out.stderr
    assert (tmp_path / "chroma").exists(), "the demo uses the embedded default under CHATRECALL_HOME"
    stats = run("stats", home=tmp_path)
    assert stats.returncode == 0 and "chatrecall_demo" in stats.stdout and "10" in stats.stdout
    assert "saved for: chatrecall_demo" in stats.stdout


@pytest.mark.model
def test_ingest_ask_pins_stats(tmp_path: Path, cli: Run) -> None:
    turns = tmp_path / "turns.jsonl"
    turns.write_text("\n".join(json.dumps(t) for t in [
        {"text": "Our staging cluster runs on Hetzner in Falkenstein.", "session_id": "s1"},
        {"text": "The nightly backup job is called pg_nightly_dump.", "session_id": "s1"},
        {"role": "assistant", "content": "Noted, pg_nightly_dump runs at 02:00 UTC.", "session_id": "s1"},
    ]))
    home = str(tmp_path / "home")
    code, out, _ = cli("ingest", str(turns), "--user", "u1", "--path", home, "--batch", "2")
    assert code == 0 and "ingested 3 turns" in out

    code, out, _ = cli("--path", home, "ask", "remember the pg_nightly_dump job?", "--user", "u1", "--json")
    res = json.loads(out[out.index("{"):])
    assert code == 0 and res["route"] == "memory"
    assert "pg_nightly_dump" in res["items"][0]["text"]
    reason = res["gate"]["reasons"][0]
    assert set(reason) == {"name", "category", "match", "weight"} and reason["match"]
    assert len(out) < 20_000 and "\\\\b" not in out, "no regex dumps"

    code, out, _ = cli("--path", home, "ask", "what about the staging cluster, remember?", "--user", "u1",
                       "--strategy", "keyword")
    assert code == 0 and "Hetzner" in out and "context block" in out and "keyword" in out

    code, out, _ = cli("--path", home, "pins", "--user", "u1", "--add", "Never restart staging on Fridays.")
    assert code == 0 and "pinned" in out and "Never restart staging on Fridays." in out
    pin_id = out.split("pinned")[1].split()[0]
    code, out, _ = cli("--path", home, "pins", "--user", "u1", "--remove", pin_id)
    assert code == 0 and "Never restart staging" not in out.split("unpinned")[1]

    code, out, _ = cli("--path", home, "stats", "--user", "u1")
    assert code == 0 and "3 memories" in out
    assert "routes.gate.memory" in out  # metrics saved by the last `ask`



@pytest.mark.server
def test_stats_of_a_server_store_shows_no_local_metrics(tmp_path: Path, cli_hash: Run, chroma_server: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # chat23: `stats --url` printed the metrics file of the last embedded `ask` as if it were the server's
    monkeypatch.setenv("CHATRECALL_HOME", str(tmp_path / "home"))
    code, _, _ = cli_hash("--path", str(tmp_path / "home" / "chroma"), "ask", "hello there", "--user", "u1")
    assert code == 0
    code, out, _ = cli_hash("--url", chroma_server, "--namespace", "stats_url_test", "stats")
    assert code == 0 and "routes.gate" not in out and "saves none for a server store" in out


def test_ask_times_the_gate_without_building_it(tmp_path: Path) -> None:
    # chat23 saw "gate 400-1044 ms" on every `ask`: a new process compiled the gate's regexes inside the timed
    # retrieve. A message that searches nothing loads no model, so this runs in a fresh process cheaply.
    out = run("ask", "thanks!", "--user", "u1", "--json", home=tmp_path)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout[out.stdout.index("{"):])
    assert res["route"] == "none" and res["timings_ms"]["gate"] < 20, res["timings_ms"]


def test_ask_at_a_moment_reads_time_from_it(tmp_path: Path, cli_hash: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    # helper-83 (stop 29) could not reproduce an app's decision made on a fixed clock: `ask` used the wall clock
    home = str(tmp_path / "chroma")
    assert cli_mod._moment("2026-03-07T08:30") == pytest.approx(1772872200.0)
    assert cli_mod._moment("1772872200") == 1772872200.0
    code, _, err = cli_hash("--path", home, "ask", "hi", "--user", "u1", "--at", "last tuesday")
    assert code == 2 and "'last tuesday' is neither an ISO date-time" in err
    seen: list[float] = []
    real = cli_mod._engine

    def spy(args: Any) -> Any:
        cr = real(args)
        seen.append(cr._clock())
        return cr

    monkeypatch.setattr(cli_mod, "_engine", spy)
    code, _, _ = cli_hash("--path", home, "ask", "thanks!", "--user", "u1", "--at", "2026-03-07T08:30:00+00:00")
    assert code == 0 and seen == [1772872200.0]


def test_a_dead_server_url_names_the_cli_fix(capsys: pytest.CaptureFixture[str]) -> None:
    """helper-92 (stop 32): the error for a wrong --url told a CLI user to "pass lazy=True", a Python argument."""
    from conftest import free_port

    url = f"http://127.0.0.1:{free_port()}"
    assert cli_mod.main(["--url", url, "ask", "hello", "--user", "u"]) == 2
    err = capsys.readouterr().err
    assert url in err and "--url" in err and "lazy=True" not in err and "Traceback" not in err


# ------------------------------------------------------------------ nu47: --at, undated turns, forget, options, stats

_INES = [  # nu47's scratch/ines_ok.jsonl, a year earlier (every pin a test makes is newer than all of it)
    {"session_id": "s1", "role": "user", "text": "Acme pays me €0.09 per word for shipping manuals.",
     "timestamp": "2025-03-02T09:00:00Z"},
    {"session_id": "s1", "role": "assistant", "content": "Noted: Acme, €0.09 per word."},
    {"session_id": "s2", "role": "user", "text": "Acme agreed to a new rate: €0.11 per word from April.",
     "timestamp": "2025-03-09T10:00:00Z"},
]


def _ines_file(tmp_path: Path) -> Path:
    f = tmp_path / "ines.jsonl"
    f.write_text("\n".join(json.dumps(t, ensure_ascii=False) for t in _INES), encoding="utf-8")
    return f


@pytest.mark.model
def test_ask_at_answers_as_of_that_moment(tmp_path: Path, cli: Run) -> None:
    # nu47 A1: `ask --at 2026-03-05T08:00` ranked first, and showed, the turn stored on 2026-03-09
    home = str(tmp_path / "home")
    code, _, err = cli("--path", home, "ingest", str(_ines_file(tmp_path)), "--user", "ines")
    assert code == 0, err
    code, out, _ = cli("--path", home, "pins", "--user", "ines", "--add", "Quote rates in euros.")
    assert code == 0
    code, out, _ = cli("--path", home, "ask", "what's my rate for Acme?", "--user", "ines", "--json",
                       "--at", "2025-03-05T08:00")
    res = json.loads(out[out.index("{"):])
    assert code == 0 and res["items"], out
    texts = [i["text"] for i in res["items"]]
    assert not any("new rate" in t for t in texts) and "new rate" not in res["context"], texts
    assert texts[0] == "Acme pays me €0.09 per word for shipping manuals."
    assert res["pins"] == [], "the pin was made after that moment"
    assert "now 2025-03-05 08:00" in res["context"]
    assert any("1 turn stored after it and 1 pin made after it left out" in n for n in res["notes"]), res["notes"]
    code, out, _ = cli("--path", home, "ask", "what's my rate for Acme?", "--user", "ines", "--json",
                       "--at", "2025-03-10T08:00")
    res = json.loads(out[out.index("{"):])
    assert code == 0 and res["items"][0]["text"].startswith("Acme agreed to a new rate")


def test_undated_turn_of_a_dated_file_takes_its_neighbours_time(tmp_path: Path, cli_hash: Run) -> None:
    # nu47 A2: the assistant's undated reply to a turn of March was stored at ingest time, the newest memory
    from chatrecall.adapters.chroma import ChromaStore
    from chatrecall.cli import _check_turns, _parse_jsonl_turns

    march_2 = 1740906000.0  # 2025-03-02T09:00:00Z
    rows = _parse_jsonl_turns(Path("t.jsonl"), "\n".join(json.dumps(t) for t in [
        {"text": "Hi, I'm Inês."}, {"text": "Hello!", "role": "assistant"}, *_INES]))
    turns = _check_turns(Path("t.jsonl"), rows, "u", "s1")
    assert [t.timestamp for t in turns] == [march_2 - 1, march_2 - 1, march_2, march_2 + 1, 1741514400.0]
    plain = _check_turns(Path("t.jsonl"), _parse_jsonl_turns(Path("t.jsonl"), '{"text": "a"}\n{"text": "b"}'),
                         "u", "s")
    assert [t.timestamp for t in plain] == [None, None], "a file with no timestamps is dated when stored"

    home = tmp_path / "home"
    code, _, err = cli_hash("--path", str(home), "ingest", str(_ines_file(tmp_path)), "--user", "ines")
    assert code == 0, err
    cr = ChatRecall(store=ChromaStore(path=home), embedder=HashEmbedder(dim=384))
    try:
        reply = [r for r in cr.history("ines", "s1") if r.role == "assistant"]
        assert [r.timestamp for r in reply] == [march_2 + 1]
    finally:
        cr.close()


def test_forget_needs_yes_and_deletes_a_session_or_a_user(tmp_path: Path, cli_hash: Run) -> None:
    # nu47 A4: the CLI had no forget: a user who ingested the wrong file had to write Python
    from chatrecall.adapters.chroma import ChromaStore

    home = tmp_path / "home"
    cr = ChatRecall(store=ChromaStore(path=home), embedder=HashEmbedder(dim=384))
    cr.add_many([{"text": f"turn {i}", "user_id": "u1", "session_id": s} for i, s in enumerate("aab")])
    cr.pin("Answer in British English.", user_id="u1")
    cr.add("someone else", user_id="u2", session_id="a")
    cr.close()
    code, _, err = cli_hash("--path", str(home), "forget", "--user", "u1")
    assert code == 2 and "not deleted" in err and "--yes" in err and "3 memories and 1 pins" in err, err
    code, _, err = cli_hash("--path", str(home), "forget", "--user", "u1", "--session", "a")
    assert code == 2 and "2 memories and 0 pins" in err and "--session a --yes" in err, err
    code, out, _ = cli_hash("--path", str(home), "stats", "--user", "u1")
    assert "3 memories, 1 pins" in out, "nothing deleted without --yes"
    code, out, _ = cli_hash("--path", str(home), "forget", "--user", "u1", "--session", "a", "--yes")
    assert code == 0 and "forgot 2 memories and 0 pins of user 'u1', session 'a'" in out
    code, out, _ = cli_hash("--path", str(home), "forget", "--user", "u1", "--yes")
    assert code == 0 and "forgot 1 memories and 1 pins of user 'u1'" in out
    code, _, err = cli_hash("--path", str(home), "forget", "--user", "u1", "--yes")
    assert code == 2 and "nothing stored for user 'u1'" in err and "--namespace" in err
    code, out, _ = cli_hash("--path", str(home), "stats", "--user", "u2")
    assert "1 memories" in out, "another user's memories stay"


@pytest.mark.parametrize(("argv", "needle"), [
    (["ask", "hi", "--usr", "u"], "unknown option --usr: did you mean --user?"),
    (["ask", "hi", "--user", "u", "--sesion", "s"], "unknown option --sesion: did you mean --session?"),
    (["stats", "--usr", "u"], "unknown option --usr: did you mean --user?"),
    (["pins", "--user=u", "--ad", "x", "--namespce", "n"], "unknown option --namespce: did you mean --namespace?"),
    (["forget", "--user", "u", "--yess"], "unknown option --yess: did you mean --yes?"),
    (["ask", "hi", "--user", "u", "--frobnicate"], "unknown option --frobnicate; chatrecall ask takes --at, "),
])
def test_an_unknown_option_is_named_with_the_closest_one(argv: list[str], needle: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # nu47 A4: `ask hi --usr u` said only "the following arguments are required: --user"
    assert cli_mod.main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err, err


def test_stats_says_whose_run_the_metrics_are(tmp_path: Path, cli_hash: Run) -> None:
    # nu47 A5: `stats --user nobody` showed the last `ask` run's metrics (another user's) right under nobody's line
    home = str(tmp_path / "home")
    code, _, _ = cli_hash("--path", home, "ask", "thanks!", "--user", "ines")
    assert code == 0
    code, out, _ = cli_hash("--path", home, "stats", "--user", "nobody")
    assert code == 0 and "user 'nobody' in 'chatrecall': 0 memories" in out
    assert "metrics of the last ask run in namespace 'chatrecall', for user 'ines'" in out
    assert "not 'nobody'" in out and "per namespace, not per user" in out
    code, out, _ = cli_hash("--path", home, "stats", "--user", "ines")
    assert code == 0 and "for user 'ines'" in out and "not 'ines'" not in out
