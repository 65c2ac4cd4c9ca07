"""``chatrecall mcp``: chatrecall as an MCP server (official ``mcp`` SDK, ``MCPServer``).

Tools (none takes a user argument: the user is the server's or the token's):

* ``remember(text, session_id?)`` - store a turn.
* ``recall(message, k?)`` - the gated, budgeted retrieval: route, reasons,
  items with scores and the formatted context block.
* ``pin(text)`` / ``unpin(pin_id)`` / ``list_pins()`` - standing constraints.
* ``forget(session_id?)`` - delete the user's memories (or one session's).

Who the user is:

* stdio (default): the server is bound to one user, ``--user``.
* streamable HTTP (``--http PORT``): either bound to one user (``--user``;
  anyone who can reach the port acts as that user, so it listens on
  127.0.0.1 unless ``--host`` says otherwise), or ``--auth-file tokens.json``
  mapping bearer tokens to users (``{"<token>": "<user_id>"}``). A request
  without a valid token is refused with 401 (RFC 6750: without a bearer token
  the challenge is a bare ``Bearer`` and the body says how to send one; a
  token the server does not know is ``invalid_token``), and an MCP session
  stays bound to the token that opened it.

Example:
    >>> server = build_server(fake_engine(), user_id="u1")  # doctest: +SKIP
    >>> server.run()  # stdio  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .adapters._guard import require

require("mcp.server.mcpserver", "mcp", package="mcp")

from mcp.server.auth.middleware.auth_context import get_access_token  # noqa: E402
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, RequireAuthMiddleware  # noqa: E402
from mcp.server.auth.provider import AccessToken  # noqa: E402
from mcp.server.auth.settings import AuthSettings  # noqa: E402
from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402
from pydantic import AnyHttpUrl  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.datastructures import Headers  # noqa: E402
from starlette.routing import Route  # noqa: E402
from starlette.types import Receive, Scope, Send  # noqa: E402

from ._version import __version__  # noqa: E402
from .adapters._common import check_engine  # noqa: E402
from .core import (  # noqa: E402
    ChatRecall,
    ChatRecallError,
    ConfigError,
    RetrievalResult,
    canonical_role,
    check_id,
    keywords_checked,
)

__all__ = ["DEFAULT_SESSION", "TokenFileVerifier", "build_server", "load_auth_file", "serve"]

logger = logging.getLogger(__name__)

#: Session of turns stored without a ``session_id``.
DEFAULT_SESSION = "mcp"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def load_auth_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read ``{token: user_id}`` from a JSON file.

    Raises:
        ConfigError: The file is missing, not JSON, not an object of
            non-empty strings, or a token is shorter than 16 characters.
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"--auth-file {str(p)!r} cannot be read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--auth-file {str(p)!r} is not JSON ({exc}): write {{\"<token>\": \"<user_id>\"}}") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"--auth-file {str(p)!r} must hold a non-empty JSON object {{\"<token>\": \"<user_id>\"}}")
    for token, user in data.items():
        if not isinstance(token, str) or len(token) < 16 or token != token.strip():
            raise ConfigError(f"--auth-file {str(p)!r}: every token must be a string of 16+ characters without "
                              f"surrounding spaces (one is {len(token) if isinstance(token, str) else token!r} long)")
        if not isinstance(user, str) or not user.strip():
            raise ConfigError(f"--auth-file {str(p)!r}: the user of a token must be a non-empty string, got {user!r}")
    return dict(data)


class TokenFileVerifier:
    """Bearer tokens -> users, from a ``{token: user_id}`` mapping (tokens kept only as hashes).

    Example:
        >>> v = TokenFileVerifier({"s3cret-token-for-alice": "alice"})
    """

    def __init__(self, tokens: Mapping[str, str]) -> None:
        self._users = {_digest(t): u for t, u in tokens.items()}

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access token of ``token``'s user (``client_id`` = user id), or None."""
        user = self._users.get(_digest(token))
        if user is None:
            return None
        return AccessToken(token=_digest(token), client_id=user, scopes=["chatrecall"], subject=user)


#: The 401 body of a request without a bearer token (what to send; a client may not know the server wants one).
TOKEN_REQUIRED = ("A bearer token is required: send the header 'Authorization: Bearer <token>' with a token of the "
                  "server's --auth-file")
#: The 401 description of a token the server does not know (the token itself is never echoed).
TOKEN_NOT_RECOGNISED = ("The bearer token is not recognised by this server: check it against the server's --auth-file "
                        "(Authorization: Bearer <token>, the token exactly as written there)")


def _bearer_token(scope: Scope) -> str | None:
    """The non-empty token of the request's ``Authorization: Bearer <token>`` header, else None."""
    header = Headers(scope=scope).get("authorization") or ""
    scheme, _, token = header.partition(" ")
    return (token.strip() or None) if scheme.lower() == "bearer" else None


