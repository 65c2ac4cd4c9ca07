"""ChromaStore on real Chroma: embedded PersistentClient and a real `chroma run` server."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("chromadb")

from chatrecall.adapters import chroma as chroma_mod  # noqa: E402
from chatrecall.adapters.chroma import ChromaStore, default_path  # noqa: E402
from chatrecall.core._errors import (  # noqa: E402
    ConfigError,
    InvalidInputError,
    StoreError,
    StoreUnavailableError,
)
from chatrecall.core._memstore import InMemoryStore  # noqa: E402
from chatrecall.core._protocols import MemoryStore  # noqa: E402
from chatrecall.core._types import Record  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DIM = 8


def rec(
    rid: str,
    user: str = "u1",
    *,
    session: str = "s1",
    role: str = "user",
    ts: float = 1.0,
    seq: int = 0,
    entities: tuple[str, ...] = (),
    text: str | None = None,
    **metadata: Any,
) -> Record:
    return Record(
        id=rid,
        text=text if text is not None else f"text of {rid}",
        user_id=user,
        session_id=session,
        role=role,
        timestamp=ts,
        seq=seq,
        entities=entities,
        metadata=metadata,
    )


def unit(*rows: list[float] | np.ndarray) -> np.ndarray:
    m = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def basis(i: int, dim: int = DIM) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    return v


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.server)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """The same tests run on the embedded client and on a real server."""
    if request.param == "embedded":
        s = ChromaStore(path=tmp_path / "db")
    else:
        url = request.getfixturevalue("chroma_server")
        s = ChromaStore(url=url, namespace=f"t{uuid.uuid4().hex[:12]}")  # isolates tests on the shared server
    yield s
    s.close()


def test_implements_protocol(store: ChromaStore) -> None:
    assert isinstance(store, MemoryStore)


def test_round_trip_is_exact(store: ChromaStore) -> None:
    records = [
        rec("a", ts=1732252800.123456, seq=7, entities=("Helm", "k8s"), topic="deploy", n=3, ratio=0.5, flag=True),
        rec("b", user="u2", role="assistant", text=""),
        rec("c", text="unicode ✓ é \n multi-line"),
    ]
    emb = unit(basis(0), basis(1), [1, 1, 0, 0, 0, 0, 0, 0])
    store.upsert("memories", records, emb)
    batch = store.get("memories", ids=["c", "a", "b", "missing"], include_embeddings=True)
    assert batch.records == [records[2], records[0], records[1]]  # order of ids, unknown id skipped
    assert batch.records[1].entities == ("Helm", "k8s")
    assert dict(batch.records[1].metadata) == {"topic": "deploy", "n": 3, "ratio": 0.5, "flag": True}
    assert type(batch.records[1].metadata["n"]) is int and type(batch.records[1].metadata["flag"]) is bool
    assert batch.embeddings is not None and batch.embeddings.dtype == np.float32
    np.testing.assert_allclose(batch.embeddings, emb[[2, 0, 1]], atol=1e-6)
    assert store.get("memories").embeddings is None


def test_upsert_replaces_the_whole_record(store: ChromaStore) -> None:
    store.upsert("memories", [rec("a", entities=("x",), topic="old", extra=1)], unit(basis(0)))
    store.upsert("memories", [rec("a", text="new", topic="new")], unit(basis(1)))
    (got,) = store.get("memories", ids=["a"]).records
    assert got == rec("a", text="new", topic="new")  # stale entities and 'extra' are gone
    assert store.count("memories", {"entities": "x"}) == 0
    assert store.count("memories") == 1


def test_duplicate_ids_in_one_call_last_wins(store: ChromaStore) -> None:
    store.upsert("memories", [rec("a", text="first"), rec("a", text="second")], unit(basis(0), basis(1)))
    batch = store.get("memories", include_embeddings=True)
    assert [r.text for r in batch.records] == ["second"]
    assert batch.embeddings is not None
    np.testing.assert_allclose(batch.embeddings[0], basis(1), atol=1e-6)


def test_query_orders_by_cosine_similarity(store: ChromaStore) -> None:
    emb = unit(basis(0), [1, 1, 0, 0, 0, 0, 0, 0], basis(2))
    store.upsert("memories", [rec("same"), rec("near"), rec("far")], emb)
    hits = store.query("memories", basis(0), 3, {})
    assert [h.record.id for h in hits] == ["same", "near", "far"]
    np.testing.assert_allclose([h.similarity for h in hits], [1.0, np.sqrt(0.5), 0.0], atol=1e-5)
    assert hits[0].record == rec("same")


def test_user_isolation(store: ChromaStore) -> None:
    vec = unit(basis(0))
    store.upsert("memories", [rec(f"a{i}", user="alice") for i in range(5)], np.repeat(vec, 5, axis=0))
    store.upsert("memories", [rec(f"b{i}", user="bob") for i in range(5)], np.repeat(vec, 5, axis=0))
    hits = store.query("memories", basis(0), 50, {"user_id": "alice"})
    assert len(hits) == 5 and {h.record.user_id for h in hits} == {"alice"}
    assert {r.user_id for r in store.get("memories", where={"user_id": "alice"}).records} == {"alice"}
    assert store.count("memories", {"user_id": "bob"}) == 5
    assert store.query("memories", basis(0), 50, {"user_id": "carol"}) == []
    # A user id that looks like an operator or a wildcard is still just a value.
    assert store.count("memories", {"user_id": "*"}) == 0


def test_equality_and_membership_filters(store: ChromaStore) -> None:
    records = [
        rec("1", role="user", seq=1, session="s1"),
        rec("2", role="assistant", seq=2, session="s1"),
        rec("3", role="tool", seq=3, session="s2"),
    ]
    store.upsert("memories", records, unit(basis(0), basis(1), basis(2)))
    ids = lambda w: sorted(r.id for r in store.get("memories", where=w).records)  # noqa: E731
    assert ids({"role": ("user", "assistant")}) == ["1", "2"]
    assert ids({"session_id": "s1", "role": ("assistant", "tool")}) == ["2"]
    assert ids({"seq": (1, 3.0)}) == ["1", "3"]  # mixed int/float tuple
    assert ids({"id": ("1", "3"), "role": "tool"}) == ["3"]
    assert ids({"role": ()}) == []
    assert store.count("memories", {"role": ()}) == 0
    assert store.query("memories", basis(0), 5, {"role": ()}) == []
    hits = store.query("memories", basis(0), 5, {"role": ("assistant", "tool")})
    assert [h.record.id for h in hits][0] in {"2", "3"} and len(hits) == 2


def test_entities_are_a_list_with_contains_filter(store: ChromaStore) -> None:
    store.upsert(
        "memories",
        [rec("a", entities=("helm", "k8s")), rec("b", entities=("k8s",)), rec("c")],
        unit(basis(0), basis(1), basis(2)),
    )
    assert sorted(r.id for r in store.get("memories", where={"entities": "k8s"}).records) == ["a", "b"]
    assert sorted(r.id for r in store.get("memories", where={"entities": ("helm", "nope")}).records) == ["a"]
    assert store.get("memories", ids=["c"]).records[0].entities == ()


def test_metadata_keys_that_look_like_operators_stay_data(store: ChromaStore) -> None:
    evil = Record(
        id="a",
        text="t",
        user_id="u1",
        session_id="s1",
        role="user",
        timestamp=1.0,
        metadata={"$or": "x", "$and": 1, "user_id": "mallory", "#document": "d", "m.nested": "y"},
    )
    store.upsert("memories", [evil, rec("b")], unit(basis(0), basis(1)))
    (got,) = store.get("memories", ids=["a"]).records
    assert got == evil and got.user_id == "u1"  # user metadata cannot overwrite our fields
    assert dict(got.metadata)["user_id"] == "mallory"
    assert [r.id for r in store.get("memories", where={"$or": "x"}).records] == ["a"]
    assert store.count("memories", {"user_id": "mallory"}) == 0


def test_delete_by_where_and_ids_returns_count(store: ChromaStore) -> None:
    store.upsert(
        "memories",
        [rec(str(i), user="u1" if i < 6 else "u2") for i in range(10)],
        np.repeat(unit(basis(0)), 10, axis=0),
    )
    assert store.delete("memories", where={"user_id": "u2"}) == 4
    assert store.delete("memories", ids=["0", "1", "nope"]) == 2
    assert store.delete("memories", ids=["2", "3"], where={"user_id": "other"}) == 0
    assert store.delete("memories", where={"user_id": "u2"}) == 0
    assert store.count("memories") == 4
    assert store.delete("never_written", ids=["x"]) == 0
    with pytest.raises(InvalidInputError):
        store.delete("memories")


def test_count_and_k_larger_than_collection(store: ChromaStore) -> None:
    assert store.count("memories") == 0
    assert store.query("memories", basis(0), 10, {}) == []  # collection does not exist yet
    store.upsert("memories", [rec("a"), rec("b", user="u2")], unit(basis(0), basis(1)))
    assert store.count("memories") == 2
    assert store.count("memories", {"user_id": "u2"}) == 1
    assert len(store.query("memories", basis(0), 1000, {})) == 2
    assert len(store.query("memories", basis(0), 1000, {"user_id": "u2"})) == 1
    assert store.query("memories", basis(0), 0, {}) == []


def test_empty_collection(store: ChromaStore) -> None:
    store.upsert("pins", [rec("p")], unit(basis(0)))
    assert store.delete("pins", ids=["p"]) == 1
    assert store.query("pins", basis(0), 5, {}) == []
    batch = store.get("pins", include_embeddings=True)
    assert batch.records == [] and batch.embeddings is not None and batch.embeddings.shape[0] == 0
    assert store.get("corpus", ids=["x"]).records == []


def test_collections_and_namespaces_are_separate(store: ChromaStore, tmp_path: Path) -> None:
    store.upsert("memories", [rec("a")], unit(basis(0)))
    assert store.count("pins") == 0 and store.count("corpus") == 0
    if store.url:
        other = ChromaStore(url=store.url, namespace=f"o{uuid.uuid4().hex[:12]}")
        assert other.count("memories") == 0
        other.close()


def test_paging_and_write_batching(store: ChromaStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chroma_mod, "_PAGE", 7)  # also caps the write batch
    monkeypatch.setattr(chroma_mod, "_ID_PAGE", 4)  # id-only reads (count by filter, delete by where)
    n = 30
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(n, DIM)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    records = [rec(f"r{i:02d}", user="u1" if i % 3 else "u2", seq=i) for i in range(n)]
    store.upsert("memories", records, emb)
    batch = store.get("memories", include_embeddings=True)
    assert sorted(r.id for r in batch.records) == [r.id for r in records]
    assert batch.embeddings is not None and batch.embeddings.shape == (n, DIM)
    row = {r.id: i for i, r in enumerate(batch.records)}
    np.testing.assert_allclose(batch.embeddings[row["r17"]], emb[17], atol=1e-6)
    ids = [f"r{i:02d}" for i in range(n - 1, -1, -1)]
    assert [r.id for r in store.get("memories", ids=ids).records] == ids
    assert store.count("memories", {"user_id": "u2"}) == 10
    assert store.delete("memories", where={"user_id": "u1"}) == 20
    assert store.count("memories") == 10


def test_behaves_like_the_in_memory_fake(store: ChromaStore) -> None:
    """Same calls, same answers as InMemoryStore (the fake the unit tests use)."""
    fake = InMemoryStore()
    rng = np.random.default_rng(42)
    n = 60
    emb = rng.normal(size=(n, DIM)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    records = [
        rec(
            f"id{i}",
            user=f"u{i % 3}",
            session=f"s{i % 4}",
            role=("user", "assistant")[i % 2],
            seq=i,
            ts=1000.0 + i,
            topic=("a", "b", "c")[i % 3],
        )
        for i in range(n)
    ]
    for s in (store, fake):
        s.upsert("memories", records, emb)
        s.upsert("memories", records[:5], emb[5:10])  # overwrite
        s.delete("memories", ids=["id7", "id8"])
    wheres: list[dict[str, Any]] = [
        {},
        {"user_id": "u1"},
        {"user_id": "u1", "role": "user"},
        {"session_id": ("s0", "s3")},
        {"topic": "b"},
        {"seq": (1, 2, 3, 50)},
        {"user_id": ("u0", "u2"), "topic": ("a", "c")},
    ]
    for w in wheres:
        assert store.count("memories", w) == fake.count("memories", w), w
        assert sorted(r.id for r in store.get("memories", where=w).records) == sorted(
            r.id for r in fake.get("memories", where=w).records
        ), w
        q = emb[11]
        got = store.query("memories", q, 5, w)
        want = fake.query("memories", q, 5, w)
        assert [h.record.id for h in got] == [h.record.id for h in want], w
        np.testing.assert_allclose([h.similarity for h in got], [h.similarity for h in want], atol=1e-4)
    for w in ({"user_id": "u2"}, {"role": "assistant", "topic": "a"}):
        assert store.delete("memories", where=w) == fake.delete("memories", where=w)
    assert store.count("memories") == fake.count("memories")


def test_stale_collection_handle_is_refreshed(store: ChromaStore) -> None:
    store.upsert("memories", [rec("a")], unit(basis(0)))
    assert store.count("memories") == 1
    # Another client drops the collection behind our back (e.g. another process).
    store._get_client().delete_collection(f"{store.namespace}_memories")
    assert store.count("memories") == 0
    assert store.query("memories", basis(0), 3, {}) == []
    store.upsert("memories", [rec("b")], unit(basis(1)))
    assert [r.id for r in store.get("memories").records] == ["b"]


def test_invalid_inputs_raise_our_errors(store: ChromaStore) -> None:
    with pytest.raises(InvalidInputError, match="shape"):
        store.upsert("memories", [rec("a")], np.zeros((2, DIM), dtype=np.float32))
    with pytest.raises(InvalidInputError, match="NaN"):
        store.upsert("memories", [rec("a")], np.full((1, DIM), np.nan, dtype=np.float32))
    with pytest.raises(InvalidInputError, match="Record"):
        store.upsert("memories", [{"id": "a"}], unit(basis(0)))  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="metadata"):
        store.upsert("memories", [rec("a", bad=[1, 2])], unit(basis(0)))
    with pytest.raises(InvalidInputError, match=r"\[1, 2\]"):
        store.get("memories", where={"role": [1, 2]})  # type: ignore[dict-item]
    with pytest.raises(InvalidInputError, match="'text'"):
        store.count("memories", {"text": "x"})
    with pytest.raises(InvalidInputError, match="collection"):
        store.count("bad name!")
    with pytest.raises(InvalidInputError, match="k="):
        store.query("memories", basis(0), "3", {})  # type: ignore[arg-type]
    store.upsert("memories", [rec("a")], unit(basis(0)))
    with pytest.raises(StoreError):  # wrong dimension: a backend error, wrapped
        store.upsert("memories", [rec("b")], np.ones((1, DIM + 1), dtype=np.float32))
    store.upsert("memories", [], np.zeros((0, DIM), dtype=np.float32))  # no-op
    assert store.count("memories") == 1


def test_rejects_a_collection_that_is_not_cosine(tmp_path: Path) -> None:
    store = ChromaStore(path=tmp_path / "db", namespace="ns")
    store._get_client().create_collection(
        "ns_memories", configuration={"hnsw": {"space": "l2"}}, embedding_function=None
    )
    with pytest.raises(StoreError, match="cosine"):
        store.upsert("memories", [rec("a")], unit(basis(0)))
    store.close()


def test_opening_collections_warns_nothing(tmp_path: Path) -> None:
    # Reading the distance through ``collection.configuration`` made chromadb warn "legacy embedding
    # function config" (DeprecationWarning) on every open; a user running with -W error could not connect.
    import warnings

    path = tmp_path / "db"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ChromaStore(path=path) as first:
            first.upsert("memories", [rec("a")], unit(basis(0)))
        with ChromaStore(path=path) as second:  # opens the existing collection
            assert second.count("memories") == 1
    assert [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)] == []


def test_embedded_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "db"
    records = [rec("a", entities=("x",), k="v"), rec("b", user="u2")]
    emb = unit(basis(0), basis(1))
    with ChromaStore(path=path) as first:
        first.upsert("memories", records, emb)
    with ChromaStore(path=path) as second:  # a fresh PersistentClient on the same files
        batch = second.get("memories", ids=["a", "b"], include_embeddings=True)
        assert batch.records == records
        assert batch.embeddings is not None
        np.testing.assert_allclose(batch.embeddings, emb, atol=1e-6)
        assert [h.record.id for h in second.query("memories", basis(1), 1, {})] == ["b"]


def _subprocess(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip()


@pytest.mark.server
def test_server_state_is_shared_between_processes(chroma_server: str) -> None:
    ns = f"p{uuid.uuid4().hex[:12]}"
    store = ChromaStore(url=chroma_server, namespace=ns)
    store.upsert("memories", [rec("from-parent")], unit(basis(0)))
    out = _subprocess(f"""
        import numpy as np
        from chatrecall.adapters.chroma import ChromaStore
        from chatrecall.core._types import Record
        s = ChromaStore(url={chroma_server!r}, namespace={ns!r})
        seen = [r.id for r in s.get("memories").records]
        s.upsert("memories", [Record(id="from-child", text="t", user_id="u1", session_id="s1", role="user",
                                     timestamp=2.0)], np.eye(1, {DIM}, 1, dtype=np.float32))
        print(",".join(seen))
    """)
    assert out == "from-parent"
    assert sorted(r.id for r in store.get("memories").records) == ["from-child", "from-parent"]
    assert store.delete("memories", ids=["from-child"]) == 1
    assert (
        _subprocess(f"""
        from chatrecall.adapters.chroma import ChromaStore
        print(ChromaStore(url={chroma_server!r}, namespace={ns!r}).count("memories"))
    """)
        == "1"
    )
    store.close()


def test_unreachable_url_raises_unavailable_naming_the_url() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    store = ChromaStore(url=url, timeout_s=1.0, retries=2)  # lazy: constructing does not connect
    with pytest.raises(StoreUnavailableError, match=url.replace(".", r"\.")):
        store.count("memories")
    with pytest.raises(StoreUnavailableError, match=url.replace(".", r"\.")):
        store.upsert("memories", [rec("a")], unit(basis(0)))  # a failed write is never swallowed
    with pytest.raises(StoreUnavailableError):
        store.ping()
    assert issubclass(StoreUnavailableError, StoreError)


def test_hung_server_times_out() -> None:
    """A server that accepts connections but never answers must not block forever."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # the kernel completes TCP handshakes; nobody ever reads
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        store = ChromaStore(url=url, timeout_s=0.5)
        with pytest.raises(StoreUnavailableError, match=url.replace(".", r"\.")):
            store.count("memories")


