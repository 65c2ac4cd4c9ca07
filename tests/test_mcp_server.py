"""``chatrecall mcp`` through the official SDK's real client: stdio and streamable HTTP, with refusals."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.server.mcpserver")

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from chatrecall.core import ConfigError
from chatrecall.mcp_server import build_server, load_auth_file, serve
from chatrecall.testing import fake_engine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

TOKENS = {"alice-token-0123456789": "alice", "bob-token-0123456789ab": "bob"}
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
QUESTION = "Remember which database the billing service runs on?"


def _cli(path: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "chatrecall", "--path", str(path), "mcp", *args]


def _stdio(path: Path, *args: str) -> Client:
    return Client(StdioServerParameters(command=sys.executable, args=_cli(path, *args)[1:], env=ENV))


def _http(url: str, token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=60)))


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mcp server exited {proc.returncode}: {log.read_text()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"mcp server not up on {port}: {log.read_text()[-2000:]}")


def _start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    log = tmp_path / f"mcp-{port}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(_cli(tmp_path / "db", "--http", str(port), *args), env=ENV, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    _wait_port(port, proc, log)
    return proc, f"http://127.0.0.1:{port}/mcp"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One token-checking HTTP server for the module (starting one takes seconds).

    The tests that share it are order-independent: only test_http_tokens_keep_users_apart stores anything
    (as alice), the refusal tests are turned away before any tool runs, and the session test opens a session
    as alice and lists nobody's pins; what each test asserts about alice and bob holds whichever ran before.
    """
    tmp_path = tmp_path_factory.mktemp("token-server")
    auth = tmp_path / "tokens.json"
    auth.write_text(json.dumps(TOKENS))
    proc, url = _start(tmp_path, "--auth-file", str(auth), "--embedder", "hash")
    try:
        yield url
    finally:
        _stop(proc)


async def _call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    res = await client.call_tool(tool, args)
    assert not res.is_error, res.content
    assert res.structured_content is not None
    return res.structured_content