class _TokenRequired(RequireAuthMiddleware):
    """The SDK's bearer check, with its two 401s told apart as RFC 6750 does.

    The SDK answers a request without a token and one with a token it does not know alike (``invalid_token``,
    "Authentication required"). Without a bearer token (none, or another scheme) the challenge is ``Bearer``
    with no error code (RFC 6750 section 3.1; ``resource_metadata`` kept for OAuth discovery) and the body says
    how to send one; a token the verifier refused is ``invalid_token``, saying it is not recognised. An
    authenticated request goes to the SDK's check of the required scopes unchanged.
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if isinstance(scope.get("user"), AuthenticatedUser):
            await super().__call__(scope, receive, send)
        elif _bearer_token(scope) is not None:
            await self._send_auth_error(send, status_code=401, error="invalid_token", description=TOKEN_NOT_RECOGNISED)
        else:
            challenge = "Bearer" if self.resource_metadata_url is None else \
                f'Bearer resource_metadata="{self.resource_metadata_url}"'
            body = json.dumps({"error_description": TOKEN_REQUIRED}).encode()
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode()),
                                    (b"www-authenticate", challenge.encode())]})
            await send({"type": "http.response.body", "body": body})


def _summary(res: RetrievalResult) -> dict[str, Any]:
    return {
        "route": res.route.value,
        "gate_route": res.gate.route.value,
        "confidence": res.gate.confidence,
        "reasons": [{"category": r.category, "match": r.match, "weight": r.weight} for r in res.gate.reasons],
        "items": [
            {"id": i.id, "text": i.text, "source": i.source, "score": i.score, "components": dict(i.components),
             "why": i.why, "session_id": i.record.session_id if i.record else None, "title": i.title,
             "tier": i.tier, "tokens": i.tokens}
            for i in res.items
        ],
        "pins": [{"id": p.id, "text": p.text} for p in res.pins],
        "tokens_used": res.tokens_used,
        "notes": list(res.notes),
        "degraded": res.degraded,  # the store did not answer: what came back is the cached index's, or nothing
        "context": res.context,
        "at": res.at,
    }


#: JSON schema types as a tool's error names them.
_JSON_TYPE_NAMES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
                    "null": "null", "object": "an object", "array": "a list"}


def _json_types(prop: Mapping[str, Any]) -> list[str]:
    """The JSON types a tool argument's schema allows ("anyOf" of a union: ``str | None``), [] when it says none."""
    if "type" in prop:
        t = prop["type"]
        return list(t) if isinstance(t, list) else [t]
    return [t for alt in prop.get("anyOf", ()) for t in _json_types(alt)]


def _is_json_type(value: object, t: str) -> bool:
    if t == "string":
        return isinstance(value, str)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "null":
        return value is None
    return True  # objects, lists: the tool's own check


