"""Chroma implementation of :class:`~chatrecall.core.MemoryStore`.

Works embedded (``chromadb.PersistentClient`` on a local directory) or against
a Chroma server (``chromadb.HttpClient``), in which case several processes can
share one store: the only thing cached in-process is the collection handle,
and a stale handle (collection dropped by someone else) is refreshed.

Mapping of a :class:`Record` to Chroma:

* ``id`` -> Chroma id, ``text`` -> document;
* ``user_id``, ``session_id``, ``role``, ``timestamp``, ``seq`` -> metadata keys
  of the same name;
* ``entities`` -> list-valued metadata ``entities`` (omitted when empty);
* user metadata ``{"topic": "x"}`` -> ``{"m.topic": "x"}``: the prefix keeps user
  keys from colliding with ours or being read as operators (``$or``).

Filters (:data:`Where`) address the same names: record fields by name, user
metadata by its own key (``{"topic": "x"}``), ``id`` restricts ids, and
``entities`` means *contains* (``{"entities": ("a", "b")}``: contains a or b).
"""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import re
import socket
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np

from chatrecall._home import data_dir
from chatrecall.core import (
    Batch,
    ChatRecallError,
    ConfigError,
    InvalidInputError,
    Record,
    Scalar,
    StoreError,
    StoreHit,
    StoreUnavailableError,
    Where,
)

from ._guard import require

__all__ = ["ChromaStore", "default_path"]

T = TypeVar("T")

#: Record fields stored as top-level Chroma metadata under their own name.
_FIELDS = ("user_id", "session_id", "role", "timestamp", "seq")
_ENTITIES = "entities"
_PREFIX = "m."
#: Page size of reads (ids per get, rows per offset page).
_PAGE = 5000
#: Page of an id-only read (a few MB at most): reading a 100K-memory user's ids in pages of 5000 took 2-6 s,
#: in one page 0.26 s (Chroma scans up to the offset on every page).
_ID_PAGE = 100_000
_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?$")
_SPACE = "cosine"


def default_path() -> Path:
    """Where the embedded store lives when nothing is configured.

    ``$CHATRECALL_HOME/chroma`` if set, else the platform's user data
    directory: ``~/.local/share/chatrecall/chroma`` (or ``$XDG_DATA_HOME``) on
    Linux, ``~/Library/Application Support/chatrecall/chroma`` on macOS,
    ``%LOCALAPPDATA%\\chatrecall\\chroma`` on Windows.
    """
    return data_dir("chroma")


def _check_store_dir(path: Path, *, given: bool) -> None:
    """Refuse a store path that is a file, or lies under one, before anything is opened or created.

    Raises:
        ConfigError: naming the path, the file in the way and where the path came from.
    """
    for blocker in (path, *path.parents):
        try:
            if not blocker.exists():
                continue
            if blocker.is_dir():
                return
        except OSError:  # not ours to judge (no permission to look): opening the store reports it
            return
        break
    else:
        return
    if given:
        origin, fix = f"path={str(path)!r}", "pass the path of a directory (created if missing)"
    else:
        home = os.environ.get("CHATRECALL_HOME")
        origin = (f"the default store {str(path)!r} (from CHATRECALL_HOME={home!r})" if home
                  else f"the default store {str(path)!r}")
        fix = "set CHATRECALL_HOME to a directory or pass connect(path=...) with one"
    raise ConfigError(f"{origin} is invalid: the embedded store must be a directory, and {str(blocker)!r} is a "
                      f"file; {fix}. Nothing was opened or changed")


@dataclass(frozen=True, slots=True)
class _Filter:
    """A :data:`Where` compiled for Chroma.

    Attributes:
        where: Chroma ``where`` document, or None for no metadata filter.
        ids: Id restriction (from ``ids=`` and/or a ``id`` clause), or None.
        empty: True when the filter can match nothing (empty tuple).
    """

    where: dict[str, Any] | None
    ids: tuple[str, ...] | None
    empty: bool


def _check_scalar(key: str, value: object) -> Scalar:
    if isinstance(value, (str, int, float, bool)):
        return value
    raise InvalidInputError(f"filter value {value!r} for {key!r} must be a str, int, float, bool or a tuple of them")


def _membership(field: str, values: Sequence[Scalar]) -> dict[str, Any]:
    """``field in values``; Chroma wants one type per ``$in`` so split by type."""
    groups: dict[str, list[Scalar]] = {}
    for v in dict.fromkeys(values):  # dedupe, keep order
        kind = "bool" if isinstance(v, bool) else "num" if isinstance(v, (int, float)) else "str"
        groups.setdefault(kind, []).append(v)
    if "num" in groups and any(isinstance(v, float) for v in groups["num"]):
        groups["num"] = [float(v) for v in groups["num"]]  # Chroma matches 5.0 against a stored 5
    clauses = [{field: {"$in": vals}} for vals in groups.values()]
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