async def _conversation(client: Client) -> None:
    """The whole tool set, as one user."""
    names = {t.name for t in (await client.list_tools()).tools}
    assert names == {"remember", "recall", "add_document", "pin", "unpin", "list_pins", "forget"}
    for tool in (await client.list_tools()).tools:  # no tool lets a client name a user
        assert not {"user", "user_id"} & set(tool.input_schema.get("properties", {})), tool.name
    await _call(client, "remember", text="The billing service runs on Postgres 16.", session_id="last-week")
    await _call(client, "remember", text="The team offsite is in Annecy.", session_id="last-week")
    # the assistant's own reply is stored as the assistant's (chat23: every reply was stored as the user's)
    said = await _call(client, "remember", text="Noted, the offsite is in Annecy.", session_id="last-week",
                       role="assistant")
    assert said["role"] == "assistant"
    # a chat role's other spelling is stored canonical, and the tool says so (nu46 read the echoed "bot" as stored)
    said = await _call(client, "remember", text="Happy to help.", session_id="last-week", role="bot")
    assert said["role"] == "assistant"
    res = await _call(client, "recall", message=QUESTION, k=2)
    assert res["route"] == "memory" and res["reasons"] and res["degraded"] is False
    assert res["items"][0]["text"] == "The billing service runs on Postgres 16."
    assert isinstance(res["items"][0]["score"], float) and res["items"][0]["components"]
    assert "Postgres 16" in res["context"]
    pin = await _call(client, "pin", text="Answer in British English.")
    assert [p["id"] for p in (await _call(client, "list_pins"))["pins"]] == [pin["id"]]
    assert "British English" in (await _call(client, "recall", message="hello there"))["context"]
    await _call(client, "unpin", pin_id=pin["id"])
    assert (await _call(client, "list_pins"))["pins"] == []
    bad = await client.call_tool("unpin", {"pin_id": "pin-unknown"})
    assert bad.is_error and "no pin with id 'pin-unknown'" in bad.content[0].text  # type: ignore[union-attr]
    bad = await client.call_tool("remember", {"text": "   "})
    assert bad.is_error and "must not be empty" in bad.content[0].text  # type: ignore[union-attr]
    bad = await client.call_tool("remember", {"text": "hi", "role": ""})
    assert bad.is_error and "role" in bad.content[0].text  # type: ignore[union-attr]
    assert (await _call(client, "forget", session_id="last-week"))["memories"] == 4
    assert (await _call(client, "recall", message=QUESTION))["items"] == []
    # helper-86: recall had no session (the recent window was always the server's --session) and turns
    # could not be dated (an imported history showed the import's wall-clock time)
    await _call(client, "remember", text="My flight to Lisbon lands at 18:40.", session_id="trip",
                timestamp="2026-03-02T09:15:00")
    elsewhere = await _call(client, "recall", message="when does my flight to Lisbon land?")
    assert [i["text"] for i in elsewhere["items"]] == ["My flight to Lisbon lands at 18:40."]
    assert "2026-03-02" in elsewhere["context"]
    assert isinstance(elsewhere["at"], float) and elsewhere["at"] > 1_772_440_000  # decided now, after the turn
    same = await _call(client, "recall", message="when does my flight to Lisbon land?", session_id="trip")
    assert same["items"] == []  # the conversation's own recent turn: not recalled again
    bad = await client.call_tool("remember", {"text": "hi", "timestamp": "next tuesday"})
    assert bad.is_error and "timestamp" in bad.content[0].text  # type: ignore[union-attr]
    # nu46: an argument a tool does not take was dropped in silence (user_id: stored for the server's user)
    before = [i["id"] for i in (await _call(client, "recall", message="who is dave?", session_id="other"))["items"]]
    bad = await client.call_tool("remember", {"text": "Dave likes tea", "user_id": "dave"})
    text = bad.content[0].text  # type: ignore[union-attr]
    assert bad.is_error and "unknown argument 'user_id'" in text and "no tool takes a user id" in text, text
    assert "'text'" in text and "'session_id'" in text, text
    bad = await client.call_tool("recall", {"query": "tea?"})
    text = bad.content[0].text  # type: ignore[union-attr]
    assert bad.is_error and "unknown argument 'query'" in text and "'message'" in text, text
    assert [i["id"] for i in (await _call(client, "recall", message="who is dave?", session_id="other"))["items"]] \
        == before  # nothing was stored
    # nu49: a wrong type or a missing argument came back as pydantic's text and a link; a tool without arguments
    # was said to take "."
    for tool, args, words in [("recall", {"message": 123}, "message=123 is invalid: must be a string, got int"),
                              ("recall", {"message": "hi", "k": "five"}, "k='five' is invalid: must be an integer"),
                              ("recall", {}, "missing argument 'message'"),
                              ("list_pins", {"user": "x"}, "it takes no arguments")]:
        bad = await client.call_tool(tool, args)
        text = bad.content[0].text  # type: ignore[union-attr]
        assert bad.is_error and words in text and "pydantic" not in text, text
    # nu49: documents through the server itself (a second process writing an embedded store is not seen by the
    # server's corpus search), the user's own, with the title in the items
    added = await _call(client, "add_document", title="Greenfield Allotments - water policy", doc_id="water",
                        text="Hosepipes may not be connected to society taps. Sprinklers are forbidden on every plot.")
    assert added["chunks"] == 1 and added["title"] == "Greenfield Allotments - water policy"
    res = await _call(client, "recall", message="Are sprinklers forbidden on every plot? Can hosepipes be connected to society taps?",
                      session_id="docs")
    passages = [i for i in res["items"] if i["source"] == "corpus"]
    assert passages and passages[0]["title"] == "Greenfield Allotments - water policy", res
    assert all(i["title"] is None for i in res["items"] if i["source"] == "memory")
    assert {"tier", "tokens"} <= set(passages[0])


# ---------------------------------------------------------------- stdio
def test_stdio_server_hash(tmp_path: Path) -> None:
    async def main() -> None:
        async with _stdio(tmp_path / "db", "--user", "alice", "--embedder", "hash") as client:
            await _conversation(client)

    asyncio.run(main())


@pytest.mark.model
def test_stdio_server_real_model_and_user_binding(tmp_path: Path) -> None:
    async def main() -> None:
        async with _stdio(tmp_path / "db", "--user", "alice") as client:
            await _conversation(client)
            await _call(client, "remember", text="Alice's secret: the vault code is 4711.", session_id="s9")
        async with _stdio(tmp_path / "db", "--user", "bob") as client:  # same store, other user
            res = await _call(client, "recall", message="Remember the vault code we discussed?")
            assert res["items"] == [] and "4711" not in res["context"]

    asyncio.run(main())


