"""Crash safety of the embedded store: SIGKILL a writer at random points, reopen, check.

A child process (``_crash_child.py``) batch-ingests turns, pins, private
documents and session forgets into an embedded Chroma directory and appends
each acknowledged write to a file once the call has returned. The parent
kills it with SIGKILL after a random delay, reopens the directory in a new
``ChromaStore`` and checks (see ``_crash_child.check_consistency``):

* every acknowledged write is there (zero losses);
* no orphan rows: each row has its text, metadata and a unit embedding;
  ``count()`` equals what ``get()`` returns;
* the per-user index rebuilt from the store holds every stored record with
  its entities, and a vector query finds every stored record;
* the reopened store takes writes and serves retrieval.

Then the next child continues on the same directory, so later rounds check a
store that has survived every earlier kill. 10 kills by default; the
slow-marked variant (``CHATRECALL_STRESS=full``) does 60.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("chromadb")

import _crash_child as child  # noqa: E402  (tests/ is on sys.path under pytest)

from chatrecall import ChatRecall, Gate  # noqa: E402
from chatrecall.testing import HashEmbedder  # noqa: E402

FULL = os.environ.get("CHATRECALL_STRESS") == "full"
CHILD = Path(child.__file__).resolve()
REPO = CHILD.parents[1]
GATE = Gate()


def _engine(store: Any) -> ChatRecall:
    return ChatRecall(store=store, embedder=HashEmbedder(dim=child.DIM), gate=GATE)


def _wait_for(path: Path, token: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and token in path.read_text():
            return
        if proc.poll() is not None:
            raise AssertionError(f"crash child exited early with {proc.returncode}: {proc.stderr and proc.stderr.read()!r}")
        time.sleep(0.02)
    raise AssertionError(f"crash child did not write {token!r} within {timeout}s")


def _wait_for_acks(path: Path, n: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.read_text().count("\n") > n:  # + the READY line
            return
        if proc.poll() is not None:
            raise AssertionError(f"crash child exited early with {proc.returncode}: {proc.stderr and proc.stderr.read()!r}")
        time.sleep(0.01)
    raise AssertionError(f"crash child acknowledged fewer than {n} writes in {timeout}s")


def run_kills(tmp_path: Path, kills: int, seed: int) -> dict[str, int]:
    from chatrecall.adapters.chroma import ChromaStore

    rng = random.Random(seed)
    db = tmp_path / "db"
    acked = child.Acked()
    totals = {"kills": 0, "acked_writes": 0, "memories": 0, "pins": 0, "corpus": 0}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    for round_no in range(kills):
        ack = tmp_path / f"ack{round_no}.txt"
        proc = subprocess.Popen(
            [sys.executable, str(CHILD), str(db), str(ack), str(rng.randrange(1 << 30))],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
        )
        try:
            _wait_for(ack, "READY", proc)
            # Random kill point: after a random number of acknowledged writes (0 = during
            # start-up / the first batch), then a random fraction of the next batch.
            _wait_for_acks(ack, rng.choice((0, 1, 5, 20, 60, 150)), proc)
            time.sleep(rng.uniform(0.0, 0.3))
            assert proc.poll() is None, f"crash child died on its own: {proc.stderr and proc.stderr.read()!r}"
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            assert proc.returncode == -signal.SIGKILL
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stderr:
                proc.stderr.close()
        acked.replay(ack.read_text())
        store = ChromaStore(path=db)
        try:
            counts = child.check_consistency(store, acked, _engine)
        finally:
            store.close()
        totals["kills"] += 1
        totals.update(memories=counts["memories"], pins=counts["pins"], corpus=counts["corpus"])
    totals["acked_writes"] = acked.writes
    return totals


def test_sigkill_during_ingest_loses_no_acknowledged_write(tmp_path: Path) -> None:
    totals = run_kills(tmp_path, 10, seed=1234)
    print(f"\n[crash] {totals}")
    assert totals["kills"] == 10
    assert totals["acked_writes"] > 0 and totals["memories"] > 0


@pytest.mark.slow
@pytest.mark.skipif(not FULL, reason="long variant: set CHATRECALL_STRESS=full")
def test_sigkill_many_times(tmp_path: Path) -> None:
    totals = run_kills(tmp_path, 60, seed=int(time.time()))
    print(f"\n[crash/full] {totals}")
    assert totals["kills"] == 60
