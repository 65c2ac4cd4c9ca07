"""Every Python block of docs/agents.md runs as written (offline: fakes and the hash embedder)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.base")
pytest.importorskip("mcp.server.mcpserver")

DOC = Path(__file__).resolve().parents[1] / "docs" / "agents.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


@pytest.mark.parametrize("n", range(len(BLOCKS)))
def test_agents_doc_block_runs(n: int, tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.run([sys.executable, "-c", BLOCKS[n]], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Postgres" in proc.stdout
