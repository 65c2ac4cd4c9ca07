"""Shared fixtures: engines closed at teardown, the real embedding model and real Chroma.

* ``clock``: a :class:`~chatrecall.testing.ManualClock` at its fixed start;
* ``closing``: ``closing(obj)`` returns ``obj`` and closes it at teardown,
  newest first, also when the test failed (no leaked thread pools or clients);
* ``make_engine``: ``make_engine(**kwargs)`` is :func:`~chatrecall.testing.fake_engine`,
  closed at teardown; ``engine`` is one such engine on ``clock``;
* ``chroma_server``, ``chroma_server_factory``, ``embedded_store``, ``st_embedder``:
  the real thing;
* ``prepared_home``: a new ``CHATRECALL_HOME`` in which ``chatrecall prepare``
  ran once (the ONNX export of the bundled model, ~15 s); ``copy_export(home)``
  gives another new home a copy of that export.

Heavy imports (chromadb, sentence-transformers) happen inside the fixtures so
that collecting the fast unit tests stays fast.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

from chatrecall import ChatRecall
from chatrecall.testing import ManualClock, fake_engine

# Nothing in the test suite may reach the Hugging Face hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SERVER_START_TIMEOUT_S = 60.0


class _Closeable(Protocol):
    def close(self) -> None: ...


_C = TypeVar("_C", bound=_Closeable)


@pytest.fixture
def clock() -> ManualClock:
    """A clock at ``ManualClock.START`` that moves only when the test moves it."""
    return ManualClock()


@pytest.fixture
def closing() -> Iterator[Callable[[_C], _C]]:
    """``closing(obj)``: ``obj``, closed at teardown (newest first), also when the test fails.

    Every ``close()`` runs even if an earlier one raises (the first error is
    reported), so an engine's thread pool and a store's client never outlive
    the test that opened them.
    """
    with ExitStack() as stack:

        def register(obj: _C) -> _C:
            stack.callback(obj.close)
            return obj

        yield register


@pytest.fixture
def make_engine(closing: Callable[[ChatRecall], ChatRecall]) -> Callable[..., ChatRecall]:
    """``make_engine(**kwargs)``: :func:`~chatrecall.testing.fake_engine`, closed at teardown."""

    def make(**kwargs: Any) -> ChatRecall:
        return closing(fake_engine(**kwargs))

    return make


@pytest.fixture
def engine(make_engine: Callable[..., ChatRecall], clock: ManualClock) -> ChatRecall:
    """A fake engine (in-memory store, hash embedder) on ``clock``, closed at teardown."""
    return make_engine(clock=clock)


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ChromaServer:
    """A real ``chroma run`` subprocess that tests can stop, kill and restart.

    The data directory and port survive :meth:`restart`, so a restarted
    server serves the same data at the same URL.
    """

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path = Path(path)
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.path.parent / f"{self.path.name}-chroma-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ChromaServer:
        """Start the server and wait until its heartbeat answers."""
        if self.alive():
            return self
        exe = shutil.which("chroma")
        if exe is None:
            pytest.skip("the `chroma` executable (chromadb CLI) is not on PATH")
        self.path.mkdir(parents=True, exist_ok=True)
        # Log to a file, not a pipe: nobody reads a pipe, and a full one would block the server.
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [exe, "run", "--path", str(self.path), "--port", str(self.port), "--host", "127.0.0.1"],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
            )
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chroma server exited with {self.proc.returncode}: {self.log_tail()}")
            if self.heartbeat():
                return self
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"chroma server at {self.url} not up after {SERVER_START_TIMEOUT_S}s: {self.log_tail()}")

    def heartbeat(self) -> bool:
        """True when the server answers its heartbeat endpoint."""
        from chatrecall.adapters.chroma import _heartbeat

        return _heartbeat(self.url)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """Graceful stop (SIGTERM), then SIGKILL if it does not exit."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
        self.proc = None

    def kill(self) -> None:
        """Crash-like stop (SIGKILL), as in a server dying mid-conversation."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10.0)
        self.proc = None

    def freeze(self, timeout: float = 5.0) -> None:
        """SIGSTOP (alive but unresponsive, like a stuck server), returning once every thread is stopped: the
        signal is delivered asynchronously, and on a loaded machine a request sent at once could still be
        answered (a full-suite run saw a count succeed right after the signal)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)
        tasks = Path(f"/proc/{self.proc.pid}/task")
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                states = [(t / "stat").read_text().rsplit(")", 1)[1].split()[0] for t in tasks.iterdir()]
            except OSError:  # a thread ended while we read: look again
                continue
            if states and all(st in "Tt" for st in states):
                return
            time.sleep(0.01)

    def thaw(self) -> None:
        """SIGCONT: the frozen server answers again."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def restart(self, *, hard: bool = False) -> ChromaServer:
        """Stop (or kill when ``hard``) and start again on the same path and port."""
        if hard:
            self.kill()
        else:
            self.stop()
        return self.start()

    def log_tail(self, n: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return "<no log>"


class ChromaServerFactory:
    """Starts servers on demand; every server is stopped at teardown."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.servers: list[ChromaServer] = []

    def __call__(self, path: Path | None = None, port: int | None = None, *, start: bool = True) -> ChromaServer:
        server = ChromaServer(path or self.root / f"server{len(self.servers)}", port)
        self.servers.append(server)
        return server.start() if start else server

    def close(self) -> None:
        for server in self.servers:
            server.stop()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a real Chroma server shared by the whole session.

    Tests isolate themselves with a unique ``namespace``; never kill this one
    (use ``chroma_server_factory`` for that).
    """
    server = ChromaServer(tmp_path_factory.mktemp("chroma-server") / "data")
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def chroma_server_factory(tmp_path: Path) -> Iterator[ChromaServerFactory]:
    """Start private servers that a test may stop, kill and restart."""
    factory = ChromaServerFactory(tmp_path)
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture(scope="session")
def st_embedder() -> Any:
    """The real SentenceTransformerEmbedder (bundled all-MiniLM-L6-v2), loaded once."""
    pytest.importorskip("sentence_transformers")
    from chatrecall.adapters.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
def embedded_store(tmp_path: Path) -> Iterator[Any]:
    """A ChromaStore on a fresh embedded PersistentClient."""
    pytest.importorskip("chromadb")
    from chatrecall.adapters.chroma import ChromaStore

    store = ChromaStore(path=tmp_path / "chroma")
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def real_engine(embedded_store: Any, st_embedder: Any) -> Iterator[ChatRecall]:
    """A new user's engine on the real parts: the bundled model and a fresh embedded Chroma, closed at teardown."""
    engine = ChatRecall(store=embedded_store, embedder=st_embedder)
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture
def count_calls(monkeypatch: pytest.MonkeyPatch) -> Callable[[Any, str], dict[str, int]]:
    """Wrap ``obj.name`` so its calls are counted: ``calls = count_calls(store, "query"); calls["n"]``."""

    def wrap(obj: Any, name: str) -> dict[str, int]:
        calls = {"n": 0}
        real = getattr(obj, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            calls["n"] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(obj, name, counted)
        return calls

    return wrap


@dataclass(frozen=True)
class PreparedHome:
    """A ``CHATRECALL_HOME`` that was new when ``chatrecall prepare`` first ran in it (see ``prepared_home``)."""

    home: Path
    #: the first ``chatrecall prepare`` in the new home: the one that exported
    first: subprocess.CompletedProcess[str]
    #: the exported graphs and their mtimes, taken right after that first run
    graphs: list[Path]
    stamps: list[int]

    def copy_export(self, home: Path, *, link: bool = True) -> Path:
        """Give the new ``home`` (created if missing) a copy of the export, and nothing else: no store.

        ``link``: hard links (each home has its own folder and lock file; chatrecall writes a graph to a
        temporary file and renames it, so it never changes a linked file in place); False for a test that
        overwrites graphs in place. A plain copy where hard links are not possible.
        """

        def link_or_copy(src: str, dst: str) -> None:
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)

        home.mkdir(parents=True, exist_ok=True)
        onnx = self.home / "onnx"
        if onnx.is_dir():
            shutil.copytree(onnx, home / "onnx", copy_function=link_or_copy if link else shutil.copy2,
                            ignore=shutil.ignore_patterns(".export.lock", "*.tmp"))
        return home


@pytest.fixture(scope="session")
def prepared_home(tmp_path_factory: pytest.TempPathFactory) -> PreparedHome:
    """``chatrecall prepare`` once, in a new ``CHATRECALL_HOME``, as a deploy step on a new machine does.

    The export of the bundled model takes ~15 s; it is made once per session instead of once per test:
    test_cli's prepare test asserts on this first run (it exported, and a second prepare and the demo reuse
    it in this home), and the README blocks and test_onnx_backend's shared home start from copies of its
    ``onnx`` folder. Nothing but test_cli writes into this home.
    """
    pytest.importorskip("sentence_transformers")
    home = tmp_path_factory.mktemp("prepared-home")
    env = os.environ | {"CHATRECALL_HOME": str(home), "COLUMNS": "200", "HF_HUB_OFFLINE": "1",
                        "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    first = subprocess.run([sys.executable, "-m", "chatrecall", "prepare"], capture_output=True, text=True,
                           env=env, timeout=600)
    graphs = sorted((home / "onnx").rglob("*.onnx"))
    return PreparedHome(home, first, graphs, [g.stat().st_mtime_ns for g in graphs])