class _StrictArgsServer(MCPServer):
    """An ``MCPServer`` whose tools refuse an argument they do not take, naming it and what they take.

    The SDK's argument models ignore unknown keys: ``remember`` with ``user_id="dave"`` stored the turn for the
    server's user and said nothing, and ``recall`` with ``query=`` failed only on the missing ``message`` (nu46).
    Over HTTP with tokens, its bearer check tells a missing token from an unknown one (:class:`_TokenRequired`).
    """

    #: Tool name -> its input schema, read on the first call (every tool is registered by build_server before the
    #: server runs), not listed again on every call.
    _schemas: dict[str, Mapping[str, Any]] | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self._schemas is None:
            self._schemas = {t.name: t.input_schema or {} for t in await self.list_tools()}
        schema = self._schemas.get(name)
        if schema is not None:
            self._check_arguments(name, schema, arguments or {})
        return await super().call_tool(name, arguments, context)

    @staticmethod
    def _check_arguments(name: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        """Refuse an argument the tool does not take, a missing one and one of the wrong type, each named in our
        words (the SDK's own check answers a wrong type with pydantic's text and a link: nu49)."""
        props: Mapping[str, Any] = schema.get("properties", {})
        takes = frozenset(props)
        extra = sorted(set(arguments) - takes)
        if extra:
            hint = (" The server decides the user (the --user it runs for, or the bearer token's): no tool takes a "
                    "user id." if {"user", "user_id", "userid"} & set(extra) else "")
            took = f"it takes {', '.join(map(repr, sorted(takes)))}" if takes else "it takes no arguments"
            raise ToolError(f"{name}: unknown argument{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))}; "
                            f"{took}.{hint}")
        missing = [a for a in schema.get("required", ()) if a not in arguments]
        if missing:
            raise ToolError(f"{name}: missing argument{'s' if len(missing) > 1 else ''} "
                            f"{', '.join(map(repr, missing))}; it takes {', '.join(map(repr, sorted(takes)))}.")
        for arg, value in arguments.items():
            allowed = _json_types(props[arg])
            if allowed and not any(_is_json_type(value, t) for t in allowed):
                raise ToolError(f"{name}: {arg}={value!r:.80} is invalid: must be "
                                f"{' or '.join(_JSON_TYPE_NAMES.get(t, t) for t in allowed)}, "
                                f"got {type(value).__name__}.")

    def streamable_http_app(self, **kwargs: Any) -> Starlette:
        """The SDK's app, its bearer check (on a token server) replaced by :class:`_TokenRequired`."""
        app = super().streamable_http_app(**kwargs)
        for route in app.routes:
            if isinstance(route, Route) and type(route.app) is RequireAuthMiddleware:
                sdk = route.app
                route.app = _TokenRequired(sdk.app, sdk.required_scopes, sdk.resource_metadata_url)
        return app


@keywords_checked
def build_server(
    engine: ChatRecall,
    *,
    user_id: str | None = None,
    tokens: Mapping[str, str] | None = None,
    session_id: str = DEFAULT_SESSION,
    public_url: str = "http://127.0.0.1:8000",
    name: str = "chatrecall",
) -> MCPServer:
    """An MCP server exposing one engine's memory to one user, or to token holders.

    Args:
        engine: The :class:`ChatRecall` engine.
        user_id: Bind every call to this user (stdio, or HTTP on a trusted port).
        tokens: ``{token: user_id}``; each call acts for its bearer token's user
            (HTTP only). Exactly one of ``user_id`` and ``tokens``.
        session_id: Session of turns stored without one, and of ``recall``'s
            recent window.
        public_url: The server's base URL (names the protected resource in
            the 401 answers of a token server).
        name: Server name shown to clients.

    Raises:
        ConfigError: ``engine`` is not a :class:`ChatRecall`, neither or both of
            ``user_id`` and ``tokens``, or a bad id.
    """
    if (user_id is None) == (tokens is None):
        raise ConfigError("give exactly one of user_id=... (one user) or tokens={token: user_id} (bearer tokens)")
    engine = check_engine(engine, "build_server")
    try:
        bound = None if user_id is None else check_id("user_id", user_id, engine.limits)
        default_session = check_id("session_id", session_id, engine.limits)
        for user in (tokens or {}).values():
            check_id("user_id (in the auth file)", user, engine.limits)
    except ChatRecallError as exc:
        raise ConfigError(str(exc)) from None

    kwargs: dict[str, Any] = {}
    if tokens is not None:
        kwargs["token_verifier"] = TokenFileVerifier(tokens)
        # The verifier only knows tokens issued for this server: no audience to check.
        url = AnyHttpUrl(public_url)
        kwargs["auth"] = AuthSettings(issuer_url=url, resource_server_url=url, validate_token_resource=False)
    server: MCPServer = _StrictArgsServer(name, version=__version__, log_level="WARNING",
                                  instructions="Long-term memory of the user: remember turns, recall what matters "
                                               "for a message, pin standing constraints.", **kwargs)

    def caller(ctx: Context) -> str:
        """The user of this call: the bound one, or the bearer token's."""
        if bound is not None:
            return bound
        request = getattr(ctx.request_context, "request", None) if ctx is not None else None
        user = getattr(request, "scope", {}).get("user") if request is not None else None
        token = user.access_token if isinstance(user, AuthenticatedUser) else get_access_token()
        if token is None or not token.client_id:
            raise ToolError("unauthenticated: send Authorization: Bearer <token>")
        return token.client_id

    async def run(coro: Any) -> Any:
        try:
            return await coro
        except ChatRecallError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(description="Store a message (a conversation turn) in the user's long-term memory. role: 'user' "
                             "(default) for the user's message, 'assistant' for the assistant's own reply. "
                             "session_id: the conversation it belongs to (default: the server's --session). "
                             "timestamp: when it was said (ISO 8601 or Unix seconds; default: now), for "
                             "imported histories.")
    async def remember(text: str, ctx: Context, session_id: str | None = None, role: str = "user",
                       timestamp: str | float | None = None) -> dict[str, Any]:
        sid = session_id or default_session
        mid = await run(engine.aadd(text, user_id=caller(ctx), session_id=sid, role=role, timestamp=timestamp))
        # the role as stored: a chat role's other spellings are made canonical ("bot", "ai" -> "assistant"; nu46 read
        # the "bot" this echoed as stored as given)
        return {"id": mid, "session_id": sid, "role": canonical_role(role)}

    @server.tool(description="What the assistant should know to answer this message: decides whether memory is "
                             "needed (route and reasons), returns the items with scores and the context block. "
                             "session_id: the conversation the message is part of (its recent turns are the "
                             "recent window, not recalled again; default: the server's --session).")
    async def recall(message: str, ctx: Context, k: int | None = None,
                     session_id: str | None = None) -> dict[str, Any]:
        res = await run(engine.aretrieve(message, user_id=caller(ctx), session_id=session_id or default_session,
                                         k=k))
        return _summary(res)

    @server.tool(description="Add a document (notes, a policy, a manual, a quote) to the user's own documents: "
                             "recall searches it beside the conversation. title: the document's name, searched with "
                             "every passage and shown as its label. doc_id: adding again under the same id replaces "
                             "the document. Documents shared by every user are added by the operator (Python "
                             "add_documents), not through this tool.")
    async def add_document(text: str, ctx: Context, title: str | None = None,
                           doc_id: str | None = None) -> dict[str, Any]:
        doc: dict[str, Any] = {"text": text}
        if title is not None:
            doc["title"] = title
        if doc_id is not None:
            doc["id"] = doc_id
        ids = await run(engine.aadd_documents([doc], user_id=caller(ctx)))
        return {"chunk_ids": ids, "chunks": len(ids), "title": title}

    @server.tool(description="Pin a standing constraint (e.g. 'We use Postgres, not SQLite'); it is included in "
                             "every recall until unpinned.")
    async def pin(text: str, ctx: Context) -> dict[str, Any]:
        p = await run(engine.apin(text, user_id=caller(ctx)))
        return {"id": p.id, "text": p.text}

    @server.tool(description="Remove a pinned constraint by its id (see list_pins).")
    async def unpin(pin_id: str, ctx: Context) -> dict[str, Any]:
        p = await run(engine.aunpin(pin_id, user_id=caller(ctx)))
        return {"id": p.id, "text": p.text}

    @server.tool(description="The user's pinned constraints with their ids, oldest first.")
    async def list_pins(ctx: Context) -> dict[str, Any]:
        pins = await run(engine.apins(caller(ctx)))
        return {"pins": [{"id": p.id, "text": p.text, "session_id": p.session_id} for p in pins]}

    @server.tool(description="Delete the user's memories and pins: one session's, or all of them (and then the "
                             "user's own documents too).")
    async def forget(ctx: Context, session_id: str | None = None) -> dict[str, Any]:
        rep = await run(engine.aforget(caller(ctx), session_id))
        return {"memories": rep.memories, "pins": rep.pins, "session_id": rep.session_id}

    return server


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@keywords_checked
def serve(
    engine: ChatRecall,
    *,
    user_id: str | None = None,
    auth_file: str | os.PathLike[str] | None = None,
    http_port: int | None = None,
    host: str = "127.0.0.1",
    session_id: str = DEFAULT_SESSION,
) -> None:
    """Run the server: stdio for one user, or streamable HTTP on ``http_port``.

    Raises:
        ConfigError: An invalid combination (tokens over stdio, a port out of
            range, neither ``user_id`` nor ``auth_file``).
    """
    tokens = load_auth_file(auth_file) if auth_file is not None else None
    if http_port is None:
        if tokens is not None or user_id is None:
            raise ConfigError("a stdio server is bound to one user: pass --user USER (--auth-file needs --http PORT)")
        build_server(engine, user_id=user_id, session_id=session_id).run("stdio")
        return
    if not isinstance(http_port, int) or not 1 <= http_port <= 65535:
        raise ConfigError(f"--http {http_port!r} is invalid: a TCP port from 1 to 65535")
    if (user_id is None) == (tokens is None):
        raise ConfigError("over HTTP pass exactly one of --user USER (bound to one user) or --auth-file FILE (tokens)")
    if user_id is not None and not _is_loopback(host):
        print(f"warning: --user {user_id!r} on {host}: anyone reaching port {http_port} acts as that user; "
              "use --auth-file for a shared network", file=sys.stderr)
    url_host = f"[{host}]" if ":" in host else host
    _check_port_free(host, http_port)
    server = build_server(engine, user_id=user_id, tokens=tokens, session_id=session_id,
                          public_url=f"http://{url_host}:{http_port}")
    who = f"user {user_id!r}" if user_id is not None else f"the {len(tokens or {})} tokens of {auth_file}"
    print(f"chatrecall mcp: streamable HTTP at http://{url_host}:{http_port}{HTTP_PATH} for {who}", file=sys.stderr)
    server.run("streamable-http", host=host, port=http_port, streamable_http_path=HTTP_PATH)


#: Where the streamable HTTP endpoint is served (the SDK's default path, stated).
HTTP_PATH = "/mcp"


def _check_port_free(host: str, port: int) -> None:
    """Refuse at once a port another process holds (uvicorn would log a raw bind error and exit)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise ConfigError(f"--http {port} is invalid: {host}:{port} cannot be served ({exc.strerror or exc}); "
                              "choose a free port") from None