@pytest.mark.server
def test_frozen_server_times_out_then_recovers(chroma_server_factory: Any) -> None:
    server = chroma_server_factory()
    store = ChromaStore(url=server.url, timeout_s=1.0)
    store.upsert("memories", [rec("a")], unit(basis(0)))
    server.freeze()  # alive but unresponsive, like a stuck server
    try:
        with pytest.raises(StoreUnavailableError, match=str(server.port)):
            store.count("memories")
    finally:
        server.thaw()
    assert store.count("memories") == 1
    store.close()


@pytest.mark.server
def test_server_restart_recovers_without_a_new_store(chroma_server_factory: Any) -> None:
    server = chroma_server_factory()
    store = ChromaStore(url=server.url, retries=1)
    store.upsert("memories", [rec("a")], unit(basis(0)))
    server.kill()
    with pytest.raises(StoreUnavailableError, match=str(server.port)):
        store.count("memories")
    server.start()
    assert [r.id for r in store.get("memories").records] == ["a"]  # data survived, same store object
    store.upsert("memories", [rec("b")], unit(basis(1)))
    assert store.count("memories") == 2
    store.close()


def test_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="path, url"):
        ChromaStore(path=tmp_path, url="http://127.0.0.1:8000")
    with pytest.raises(ConfigError, match="ftp://x"):
        ChromaStore(url="ftp://x")
    with pytest.raises(ConfigError, match="/prefix"):
        ChromaStore(url="http://127.0.0.1:8000/prefix")
    with pytest.raises(ConfigError, match="namespace"):
        ChromaStore(path=tmp_path, namespace="bad ns")
    with pytest.raises(ConfigError, match="retries"):
        ChromaStore(path=tmp_path, retries=-1)
    with pytest.raises(ConfigError, match="timeout_s"):
        ChromaStore(path=tmp_path, timeout_s=0)
    assert ChromaStore(url="https://chroma.example.com")._port == 443