def _compile(where: Where | None, ids: Sequence[str] | None) -> _Filter:
    """Turn a :data:`Where` (data, never a string) into a Chroma filter."""
    id_set: tuple[str, ...] | None = None
    if ids is not None:
        if isinstance(ids, str):
            raise InvalidInputError(f"ids={ids!r} must be a sequence of ids, not a string")
        id_set = tuple(dict.fromkeys(_check_id(i) for i in ids))
    clauses: list[dict[str, Any]] = []
    empty = False
    if where is not None and not isinstance(where, Mapping):
        raise InvalidInputError(f"where={where!r} must be a mapping of field to value or tuple of values")
    for key, want in (where or {}).items():
        if not isinstance(key, str):
            raise InvalidInputError(f"filter key {key!r} must be a string")
        if isinstance(want, tuple):
            values = tuple(_check_scalar(key, v) for v in want)
            if not values:
                empty = True
                continue
        else:
            values = (_check_scalar(key, want),)
        if key == "id":
            wanted = tuple(dict.fromkeys(str(v) for v in values))
            id_set = wanted if id_set is None else tuple(i for i in id_set if i in set(wanted))
            continue
        if key in ("text", "metadata"):
            raise InvalidInputError(f"cannot filter on {key!r}: filter on record fields or metadata keys")
        if key == _ENTITIES:
            ors = [{_ENTITIES: {"$contains": v}} for v in dict.fromkeys(values)]
            clauses.append(ors[0] if len(ors) == 1 else {"$or": ors})
            continue
        field = key if key in _FIELDS else _PREFIX + key
        if isinstance(want, tuple):
            clauses.append(_membership(field, values))
        else:
            clauses.append({field: {"$eq": values[0]}})
    if id_set is not None and not id_set:
        empty = True
    chroma_where = None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}
    return _Filter(chroma_where, id_set, empty)


def _check_id(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"record id {value!r} must be a non-empty string")
    return value


def _to_metadata(record: Record) -> dict[str, Any]:
    """Record -> Chroma metadata (see the module docstring for the layout)."""
    if not isinstance(record, Record):
        raise InvalidInputError(f"expected a Record, got {type(record).__name__}: {record!r}")
    _check_id(record.id)
    if not isinstance(record.text, str):
        raise InvalidInputError(f"record {record.id!r}: text {record.text!r} must be a string")
    meta: dict[str, Any] = {
        "user_id": record.user_id,
        "session_id": record.session_id,
        "role": record.role,
        "timestamp": float(record.timestamp),
        "seq": int(record.seq),
    }
    for name in ("user_id", "session_id", "role"):
        if not isinstance(meta[name], str):
            raise InvalidInputError(f"record {record.id!r}: {name}={meta[name]!r} must be a string")
    if record.entities:
        bad = [e for e in record.entities if not isinstance(e, str)]
        if bad:
            raise InvalidInputError(f"record {record.id!r}: entities must be strings, got {bad[0]!r}")
        meta[_ENTITIES] = list(record.entities)
    for key, value in record.metadata.items():
        if not isinstance(key, str):
            raise InvalidInputError(f"record {record.id!r}: metadata key {key!r} must be a string")
        if not isinstance(value, (str, int, float, bool)):
            raise InvalidInputError(
                f"record {record.id!r}: metadata[{key!r}]={value!r} must be a str, int, float or bool"
            )
        meta[_PREFIX + key] = value
    return meta


def _to_record(rid: str, document: str | None, meta: Mapping[str, Any] | None) -> Record:
    """Chroma row -> Record; tolerant of rows written by older versions or by hand."""
    meta = meta or {}
    user = {k[len(_PREFIX) :]: v for k, v in meta.items() if k.startswith(_PREFIX)}
    return Record(
        id=rid,
        text=document or "",
        user_id=str(meta.get("user_id", "")),
        session_id=str(meta.get("session_id", "")),
        role=str(meta.get("role", "")),
        timestamp=float(meta.get("timestamp", 0.0)),
        seq=int(meta.get("seq", 0)),
        entities=tuple(meta.get(_ENTITIES) or ()),
        metadata=MappingProxyType(user),
    )


#: Messages of transient Chroma errors: a read racing a concurrent write of the same
#: collection ("Error creating hnsw segment reader: Nothing found on disk", chroma-core/chroma#4212).
_RACE_MARKERS = ("Nothing found on disk", "Error creating hnsw segment reader")
_RACE_RETRIES = 4


def _is_race(exc: BaseException) -> bool:
    text = str(exc)
    return any(m in text for m in _RACE_MARKERS)


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


#: Most records one group commit writes. An in-process embedded write holds the GIL for its whole call,
#: a fixed ~10-40 ms (2-core VM; hundreds under load) plus ~1.5 ms a record: larger groups would stall
#: other threads and an event loop longer.
_GROUP_RECORDS = 32


@dataclass
class _Pending:
    """One upsert waiting for the group commit."""

    collection: str
    ids: list[str]
    embeddings: np.ndarray
    documents: list[str]
    metadatas: list[dict[str, Any]]
    done: Future[None]


