"""Layering: adapters and the MCP server use only ``chatrecall.core``'s public surface.

Core's private modules (``chatrecall.core._engine``, ``._validate``, ...) may be
reorganised at will; anything an adapter needs is exported from
``chatrecall.core`` (and pinned in tests/test_public_api.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import chatrecall

ROOT = Path(chatrecall.__file__).parent
MODULES = sorted((ROOT / "adapters").glob("*.py")) + [ROOT / "mcp_server.py"]


def private_core_imports(source: str, package: str) -> list[str]:
    """``target (line n)`` for each import of a private ``chatrecall.core._*`` module in ``source``.

    ``package`` is the dotted package the source lives in, to resolve relative imports.
    """
    pkg = package.split(".")
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = pkg[: len(pkg) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            # ``from chatrecall.core import _engine`` imports a private module too.
            targets = [module] + [f"{module}.{a.name}" for a in node.names]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            if parts[:2] == ["chatrecall", "core"] and len(parts) > 2 and parts[2].startswith("_"):
                found.append(f"{target} (line {node.lineno})")
    return found


def test_modules_are_found() -> None:
    names = {p.name for p in MODULES}
    assert {"chroma.py", "langchain.py", "langgraph.py", "llamaindex.py", "mcp_server.py"} <= names, names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_core_imports(path: Path) -> None:
    package = ".".join(["chatrecall", *path.relative_to(ROOT).parent.parts])
    bad = private_core_imports(path.read_text(encoding="utf-8"), package)
    assert not bad, f"{path.relative_to(ROOT)} imports private core modules: {bad}; import from chatrecall.core"


@pytest.mark.parametrize("source", [
    "from chatrecall.core._engine import ChatRecall",
    "import chatrecall.core._errors",
    "from chatrecall.core import _validate",
    "from ..core._types import Record",
    "def f():\n    from chatrecall.core._entities import RegexEntityExtractor",
])
def test_checker_catches_private_imports(source: str) -> None:
    assert private_core_imports(source, "chatrecall.adapters")


@pytest.mark.parametrize("source", [
    "from chatrecall.core import ChatRecall, check_id",
    "from ..core import ConfigError",
    "from ._guard import require",
    "from chatrecall._home import data_dir",
])
def test_checker_allows_the_public_surface(source: str) -> None:
    assert not private_core_imports(source, "chatrecall.adapters")