def test_default_path_and_user_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATRECALL_HOME", str(tmp_path / "home"))
    assert default_path() == tmp_path / "home" / "chroma"
    with ChromaStore() as store:
        assert store.path == tmp_path / "home" / "chroma"
        store.upsert("memories", [rec("a")], unit(basis(0)))
    monkeypatch.delenv("CHATRECALL_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert default_path() == tmp_path / "xdg" / "chatrecall" / "chroma"
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(tmp_path / "home" / "chroma"), settings=Settings(anonymized_telemetry=False)
    )
    store = ChromaStore(client=client)
    assert store.count("memories") == 1
    store.close()
    assert client.heartbeat() > 0  # a client we were given is not closed by us


def test_import_guard_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "chromadb", None)
    with pytest.raises(ImportError, match=r"chroma adapter needs chromadb: pip install 'chatrecall\[chroma\]'"):
        ChromaStore(path=tmp_path)


# --------------------------------------------------------------------------- group commit (embedded writes)


def test_concurrent_upserts_are_each_committed_when_they_return(tmp_path: Path) -> None:
    # Embedded writes go through one writer thread that merges concurrent upserts; every caller must
    # find its own records stored the moment its call returns, and nothing may be lost or mixed up.
    import threading

    s = ChromaStore(path=tmp_path / "db")
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        try:
            for i in range(15):
                r = rec(f"t{t}-{i}", user=f"u{t}", text=f"thread {t} item {i}")
                s.upsert("memories", [r], unit(basis((t + i) % DIM)))
                got = s.get("memories", ids=[r.id], where={"user_id": f"u{t}"})
                assert [x.text for x in got.records] == [r.text]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    try:
        assert not errors, errors[0]
        assert s.count("memories") == 8 * 15
        for t in range(8):
            assert s.count("memories", {"user_id": f"u{t}"}) == 15
    finally:
        s.close()
    reopened = ChromaStore(path=tmp_path / "db")
    try:
        assert reopened.count("memories") == 8 * 15
    finally:
        reopened.close()