# ---------------------------------------------------------------- HTTP with tokens
def test_http_tokens_keep_users_apart(token_server: str) -> None:
    async def main() -> None:
        async with _http(token_server, "alice-token-0123456789") as alice:
            await _conversation(alice)
            await _call(alice, "remember", text="The billing service runs on Postgres 16.", session_id="s1")
            await _call(alice, "pin", text="Alice pins: use metric units.")
            # a document alice adds is hers alone (add_document stores it private to the caller)
            await _call(alice, "add_document", title="Alice's runbook", doc_id="runbook",
                        text="Billing failover: promote the Postgres 16 replica in eu-west, then rotate the DSN.")
        async with _http(token_server, "bob-token-0123456789ab") as bob:
            res = await _call(bob, "recall", message=QUESTION)
            assert res["items"] == [] and "Postgres" not in res["context"] and "metric" not in res["context"]
            res = await _call(bob, "recall", message="How do I do the billing failover? Promote the Postgres replica?")
            assert not any("failover" in i["text"] for i in res["items"]) and "runbook" not in res["context"], res
            assert (await _call(bob, "list_pins"))["pins"] == []
            bad = await bob.call_tool("forget", {})
            assert bad.is_error and "nothing stored for user 'bob'" in bad.content[0].text  # type: ignore[union-attr]
        async with _http(token_server, "alice-token-0123456789") as alice:
            pins = (await _call(alice, "list_pins"))["pins"]
            assert [p["text"] for p in pins] == ["Alice pins: use metric units."]
            async with _http(token_server, "bob-token-0123456789ab") as bob:  # Bob cannot unpin Alice's pin
                bad = await bob.call_tool("unpin", {"pin_id": pins[0]["id"]})
                assert bad.is_error and "for user 'bob'" in bad.content[0].text  # type: ignore[union-attr]
            assert len((await _call(alice, "list_pins"))["pins"]) == 1

    asyncio.run(main())


@pytest.mark.parametrize("token", [None, "wrong-token-0123456789", "alice-token-0123456789x"])
def test_http_without_a_valid_token_is_refused(token_server: str, token: str | None) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    r = httpx2.post(token_server, json=body, headers={**headers, "Accept": "application/json, text/event-stream"})
    assert r.status_code == 401
    assert r.headers["www-authenticate"].startswith("Bearer")

    async def main() -> None:
        async with _http(token_server, token) as client:
            await client.list_tools()

    with pytest.raises(BaseException):  # noqa: B017 - the client fails to connect (401), whatever it wraps it in
        asyncio.run(main())


def test_http_missing_and_unknown_tokens_get_different_401s(token_server: str) -> None:
    """First-hour finding: no token and a wrong token both got 401 invalid_token "Authentication required"; RFC 6750
    tells them apart (no token: a bare Bearer challenge and how to send one; unknown token: invalid_token)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    for headers in ({}, {"Authorization": "Basic YWxpY2U6c2VjcmV0"}, {"Authorization": "Bearer"}):
        r = httpx2.post(token_server, json=body, headers={**accept, **headers})
        assert r.status_code == 401, (headers, r.text)
        challenge = r.headers["www-authenticate"]
        assert challenge.split(" ", 1)[0] == "Bearer" and "error" not in challenge, challenge  # no error code: 3.1
        assert "resource_metadata=" in challenge, challenge  # kept for the clients that discover OAuth through it
        description = r.json()["error_description"]
        assert "bearer token is required" in description and "Authorization: Bearer <token>" in description, r.text
    for token in ("wrong-token-0123456789", "alice-token-0123456789x"):
        r = httpx2.post(token_server, json=body, headers={**accept, "Authorization": f"Bearer {token}"})
        assert r.status_code == 401, r.text
        assert r.json()["error"] == "invalid_token", r.text
        assert "not recognised" in r.json()["error_description"], r.text
        assert r.headers["www-authenticate"].startswith('Bearer error="invalid_token"'), r.headers
        assert token not in r.text and token not in r.headers["www-authenticate"]  # never echoed
    r = httpx2.post(token_server, json=body, headers={**accept, "Authorization": "bearer alice-token-0123456789"})
    assert r.status_code != 401, r.text  # the scheme is case-insensitive, as the SDK reads it


def test_http_session_stays_bound_to_its_token(token_server: str) -> None:
    """Bob cannot ride Alice's MCP session by sending her session id with his token."""
    accept = {"Accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    r = httpx2.post(token_server, json=init, headers={**accept, "Authorization": "Bearer alice-token-0123456789"})
    assert r.status_code == 200
    sid = r.headers["mcp-session-id"]
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_pins", "arguments": {}}}
    r = httpx2.post(token_server, json=call, headers={**accept, "Authorization": "Bearer bob-token-0123456789ab",
                                                      "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"})
    assert r.status_code in (403, 404), r.text


def test_http_bound_to_one_user(tmp_path: Path) -> None:
    proc, url = _start(tmp_path, "--user", "carol", "--embedder", "hash")
    try:
        async def main() -> None:
            async with _http(url, None) as client:
                await _call(client, "remember", text="The billing service runs on Postgres 16.", session_id="s1")
                res = await _call(client, "recall", message=QUESTION)
                assert [i["text"] for i in res["items"]] == ["The billing service runs on Postgres 16."]

        asyncio.run(main())
    finally:
        _stop(proc)


# ---------------------------------------------------------------- configuration errors
def test_configuration_errors(tmp_path: Path) -> None:
    cr = fake_engine()
    # The same error type and message as the LangChain / LlamaIndex / LangGraph adapters.
    with pytest.raises(ConfigError, match="build_server: engine='not an engine' is invalid"):
        build_server("not an engine", user_id="a")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="exactly one"):
        build_server(cr)
    with pytest.raises(ConfigError, match="exactly one"):
        build_server(cr, user_id="a", tokens=TOKENS)
    with pytest.raises(ConfigError, match="user_id"):
        build_server(cr, user_id="")
    with pytest.raises(ConfigError, match="bound to one user"):
        serve(cr)
    with pytest.raises(ConfigError, match="needs --http"):
        auth = tmp_path / "t.json"
        auth.write_text(json.dumps(TOKENS))
        serve(cr, auth_file=auth)
    with pytest.raises(ConfigError, match="exactly one"):
        serve(cr, http_port=8080)
    with pytest.raises(ConfigError, match="65535"):
        serve(cr, user_id="a", http_port=70000)
    for content, msg in [("{", "not JSON"), ("[]", "non-empty JSON object"), ('{"short": "a"}', "16"),
                         ('{"long-enough-token-123": ""}', "non-empty string")]:
        bad = tmp_path / "bad.json"
        bad.write_text(content)
        with pytest.raises(ConfigError, match=msg):
            load_auth_file(bad)
    with pytest.raises(ConfigError, match="cannot be read"):
        load_auth_file(tmp_path / "missing.json")