class _GroupCommit:
    """Writes of an embedded store, one thread, concurrent upserts merged into one Chroma call.

    Each Chroma write has a fixed cost of 10 ms or more (and, in-process, holds
    the GIL throughout). Upserts that arrive while a write runs are merged (up
    to :attr:`max_records` records) into the next one, so N concurrent writers
    cost about one write. An upsert that would take a group past the cap starts
    the next group, so writes reach Chroma in the order they were queued. A
    caller returns only when its own records are committed, so an acknowledged
    write is as durable as before; a failed group fails every caller in it.

    Smaller groups do not shorten the stalls of an in-process store: a write of
    one record already holds the GIL for 10-40 ms on a 2-core VM (see
    ``benchmarks/results/async.json``, ``--cap``); ``server_process=True`` does.
    """

    def __init__(self, write: Callable[[str, list[str], np.ndarray, list[str], list[dict[str, Any]]], None],
                 max_records: int = _GROUP_RECORDS) -> None:
        self._write = write
        #: Most records merged into one write (1: no merging, each upsert is its own Chroma call).
        self.max_records = max_records
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, collection: str, ids: list[str], embeddings: np.ndarray, documents: list[str],
               metadatas: list[dict[str, Any]]) -> None:
        """Queue one upsert and wait until it is committed (or raise its error)."""
        done: Future[None] = Future()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="chatrecall-chroma-writer", daemon=True)
                self._thread.start()
            self._queue.put(_Pending(collection, ids, embeddings, documents, metadatas, done))
        done.result()

    def close(self) -> None:
        """Finish the queued writes and stop the writer thread."""
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is not None:
                self._queue.put(None)
        if thread is not None:
            thread.join()

    def _loop(self) -> None:
        carry: _Pending | None = None
        while True:
            first = carry if carry is not None else self._queue.get()
            if first is None:
                return
            group, carry, stop = self._gather(first)
            self._commit(group)
            if stop:
                return

    def _gather(self, first: _Pending) -> tuple[list[_Pending], _Pending | None, bool]:
        """``first`` and the queued upserts that fit with it in :attr:`max_records`.

        Returns the group, the next upsert if it did not fit (it starts the next
        group, so the order of writes is kept), and whether close() was asked.
        """
        group, n = [first], len(first.ids)
        while n < self.max_records:
            try:
                nxt = self._queue.get_nowait()
            except queue.Empty:
                break
            if nxt is None:
                return group, None, True
            if n + len(nxt.ids) > self.max_records:
                return group, nxt, False
            group.append(nxt)
            n += len(nxt.ids)
        return group, None, False

    def _commit(self, group: list[_Pending]) -> None:
        by_col: dict[str, list[_Pending]] = {}
        for p in group:
            by_col.setdefault(p.collection, []).append(p)
        for collection, items in by_col.items():
            try:
                if len(items) == 1:
                    one = items[0]
                    self._write(collection, one.ids, one.embeddings, one.documents, one.metadatas)
                else:
                    self._write(collection, *self._merged(items))
            except BaseException as exc:  # noqa: BLE001 - handed to every caller of the group
                for p in items:
                    p.done.set_exception(exc)
            else:
                for p in items:
                    p.done.set_result(None)

    @staticmethod
    def _merged(items: list[_Pending]) -> tuple[list[str], np.ndarray, list[str], list[dict[str, Any]]]:
        """The items as one batch; an id written twice keeps the later write (as sequential upserts would)."""
        rows: dict[str, tuple[np.ndarray, str, dict[str, Any]]] = {}
        for p in items:
            for i, rid in enumerate(p.ids):
                rows.pop(rid, None)
                rows[rid] = (p.embeddings[i], p.documents[i], p.metadatas[i])
        ids = list(rows)
        return (ids, np.stack([r[0] for r in rows.values()]), [r[1] for r in rows.values()],
                [r[2] for r in rows.values()])


@functools.lru_cache(maxsize=1)
def _deadline_types() -> tuple[type, type]:
    """httpx transport and stream wrappers that bound a whole request by one deadline."""
    import httpx

    class DeadlineStream(httpx.SyncByteStream):
        def __init__(self, inner: Any, deadline: float, timeout_s: float, request: Any) -> None:
            self._inner, self._deadline, self._timeout_s, self._request = inner, deadline, timeout_s, request

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self._inner:
                if time.monotonic() > self._deadline:
                    raise httpx.ReadTimeout(
                        f"response not complete within timeout_s={self._timeout_s}", request=self._request
                    )
                yield chunk

        def close(self) -> None:
            self._inner.close()

    class DeadlineTransport(httpx.BaseTransport):
        def __init__(self, inner: Any, timeout_s: float) -> None:
            self._inner, self._timeout_s = inner, timeout_s

        def handle_request(self, request: Any) -> Any:
            deadline = time.monotonic() + self._timeout_s
            response = self._inner.handle_request(request)
            return httpx.Response(
                status_code=response.status_code,
                headers=response.headers,
                stream=DeadlineStream(response.stream, deadline, self._timeout_s, request),
                extensions=response.extensions,
                request=request,
            )

        def close(self) -> None:
            self._inner.close()

    return DeadlineTransport, DeadlineStream


def _deadline_transport(inner: Any, timeout_s: float) -> Any:
    """Wrap an httpx transport so that no request outlives ``timeout_s`` (plus one socket read)."""
    transport_type, _ = _deadline_types()
    return transport_type(inner, timeout_s)