def test_group_commit_merges_later_writes_over_earlier_ones_and_fails_every_caller() -> None:
    calls: list[tuple[str, list[str], list[str]]] = []
    fail = {"on": False}

    def write(collection: str, ids: list[str], emb: np.ndarray, docs: list[str], metas: list[dict[str, Any]]) -> None:
        if fail["on"]:
            raise StoreError("disk full")
        assert emb.shape == (len(ids), 2)
        calls.append((collection, ids, docs))

    gc = chroma_mod._GroupCommit(write)
    a = chroma_mod._Pending("m", ["x", "y"], np.ones((2, 2)), ["x1", "y1"], [{}, {}], chroma_mod.Future())
    b = chroma_mod._Pending("m", ["x"], np.ones((1, 2)), ["x2"], [{}], chroma_mod.Future())
    c = chroma_mod._Pending("p", ["z"], np.ones((1, 2)), ["z1"], [{}], chroma_mod.Future())
    gc._commit([a, b, c])
    assert calls == [("m", ["y", "x"], ["y1", "x2"]), ("p", ["z"], ["z1"])]  # one call per collection, last wins
    assert a.done.result() is None and b.done.result() is None and c.done.result() is None
    fail["on"] = True
    d = chroma_mod._Pending("m", ["q"], np.ones((1, 2)), ["q"], [{}], chroma_mod.Future())
    e = chroma_mod._Pending("m", ["r"], np.ones((1, 2)), ["r"], [{}], chroma_mod.Future())
    gc._commit([d, e])
    for p in (d, e):
        with pytest.raises(StoreError, match="disk full"):
            p.done.result()
    gc.close()  # never started: nothing to join