def test_http_says_where_it_serves_and_refuses_a_busy_port(tmp_path: Path) -> None:
    # nu46: --http printed nothing at start (the endpoint's path was nowhere), and a port in use gave a raw uvicorn
    # line instead of the CLI's one-line error
    proc, url = _start(tmp_path, "--user", "alice", "--embedder", "hash")
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    try:
        busy = subprocess.run(_cli(tmp_path / "db2", "--http", str(port), "--user", "bob", "--embedder", "hash"),
                              env=ENV, capture_output=True, text=True, timeout=120)
        assert busy.returncode != 0, busy
        lines = [ln for ln in busy.stderr.splitlines() if ln.strip()]
        assert lines == [lines[0]] and lines[0].startswith("error:") and f"--http {port}" in lines[0], busy.stderr
        assert "choose a free port" in lines[0], busy.stderr
    finally:
        _stop(proc)
    log = (tmp_path / f"mcp-{port}.log").read_text()
    assert f"chatrecall mcp: streamable HTTP at {url} for user 'alice'" in log, log


def test_cli_refuses_stdio_without_user(tmp_path: Path) -> None:
    proc = subprocess.run(_cli(tmp_path / "db", "--embedder", "hash"), env=ENV, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "--user" in proc.stdout + proc.stderr


def test_mcp_server_without_the_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)
    monkeypatch.delitem(sys.modules, "chatrecall.mcp_server", raising=False)
    with pytest.raises(ImportError, match=r"chatrecall\[mcp\]"):
        importlib.import_module("chatrecall.mcp_server")


def test_cli_without_an_extra_prints_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """helper-86: `pip install '.[mcp]'` alone, then `chatrecall mcp`, ended in a traceback."""
    from chatrecall import cli

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    monkeypatch.delitem(sys.modules, "chatrecall.adapters.sentence_transformers", raising=False)
    code = cli.main(["--path", str(tmp_path / "db"), "mcp", "--user", "alice"])
    err = capsys.readouterr().err
    assert code == 2
    assert "error:" in err and "chatrecall[embeddings]" in err and "Traceback" not in err


def test_a_server_url_that_does_not_answer_stops_the_mcp_server_at_start(tmp_path: Path) -> None:
    """helper-92 (stop 32): `chatrecall --url <wrong> mcp` started, initialised and answered every recall with
    route=memory and no items, looking healthy; `ask` and connect() refuse a wrong URL at start."""
    url = f"http://127.0.0.1:{free_port()}"
    run = subprocess.run([sys.executable, "-m", "chatrecall", "--url", url, "mcp", "--user", "x", "--embedder", "hash"],
                         env=ENV, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert run.returncode == 2, run
    assert url in run.stderr and "chroma run" in run.stderr and "Traceback" not in run.stderr
    assert run.stdout == ""  # stdout is the MCP channel


def test_stats_shows_what_the_mcp_server_did(tmp_path: Path) -> None:
    # nu49: `chatrecall stats` showed only the last CLI run's metrics, none of the server's 49 recalls
    async def main() -> None:
        async with _stdio(tmp_path / "db", "--user", "alice", "--embedder", "hash") as client:
            await _call(client, "remember", text="The billing service runs on Postgres 16.")
            for _ in range(3):
                await _call(client, "recall", message=QUESTION)

    asyncio.run(main())
    out = subprocess.run([sys.executable, "-m", "chatrecall", "--path", str(tmp_path / "db"), "stats"], env=ENV,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "metrics of the last mcp run" in text and "'alice'" in text, out.stdout
    assert "latency_ms" in text and "(n=3)" in text, out.stdout
