"""Every code block of README.md (and docs/*.md) runs as written.

- ```python blocks: each runs in a fresh interpreter, in a temp directory, with
  its own new ``CHATRECALL_HOME`` (no store: ``chatrecall.connect()`` creates
  its embedded Chroma there, as on a new machine), on the real embedded Chroma
  and the bundled model. The one thing a block's home starts with is the ONNX
  export of the bundled model, made once per session by ``chatrecall prepare``
  in a new home (conftest's ``prepared_home``) and hard-linked into each block's
  home, as after a deploy step that ran ``prepare``: without it the first
  ``add`` of every block exported the model again (~15 s of a ~18 s block).
  The export on a new machine stays covered by
  tests/test_cli.py::test_prepare_exports_once_then_the_demo_runs_on_embedded_default
  (that first ``prepare`` exported; a second one and the demo reuse it) and
  tests/test_onnx_backend.py (processes exporting at once into a new home,
  corrupted graphs exported again); the session's ``prepare`` must print no
  model-loading progress bars either, as no block may.
- ```json / ```jsonl blocks: parsed and validated as turns, like ``chatrecall ingest``.
- ```bash blocks: every ``chatrecall ...`` line must parse with the real
  argument parser (and name files that exist); the cheap ones (stats, pins
  listing, --help, --version) are run, in order, in one temp home.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PreparedHome

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)


def blocks(lang: str) -> list[tuple[str, str]]:
    """(id, code) of every fenced block of ``lang``; the id is file:line."""
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            if m.group(1) == lang:
                line = text.count("\n", 0, m.start()) + 1
                out.append((f"{doc.name}:{line}", m.group(2)))
    return out


def _env(home: Path) -> dict[str, str]:
    return os.environ | {"CHATRECALL_HOME": str(home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                         "ANONYMIZED_TELEMETRY": "False", "COLUMNS": "160", "PYTHONPATH": str(ROOT)}


def test_readme_has_the_blocks_we_run() -> None:
    assert len(blocks("python")) >= 4
    assert blocks("jsonl") and blocks("bash")


@pytest.fixture(scope="module")
def prepared(prepared_home: PreparedHome) -> PreparedHome:
    """The session's ``chatrecall prepare`` (conftest), checked as a deploy step of the README would be."""
    out = prepared_home.first
    assert out.returncode == 0, f"chatrecall prepare failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
    assert "Loading weights" not in out.stderr, "no model-loading progress bars while exporting"
    return prepared_home


@pytest.mark.model
@pytest.mark.parametrize(("where", "code"), blocks("python"), ids=[w for w, _ in blocks("python")])
def test_python_block_runs(where: str, code: str, tmp_path: Path, prepared: PreparedHome) -> None:
    for mod in ("chromadb", "sentence_transformers"):
        pytest.importorskip(mod)
    for mod in sorted(set(re.findall(r"^(?:from|import) (\w+)", code, re.M))):
        if mod != "chatrecall" and mod not in sys.stdlib_module_names:
            pytest.importorskip(mod)
    script = tmp_path / "block.py"
    script.write_text(code, encoding="utf-8")
    work = tmp_path / "cwd"
    work.mkdir()
    home = prepared.copy_export(tmp_path / "home")  # the export (hard links) and no store
    out = subprocess.run([sys.executable, str(script)], cwd=work, env=_env(home),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{where} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
    assert "Loading weights" not in out.stderr, "no model-loading progress bars"


@pytest.mark.parametrize(("where", "code"), blocks("jsonl") + blocks("json"),
                         ids=[w for w, _ in blocks("jsonl") + blocks("json")])
def test_turn_format_blocks_are_valid_turns(where: str, code: str, tmp_path: Path) -> None:
    from chatrecall.cli import _check_turns, _read_turns

    suffix = ".jsonl" if code.lstrip().startswith("{") and "\n{" in code else ".json"
    f = tmp_path / f"turns{suffix}"
    f.write_text(code, encoding="utf-8")
    turns = _check_turns(f, _read_turns(f), "u1", "s1")
    assert turns, where


def _cli_lines() -> list[tuple[str, list[str]]]:
    out = []
    for where, code in blocks("bash"):
        for line in code.splitlines():
            argv = shlex.split(line, comments=True)
            if argv and argv[0] == "chatrecall":
                out.append((where, argv[1:]))
    return out


def test_cli_lines_parse_and_name_existing_files() -> None:
    from chatrecall.cli import build_parser

    lines = _cli_lines()
    assert len(lines) >= 6
    for where, argv in lines:
        if argv in (["--help"], ["--version"]) or argv[-1:] == ["--help"]:
            continue
        try:
            args = build_parser().parse_args(argv)
        except SystemExit:  # pragma: no cover - the message is on stderr
            pytest.fail(f"{where}: `chatrecall {shlex.join(argv)}` does not parse")
        if args.command == "ingest":
            assert (ROOT / args.file).exists(), f"{where}: {args.file} does not exist"


_CHEAP = ("stats", "pins")


@pytest.mark.model
def test_cheap_cli_lines_run(tmp_path: Path) -> None:
    """stats, pins listing, --help, --version: run as written, quickly (no model)."""
    pytest.importorskip("chromadb")
    ran = 0
    for where, argv in _cli_lines():
        cheap = argv[:1] in (["--help"], ["--version"]) or (
            argv[:1] and argv[0] in _CHEAP and "--add" not in argv)
        if not cheap:
            continue
        out = subprocess.run([sys.executable, "-m", "chatrecall", *argv], cwd=ROOT, env=_env(tmp_path),
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, f"{where}: chatrecall {shlex.join(argv)}\n{out.stdout}\n{out.stderr}"
        assert "Traceback" not in out.stderr
        ran += 1
    assert ran >= 3