def test_group_commit_caps_records_per_write_and_keeps_order() -> None:
    # An upsert that would take a group past max_records starts the next group: no write exceeds the cap
    # (unless a single upsert is larger), and writes reach Chroma in the order they were queued.
    calls: list[list[str]] = []

    def write(collection: str, ids: list[str], emb: np.ndarray, docs: list[str], metas: list[dict[str, Any]]) -> None:
        calls.append(list(ids))

    gc = chroma_mod._GroupCommit(write, max_records=4)
    sizes = {"a": 3, "b": 3, "c": 1, "d": 5, "e": 2, "f": 2}
    pending = []
    for name, n in sizes.items():
        ids = [f"{name}{i}" for i in range(n)]
        p = chroma_mod._Pending("m", ids, np.ones((n, 2)), ids, [{}] * n, chroma_mod.Future())
        pending.append(p)
        gc._queue.put(p)
    gc._queue.put(None)
    gc._loop()  # drains the queue in this thread, then stops at the sentinel
    assert calls == [["a0", "a1", "a2"], ["b0", "b1", "b2", "c0"], ["d0", "d1", "d2", "d3", "d4"],
                     ["e0", "e1", "f0", "f1"]]
    assert all(p.done.result() is None for p in pending)


def _child_pid(s: ChromaStore) -> int:
    assert s._child is not None and s._child.proc is not None
    return int(s._child.proc.pid)