def _heartbeat(url: str, timeout_s: float = 1.0) -> bool:
    """True when the Chroma server at ``url`` answers its heartbeat endpoint (never raises)."""
    import httpx

    try:
        return httpx.get(f"{url}/api/v2/heartbeat", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


#: The child process of ``ChromaStore(path=..., server_process=True)``: Chroma's own server (what ``chroma run``
#: starts) on the store's directory, plus a thread that ends the child when its stdin closes, i.e. when the
#: parent is gone, however it died (no orphaned server holding the store's files).
_CHILD_CODE = """
import os, sys, threading
def _watch():
    sys.stdin.buffer.read()
    os._exit(0)
threading.Thread(target=_watch, daemon=True).start()
import chromadb_rust_bindings
chromadb_rust_bindings.cli(["chroma", "run", "--path", sys.argv[1], "--port", sys.argv[2], "--host", "127.0.0.1"])
"""
_CHILD_START_S = 60.0
_CHILD_STOP_S = 10.0


class _ChildServer:
    """A private Chroma server in a child process, serving one store directory on 127.0.0.1.

    Embedded Chroma holds the GIL for the whole of a write (and of a collection
    creation); in a child process it holds the child's GIL, and this process
    only waits on a socket (which releases it). Started by :meth:`start`, ended
    by :meth:`stop` (SIGTERM, then SIGKILL), and by itself if this process dies.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.port = 0
        self.proc: Any = None
        self._log: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> _ChildServer:
        import subprocess
        import tempfile

        self.path.mkdir(parents=True, exist_ok=True)
        last = ""
        for _ in range(3):  # a port found free may be taken before the child binds it: try another
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                self.port = int(s.getsockname()[1])
            # The server's output, read only to explain a failed start; RUST_LOG=warn, since at info it
            # logs ~5 KB per request (an unbounded file for a long-lived process).
            self._log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the child, closed by stop()
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _CHILD_CODE, str(self.path), str(self.port)],
                stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT,
                env={**os.environ, "ANONYMIZED_TELEMETRY": "False", "RUST_LOG": "warn"},
                start_new_session=True,  # a Ctrl-C meant for this process must not kill the store under it
            )
            deadline = time.monotonic() + _CHILD_START_S
            while time.monotonic() < deadline and self.proc.poll() is None:
                if _heartbeat(self.url):
                    return self
                time.sleep(0.05)
            last = self._log_tail()
            self.stop()
        raise StoreError(f"chroma server process for {self.path} did not start: {last}")

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-2000:].strip()

    def stop(self) -> None:
        """Stop the server (SIGTERM, SIGKILL after a grace period); idempotent."""
        import subprocess

        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(_CHILD_STOP_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc.stdin is not None:
                proc.stdin.close()
        log, self._log = self._log, None
        if log is not None:
            log.close()


class ChromaStore:
    """A :class:`MemoryStore` backed by Chroma (embedded or client/server).

    Example:
        >>> store = ChromaStore(path="/tmp/chatrecall-demo")  # doctest: +SKIP
        >>> store = ChromaStore(url="http://127.0.0.1:8000", namespace="prod")  # doctest: +SKIP
        >>> store.count("memories")  # doctest: +SKIP
        0

    Args:
        path: Directory of an embedded persistent store.
        url: URL of a Chroma server, e.g. ``http://127.0.0.1:8000``.
        client: A ready ``chromadb`` client, used as is (not closed by us).
        namespace: Prefix of the Chroma collection names
            (``{namespace}_{collection}``), so several apps can share a server.
        timeout_s: Deadline of each server request, from connecting to the
            last byte of the response (a server that trickles bytes cannot
            stretch a call past it by more than one socket read).
        retries: Extra attempts of a write (upsert/delete) that failed because
            the server was unreachable, with exponential backoff.
        snapshots: Keep on-disk snapshots of each user's derived index so a new
            process starts warm (see :mod:`chatrecall.core._snapshot`): under
            ``<path>/chatrecall-snapshots`` for an embedded store, under
            ``$CHATRECALL_HOME/snapshots`` for a server. Not for a ``client``.
        server_process: Serve the embedded store at ``path`` from a private
            child process (Chroma's own server, on 127.0.0.1 and a free port)
            and talk to it over HTTP, instead of running Chroma in this process.
            Embedded Chroma holds the GIL for the whole of a write (10-40 ms, up
            to hundreds under load), which stalls every other thread, an asyncio
            event loop included; in the child it holds the child's GIL. Same
            files, durability and results as the in-process store (a store can
            be opened either way); costs ~0.5 s at start and a local HTTP
            round trip per call. The child ends with :meth:`close`, or by itself
            when this process dies. For an async app on an embedded store.

    With none of ``path``, ``url`` and ``client``, an embedded store is opened at
    :func:`default_path`. Chroma telemetry is disabled.

    Raises:
        ConfigError: Conflicting or invalid arguments.
        ImportError: ``chromadb`` is not installed.
        StoreError: The embedded store could not be opened.
    """

    def __init__(
        self,
        *,
        path: str | os.PathLike[str] | None = None,
        url: str | None = None,
        client: Any = None,
        namespace: str = "chatrecall",
        timeout_s: float = 5.0,
        retries: int = 0,
        snapshots: bool = True,
        server_process: bool = False,
    ) -> None:
        given = [n for n, v in (("path", path), ("url", url), ("client", client)) if v is not None]
        if len(given) > 1:
            raise ConfigError(f"give at most one of path, url and client; got {', '.join(given)}")
        if not isinstance(namespace, str) or not _NAME_RE.match(namespace):
            raise ConfigError(
                f"namespace={namespace!r} is invalid: use letters, digits, '_' or '-', "
                "starting and ending with a letter or digit"
            )
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not timeout_s > 0:
            raise ConfigError(f"timeout_s={timeout_s!r} is invalid: must be a positive number")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError(f"retries={retries!r} is invalid: must be an integer >= 0")
        if server_process and (url is not None or client is not None):
            raise ConfigError("server_process=True serves an embedded store (path=...), not a url or a client")
        self._chromadb = require("chromadb", "chroma")
        self.namespace = namespace
        self.timeout_s = float(timeout_s)
        self.retries = retries
        self.url: str | None = None
        self.path: Path | None = None
        self._host = ""
        self._port = 0
        self._ssl = False
        self._lock = threading.RLock()
        self._cols: dict[str, Any] = {}
        self._max_batch: int | None = None
        self._client: Any = client
        self._owns_client = client is None
        self._snapshots = bool(snapshots)
        self._writer: _GroupCommit | None = None
        self._child: _ChildServer | None = None
        if url is not None:
            self._parse_url(url)  # the server is contacted lazily: it may come up later
        elif client is None:
            self.path = Path(path).expanduser() if path is not None else default_path()
            _check_store_dir(self.path, given=path is not None)
            if server_process:
                self._child = _ChildServer(self.path).start()
                weakref.finalize(self, self._child.stop)  # a store never closed still stops its server
                self._parse_url(self._child.url)
                try:
                    self._client = self._run("open", self._open_http)
                except BaseException:
                    self._child.stop()
                    raise
            else:
                self._client = self._run("open", self._open_embedded)
            # Chroma's fixed cost per write is paid once per group (in the child too: +25% calls/s there).
            self._writer = _GroupCommit(self._upsert_now)

    # ------------------------------------------------------------------ setup

    def _parse_url(self, url: str) -> None:
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"url={url!r} is invalid: expected http(s)://host[:port]")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ConfigError(f"url={url!r} is invalid: path prefixes are not supported, use http(s)://host[:port]")
        try:
            port = parts.port
        except ValueError as exc:
            raise ConfigError(f"url={url!r} is invalid: {exc}") from exc
        self.url = url.rstrip("/")
        self._host = parts.hostname
        self._ssl = parts.scheme == "https"
        self._port = port or (443 if self._ssl else 8000)

    def _settings(self) -> Any:
        from chromadb.config import Settings

        return Settings(anonymized_telemetry=False)

    def _open_embedded(self) -> Any:
        assert self.path is not None
        self.path.mkdir(parents=True, exist_ok=True)
        return self._chromadb.PersistentClient(path=str(self.path), settings=self._settings())

    def _open_http(self) -> Any:
        # chromadb's first requests (inside HttpClient()) have no timeout: a dead
        # or hung server would block forever, so probe the heartbeat first.
        import httpx

        scheme = "https" if self._ssl else "http"
        host = f"[{self._host}]" if ":" in self._host else self._host  # IPv6 literal
        probe = httpx.get(f"{scheme}://{host}:{self._port}/api/v2/heartbeat", timeout=self.timeout_s)
        probe.raise_for_status()
        client = self._chromadb.HttpClient(host=self._host, port=self._port, ssl=self._ssl, settings=self._settings())
        session = getattr(getattr(client, "_server", None), "_session", None)
        if isinstance(session, httpx.Client):
            # chromadb builds its httpx session with timeout=None; bound every request.
            session.timeout = httpx.Timeout(self.timeout_s)
            # httpx timeouts are per socket operation: a server trickling bytes, each
            # just inside the read timeout, could hold a call indefinitely. Put one
            # deadline on the whole request (headers and body).
            transport = getattr(session, "_transport", None)
            if isinstance(transport, httpx.BaseTransport):
                session._transport = _deadline_transport(transport, self.timeout_s)
        return client

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._open_http() if self.url is not None else self._open_embedded()
            return self._client

    def close(self) -> None:
        """Release the client we opened (embedded: flushes and unlocks the files)."""
        if self._writer is not None:
            self._writer.close()
        with self._lock:
            self._cols.clear()
            if not self._owns_client:
                return
            client, self._client = self._client, None
        if client is not None and hasattr(client, "close"):
            with contextlib.suppress(Exception):  # closing must not mask the caller's error
                client.close()
        if self._child is not None:
            self._child.stop()

    def __enter__(self) -> ChromaStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = str(self.path) if self._child is not None else self.url or (str(self.path) if self.path else "client")
        return f"ChromaStore({where!r}, namespace={self.namespace!r})"

    @property
    def shared(self) -> bool:
        """True for a server store: other processes may write, so reads should check for fresh data.

        False for an embedded store, served from a child process or not: it is this process's alone.
        """
        return self.url is not None and self._child is None

    @property
    def snapshot_dir(self) -> Path | None:
        """Where the engine keeps index snapshots of this store's users (None: snapshots off)."""
        if not self._snapshots:
            return None
        if self.path is not None:
            return self.path / "chatrecall-snapshots" / self.namespace
        if self.url is not None:
            import hashlib

            from ._onnx_backend import cache_root

            tag = hashlib.sha256(f"{self.url}|{self.namespace}".encode()).hexdigest()[:16]
            return cache_root().parent / "snapshots" / tag
        return None

    def ids(self, collection: str, where: Where | None = None) -> list[str]:
        """Ids of the records matching ``where``: no documents, metadata or vectors are read."""
        flt = _compile(where, None)
        if flt.empty:
            return []
        return self._run(f"ids of {collection!r}",
                         lambda: self._with(collection, False, lambda col: self._matching_ids(col, flt), []))

    def ping(self) -> None:
        """Check the backend answers; raises :class:`StoreUnavailableError` if not."""
        self._run("heartbeat", lambda: self._get_client().heartbeat())

    # --------------------------------------------------------------- plumbing

    def _describe(self) -> str:
        if self._child is not None:
            return f"chroma store at {self.path} (server process {self.url})"
        return f"chroma server {self.url}" if self.url else f"chroma store at {self.path or 'client'}"

    def _translate(self, what: str, exc: BaseException) -> StoreError:
        """Map any backend exception to StoreError / StoreUnavailableError."""
        httpx = sys.modules.get("httpx")
        unavailable = isinstance(exc, (ConnectionError, TimeoutError, socket.timeout))
        if httpx is not None:
            unavailable = unavailable or isinstance(exc, httpx.TransportError)
            if isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code in (502, 503, 504):
                unavailable = True
        if isinstance(exc, OSError) and self.url is not None:
            unavailable = True  # socket level errors talking to the server
        if isinstance(exc, ValueError) and "Could not connect" in str(exc):
            unavailable = True
        detail = f"{type(exc).__name__}: {exc}"
        if self.url is None and "Error finding id" in str(exc):
            # nu49: documents added from another process while an MCP server held the embedded store; every corpus
            # query of the server failed so until it restarted
            detail += (" (another process may have written to this embedded store: an embedded Chroma store "
                       "serves one process; restart this one, or share a Chroma server: connect(url=...), --url)")
        if unavailable:
            return StoreUnavailableError(f"{self._describe()} is unavailable ({what}): {detail}")
        return StoreError(f"{self._describe()}: {what} failed: {detail}")

    def _run(self, what: str, fn: Callable[[], T], *, write: bool = False) -> T:
        attempts = 1 + (self.retries if write else 0)
        attempt = 0
        races = 0
        while True:
            try:
                return fn()
            except ChatRecallError:
                raise
            except Exception as exc:  # noqa: BLE001 - every backend error becomes ours
                if races < _RACE_RETRIES and _is_race(exc):
                    # Chroma reading a segment another request is still writing: not an
                    # outage, gone a moment later. Every call is idempotent, so retry it.
                    races += 1
                    time.sleep(0.02 * 2**races)
                    continue
                err = self._translate(what, exc)
                attempt += 1
                if isinstance(err, StoreUnavailableError) and attempt < attempts:
                    time.sleep(min(0.1 * 2 ** (attempt - 1), 2.0))
                    continue
                raise err from exc

    def _name(self, collection: str) -> str:
        if not isinstance(collection, str) or not _NAME_RE.match(collection):
            raise InvalidInputError(f"collection={collection!r} is invalid: use letters, digits, '_' or '-'")
        return f"{self.namespace}_{collection}"

    def _is_not_found(self, exc: BaseException) -> bool:
        errors = getattr(self._chromadb, "errors", None)
        nf = getattr(errors, "NotFoundError", None)
        if nf is not None and isinstance(exc, nf):
            return True
        return isinstance(exc, ValueError) and "does not exist" in str(exc)

    def _collection(self, collection: str, create: bool) -> Any:
        """The Chroma collection handle, or None when missing and ``create`` is False."""
        name = self._name(collection)
        with self._lock:
            col = self._cols.get(name)
        if col is not None:
            return col
        client = self._get_client()
        if create:
            col = client.get_or_create_collection(
                name, configuration={"hnsw": {"space": _SPACE}}, embedding_function=None
            )
        else:
            try:
                col = client.get_collection(name, embedding_function=None)
            except Exception as exc:
                if self._is_not_found(exc):
                    return None  # not cached: another process may create it
                raise
        self._check_space(name, col)
        with self._lock:
            self._cols[name] = col
        return col

    def _check_space(self, name: str, col: Any) -> None:
        # A collection made by someone else with l2/ip would make 1 - distance meaningless.
        space = None
        # The raw JSON first: ``configuration`` also rebuilds the collection's embedding function config, and
        # chromadb >= 1.1 warns (DeprecationWarning, "legacy embedding function config") on every open.
        cfg = getattr(col, "configuration_json", None)
        if not isinstance(cfg, Mapping):
            cfg = getattr(col, "configuration", None)
        if isinstance(cfg, Mapping):
            hnsw = cfg.get("hnsw")
            if isinstance(hnsw, Mapping):
                space = hnsw.get("space")
        meta = getattr(col, "metadata", None)
        if space is None and isinstance(meta, Mapping):
            space = meta.get("hnsw:space")
        if space is not None and space != _SPACE:
            raise StoreError(f"chroma collection {name!r} uses distance {space!r}; chatrecall needs 'cosine'")

    def _with(self, collection: str, create: bool, op: Callable[[Any], T], missing: T) -> T:
        """Run ``op`` on the collection; refresh a stale handle once, or a client that another process's writes
        left behind (:meth:`_written_elsewhere`)."""
        col = self._collection(collection, create)
        if col is None:
            return missing
        try:
            return op(col)
        except Exception as exc:
            if self._written_elsewhere(exc):
                self._reopen_embedded()
            elif not self._is_not_found(exc):
                raise
            else:
                with self._lock:  # dropped (and maybe recreated) by another client
                    self._cols.pop(self._name(collection), None)
            col = self._collection(collection, create)
            return missing if col is None else op(col)

    def _written_elsewhere(self, exc: BaseException) -> bool:
        """Whether an embedded client of ours failed because another process wrote to the same files.

        An embedded Chroma client keeps its vector index in its process: records another process adds are in the
        files' metadata but not in that index, so a filtered query fails ("Error finding id") until the client is
        opened again (nu49: documents added from Python while ``chatrecall mcp`` ran; every corpus search of the
        server failed until it restarted).
        """
        return self.url is None and self._owns_client and "Error finding id" in str(exc)

    def _reopen_embedded(self) -> None:
        """Open the embedded client again, on a fresh Chroma system that reads the files as they are now.

        Chroma shares one system per directory in a process; the one this client used is left to the handles still
        holding it (not stopped: a call in another thread may be using it), and a new one is made.
        """
        try:
            from chromadb.api.shared_system_client import SharedSystemClient
        except ImportError:  # another chromadb layout: the cached system stays, and the retry may fail again
            systems = None
        else:
            systems = getattr(SharedSystemClient, "_identifier_to_system", None)
        with self._lock:
            self._cols.clear()
            self._client = None
            if isinstance(systems, dict) and self.path is not None:
                systems.pop(str(self.path), None)

    def _batch_size(self) -> int:
        if self._max_batch is None:
            size = 0
            getter = getattr(self._get_client(), "get_max_batch_size", None)
            if getter is not None:
                size = int(getter())
            self._max_batch = max(1, min(size, _PAGE)) if size > 0 else _PAGE
        return self._max_batch

    def _matching_ids(self, col: Any, flt: _Filter) -> list[str]:
        out: list[str] = []
        if flt.ids is not None:
            for chunk in _chunks(flt.ids, _PAGE):
                out.extend(col.get(ids=list(chunk), where=flt.where, include=[])["ids"])
            return out
        offset = 0
        while True:  # ids only: large pages, since each offset page costs a scan up to its offset
            page = col.get(where=flt.where, limit=_ID_PAGE, offset=offset, include=[])["ids"]
            out.extend(page)
            if len(page) < _ID_PAGE:
                return out
            offset += _ID_PAGE

    # ------------------------------------------------------------- MemoryStore

    def upsert(self, collection: str, records: Sequence[Record], embeddings: np.ndarray) -> None:
        """Insert or replace ``records``; row i of ``embeddings`` belongs to record i.

        A replaced record is replaced whole: metadata keys it no longer has are
        removed (Chroma alone would merge them). Duplicate ids: the last wins.

        Raises:
            InvalidInputError: Shape mismatch, non-finite vectors, bad record fields.
            StoreError: The write failed (never swallowed).
        """
        self._name(collection)
        recs = list(records)
        emb = np.asarray(embeddings, dtype=np.float32)
        if emb.ndim != 2 or emb.shape[0] != len(recs):
            raise InvalidInputError(f"embeddings shape {emb.shape} does not match {len(recs)} records")
        if not recs:
            return
        if not np.isfinite(emb).all():
            raise InvalidInputError("embeddings contain NaN or infinite values")
        metas = [_to_metadata(r) for r in recs]
        last = {r.id: i for i, r in enumerate(recs)}
        keep = list(last.values())
        if len(keep) != len(recs):
            keep.sort()
            recs, metas, emb = [recs[i] for i in keep], [metas[i] for i in keep], emb[keep]
        ids = [r.id for r in recs]
        docs = [r.text for r in recs]
        if self._writer is not None and len(ids) < _GROUP_RECORDS:
            self._writer.submit(collection, ids, emb, docs, metas)  # embedded: group commit
        else:
            self._upsert_now(collection, ids, emb, docs, metas)

    def _upsert_now(self, collection: str, ids: list[str], emb: np.ndarray, docs: list[str],
                    metas: list[dict[str, Any]]) -> None:
        step = self._run("batch size", self._batch_size)
        for start in range(0, len(ids), step):
            sl = slice(start, start + step)
            write = functools.partial(
                self._write_batch, ids=ids[sl], embeddings=emb[sl], documents=docs[sl], metadatas=metas[sl]
            )
            self._run(
                f"upsert into {collection!r}", functools.partial(self._with, collection, True, write, None), write=True
            )

    @staticmethod
    def _write_batch(
        col: Any, *, ids: list[str], embeddings: np.ndarray, documents: list[str], metadatas: list[dict[str, Any]]
    ) -> None:
        old = col.get(ids=ids, include=["metadatas"])
        stale = {rid: m or {} for rid, m in zip(old["ids"], old["metadatas"] or [])}
        metas = [dict(m) for m in metadatas]
        for rid, meta in zip(ids, metas):
            for key in stale.get(rid, {}).keys() - meta.keys():
                meta[key] = None  # Chroma merges metadata on upsert; None deletes a stale key
        col.upsert(ids=ids, embeddings=embeddings, documents=documents, metadatas=metas)

    def query(self, collection: str, embedding: np.ndarray, k: int, where: Where) -> list[StoreHit]:
        """The ``k`` records most similar to ``embedding`` matching ``where``, best first.

        ``similarity`` is ``1 - cosine distance``. Asking for more than the
        collection holds returns what there is; an empty or missing collection
        returns ``[]``.
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise InvalidInputError(f"k={k!r} must be an integer")
        q = np.asarray(embedding, dtype=np.float32)
        if q.ndim == 2 and q.shape[0] == 1:
            q = q[0]
        if q.ndim != 1 or q.size == 0:
            raise InvalidInputError(f"query embedding shape {q.shape} must be (dim,)")
        if not np.isfinite(q).all():
            raise InvalidInputError("query embedding contains NaN or infinite values")
        flt = _compile(where, None)
        if k <= 0 or flt.empty:
            return []

        def search(col: Any) -> list[StoreHit]:
            n = col.count()
            if n == 0:
                return []
            limit = min(int(k), n, len(flt.ids) if flt.ids is not None else n)
            res = col.query(
                query_embeddings=[q],
                n_results=limit,
                where=flt.where,
                ids=list(flt.ids) if flt.ids is not None else None,
                include=["documents", "metadatas", "distances"],
            )
            ids, docs = res["ids"][0], (res["documents"] or [[]])[0]
            metas, dists = (res["metadatas"] or [[]])[0], (res["distances"] or [[]])[0]
            hits = [StoreHit(_to_record(i, d, m), float(1.0 - dist)) for i, d, m, dist in zip(ids, docs, metas, dists)]
            hits.sort(key=lambda h: -h.similarity)
            return hits

        return self._run(f"query {collection!r}", lambda: self._with(collection, False, search, []))

    def get(
        self,
        collection: str,
        *,
        ids: Sequence[str] | None = None,
        where: Where | None = None,
        include_embeddings: bool = False,
    ) -> Batch:
        """Records by id and/or filter, paged through in chunks of 5000.

        With ``ids``, records come back in the order of ``ids`` (unknown ids are
        skipped); otherwise in storage order. ``embeddings`` (when asked for) is
        a float32 array whose row i belongs to ``records[i]``.
        """
        flt = _compile(where, ids)
        empty = Batch([], np.zeros((0, 0), dtype=np.float32) if include_embeddings else None)
        if flt.empty:
            return empty
        include = ["documents", "metadatas"] + (["embeddings"] if include_embeddings else [])

        def read(col: Any) -> Batch:
            rows: list[tuple[str, Any, Any]] = []
            vecs: list[Any] = []

            def take(res: Mapping[str, Any]) -> int:
                got = res["ids"]
                rows.extend(zip(got, res["documents"] or [None] * len(got), res["metadatas"] or [None] * len(got)))
                if include_embeddings and len(got):
                    vecs.append(np.asarray(res["embeddings"], dtype=np.float32))
                return len(got)

            if flt.ids is not None:
                for chunk in _chunks(flt.ids, _PAGE):
                    take(col.get(ids=list(chunk), where=flt.where, include=include))
            else:
                offset = 0
                while take(col.get(where=flt.where, limit=_PAGE, offset=offset, include=include)) == _PAGE:
                    offset += _PAGE
            records = [_to_record(i, d, m) for i, d, m in rows]
            emb = None
            if include_embeddings:
                emb = np.concatenate(vecs) if vecs else np.zeros((0, 0), dtype=np.float32)
            if flt.ids is not None and len(records) > 1:
                rank = {rid: n for n, rid in enumerate(flt.ids)}
                order = sorted(range(len(records)), key=lambda n: rank[records[n].id])
                records = [records[n] for n in order]
                if emb is not None:
                    emb = emb[order]
            return Batch(records, emb)

        return self._run(f"get from {collection!r}", lambda: self._with(collection, False, read, empty))

    def delete(self, collection: str, *, ids: Sequence[str] | None = None, where: Where | None = None) -> int:
        """Delete by id and/or filter; returns how many records were removed.

        Raises:
            InvalidInputError: Neither ``ids`` nor ``where`` given (refuses to
                empty a whole collection by accident).
        """
        if ids is None and where is None:
            raise InvalidInputError("delete needs ids or where; refusing to delete a whole collection")
        flt = _compile(where, ids)
        if flt.empty:
            return 0

        def remove(col: Any) -> int:
            found = self._matching_ids(col, flt)
            for chunk in _chunks(found, _PAGE):
                col.delete(ids=list(chunk))
            return len(found)

        return self._run(f"delete from {collection!r}", lambda: self._with(collection, False, remove, 0), write=True)

    def count(self, collection: str, where: Where | None = None) -> int:
        """Number of records matching ``where`` (all records when ``where`` is empty)."""
        flt = _compile(where, None)
        if flt.empty:
            return 0

        def tally(col: Any) -> int:
            if flt.where is None and flt.ids is None:
                return int(col.count())
            return len(self._matching_ids(col, flt))

        return self._run(f"count {collection!r}", lambda: self._with(collection, False, tally, 0))