def _gone(pid: int, timeout: float = 15.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with contextlib.suppress(OSError):  # a zombie nobody reaps (e.g. no init in a container) is gone too
            if "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text():
                return True
        try:  # our own child: reap it so it does not linger as a zombie
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


@pytest.mark.server
def test_server_process_serves_the_same_files_as_the_embedded_store(tmp_path: Path) -> None:
    path = tmp_path / "db"
    records = [rec("a", entities=("x",), k="v"), rec("b", user="u2")]
    emb = unit(basis(0), basis(1))
    with ChromaStore(path=path) as embedded:  # written in-process ...
        embedded.upsert("memories", records[:1], emb[:1])
    child = ChromaStore(path=path, server_process=True)  # ... read and extended through the child
    pid = _child_pid(child)
    try:
        assert not child.shared and child.snapshot_dir == path / "chatrecall-snapshots" / "chatrecall"
        assert child.get("memories", ids=["a"]).records == records[:1]
        child.upsert("memories", records[1:], emb[1:])
        assert [h.record.id for h in child.query("memories", basis(1), 1, {"user_id": "u2"})] == ["b"]
    finally:
        child.close()
    assert _gone(pid), "close() must stop the server process"
    with ChromaStore(path=path) as reopened:  # and what the child wrote is in the files
        batch = reopened.get("memories", ids=["a", "b"], include_embeddings=True)
        assert batch.records == records
        assert batch.embeddings is not None
        np.testing.assert_allclose(batch.embeddings, emb, atol=1e-6)
    with pytest.raises(ConfigError, match="server_process"):
        ChromaStore(url="http://127.0.0.1:1", server_process=True)


@pytest.mark.server
def test_server_process_dies_with_its_parent_and_keeps_acknowledged_writes(tmp_path: Path) -> None:
    # The parent is SIGKILLed right after its writes were acknowledged: no close(), no atexit. The server
    # process must not outlive it (it would hold the store's files), and every acknowledged write is kept.
    path = tmp_path / "db"
    code = f"""
        import os, signal, numpy as np
        from chatrecall.adapters.chroma import ChromaStore
        from chatrecall.core._types import Record
        s = ChromaStore(path={str(path)!r}, server_process=True)
        for i in range(20):
            r = Record(id=f"r{{i}}", text=f"turn {{i}}", user_id="u1", session_id="s1", role="user",
                       timestamp=1.0, seq=i, entities=(), metadata={{}})
            s.upsert("memories", [r], np.eye(8, dtype=np.float32)[[i % 8]])
        print(s._child.proc.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == -signal.SIGKILL, out.stderr[-3000:]
    assert _gone(int(out.stdout.split()[0])), "the server process outlived its parent"
    with ChromaStore(path=path) as reopened:
        assert sorted(reopened.ids("memories")) == sorted(f"r{i}" for i in range(20))


def test_records_another_process_wrote_are_found(tmp_path: Path) -> None:
    # nu49: documents added from Python while `chatrecall mcp` held the same embedded store. The server's Chroma
    # client keeps its vector index in its process: every filtered query failed ("Error finding id"), old
    # documents included, until the server restarted. The store opens its client again and answers.
    store = ChromaStore(path=tmp_path / "db")
    try:
        store.upsert("corpus", [rec("a")], unit(basis(0)))
        assert [h.record.id for h in store.query("corpus", basis(0), 3, {"user_id": ("u1", "u2")})] == ["a"]
        code = textwrap.dedent(f"""
            import numpy as np
            from chatrecall.adapters.chroma import ChromaStore
            from chatrecall.core._types import Record
            s = ChromaStore(path={str(tmp_path / "db")!r})
            rows = np.eye({DIM}, dtype=np.float32)[1:3]
            s.upsert("corpus", [Record(id=i, text="text of " + i, user_id="u1", session_id="s1", role="user",
                                       timestamp=1.0) for i in ("b", "c")], rows)
            s.close()
        """)
        subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
        hits = store.query("corpus", basis(1), 3, {"user_id": ("u1", "u2")})
        assert hits[0].record.id == "b" and {h.record.id for h in hits} == {"a", "b", "c"}
        store.upsert("corpus", [rec("d")], unit(basis(3)))  # and it still writes
        assert store.count("corpus") == 4
    finally:
        store.close()


def test_a_client_error_names_another_writer_when_it_may_be_one(tmp_path: Path) -> None:
    store = ChromaStore(path=tmp_path / "db")
    try:
        err = store._translate("query 'corpus'", RuntimeError("Error executing plan: Internal error: Error finding id"))
        assert "another process may have written to this embedded store" in str(err) and "--url" in str(err)
    finally:
        store.close()
