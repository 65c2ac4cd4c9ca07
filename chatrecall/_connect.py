"""Build a ChatRecall on the production parts: Chroma and sentence-transformers."""

from __future__ import annotations

import importlib.util
import inspect
import os
from difflib import get_close_matches
from typing import TYPE_CHECKING, Any

from .core._errors import ConfigError, StoreError, StoreUnavailableError

if TYPE_CHECKING:
    from .core import ChatRecall


def default_vector_index() -> Any:
    """The vector index :func:`connect` gives large users: usearch's HNSW when installed (``[ann]``), else None.

    The import of usearch (about 0.1 s) is paid only when a user grows past
    ``UserIndex.EXACT_MAX`` memories; finding it here costs nothing.
    """
    if importlib.util.find_spec("usearch") is None:
        return None
    from .adapters.usearch import UsearchIndexFactory

    return UsearchIndexFactory()


def _engine_params() -> list[str]:
    from .core import ChatRecall

    return [n for n in inspect.signature(ChatRecall.__init__).parameters if n not in ("self", "store", "embedder")]


def connect(
    *,
    path: str | os.PathLike[str] | None = None,
    url: str | None = None,
    model: Any = None,
    namespace: str = "chatrecall",
    timeout_s: float = 5.0,
    lazy: bool = False,
    server_process: bool = False,
    warm: bool = True,
    **engine_kwargs: Any,
) -> ChatRecall:
    """A ChatRecall over Chroma with the bundled all-MiniLM-L6-v2, fully offline.

    Every argument is checked here: a bad value raises :class:`ConfigError`
    naming it, and a server that does not answer raises
    :class:`StoreUnavailableError` naming its URL, instead of failing (or
    silently returning nothing) on a later call. Opening is fast: the embedding
    model loads and the gate is built in a background thread (``warm``), or on
    first use with ``warm=False``.

    Args:
        path: Directory of an embedded Chroma (default: ``$CHATRECALL_HOME/chroma``
            or ``~/.local/share/chatrecall/chroma``).
        url: A Chroma server (``http://host:8000``) instead of the embedded one,
            for several app processes sharing one memory.
        model: A sentence-transformers model path or instance (default: bundled MiniLM).
        namespace: Prefix of the Chroma collections, to keep apps apart.
        timeout_s: Deadline of each request to a Chroma server.
        lazy: With ``url``, do not check that the server answers now (it may
            come up later; until then reads are empty and degraded, writes raise).
        server_process: Serve the embedded store at ``path`` from a private
            Chroma server in a child process. Embedded Chroma holds the GIL
            while it writes, which stalls an asyncio event loop for tens of
            milliseconds per write; in a child process it cannot. For async
            apps on an embedded store (see ``docs/agents.md``).
        warm: Build the retrieval gate and load the embedding model in a background thread now
            (:meth:`ChatRecall.warm`), so the first turn does not wait for them (about 0.8 s on a 2-core machine). False
            for a short-lived process that only counts or lists (the CLI's ``stats``).
        **engine_kwargs: Passed to :class:`ChatRecall`: ``token_counter``,
            ``retrieval``, ``budget``, ``pins``, ``gate``, ``limits`` (config
            objects or dicts of their fields), ``entity_extractor``,
            ``max_cached_users``, ``sync_interval_s``, ``clock``, ``vector_index``
            (default: :func:`default_vector_index`; None for the built-in shortlist).

    Raises:
        ConfigError: A bad argument (the message names it and how to fix it).
        StoreUnavailableError: ``url`` does not answer (unless ``lazy=True``).

    Example:
        >>> cr = connect(path="/tmp/chatrecall-demo", retrieval={"top_k": 5})  # doctest: +SKIP
    """
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"path={path!r} is invalid: pass a directory path (str or pathlib.Path)")
    if url is not None and not isinstance(url, str):
        raise ConfigError(f"url={url!r} is invalid: pass a Chroma server URL such as 'http://localhost:8000'")
    if path is not None and url is not None:
        raise ConfigError(
            f"path={str(path)!r} and url={url!r} were both given: pass path= for an embedded store "
            "or url= for a Chroma server, not both"
        )
    if not isinstance(lazy, bool):
        raise ConfigError(f"lazy={lazy!r} is invalid: must be True or False")
    if not isinstance(server_process, bool):
        raise ConfigError(f"server_process={server_process!r} is invalid: must be True or False")
    if not isinstance(warm, bool):
        raise ConfigError(f"warm={warm!r} is invalid: must be True or False")
    if server_process and url is not None:
        raise ConfigError(
            f"server_process=True and url={url!r} were both given: server_process serves an embedded store "
            "(path=...) from a child process; with a Chroma server, pass url= alone"
        )
    known = _engine_params()
    for name in engine_kwargs:
        if name not in known:
            hint = get_close_matches(name, [*known, "path", "url", "model", "namespace", "timeout_s", "lazy",
                                            "server_process", "warm"], n=1)
            also = f" (did you mean {hint[0]!r}?)" if hint else ""
            raise ConfigError(
                f"{name}={engine_kwargs[name]!r} is not an argument of chatrecall.connect(){also}; "
                f"it accepts path, url, model, namespace, timeout_s, lazy, server_process, warm, {', '.join(known)}"
            )

    from .adapters.chroma import ChromaStore
    from .adapters.sentence_transformers import SentenceTransformerEmbedder
    from .core import ChatRecall

    engine_kwargs.setdefault("vector_index", default_vector_index())
    embedder = SentenceTransformerEmbedder(model)  # cheap: the model loads on the first embedding
    store = ChromaStore(path=path, url=url, namespace=namespace, timeout_s=timeout_s, server_process=server_process)
    try:
        engine = ChatRecall(store=store, embedder=embedder, **engine_kwargs)
        engine._owned_store = store  # opened here for the caller: engine.close() closes it
        if url is not None and not lazy:
            try:
                store.ping()
            except StoreError as exc:
                raise StoreUnavailableError(
                    f"no Chroma server answers at {url!r} ({exc}). Start one (chroma run --path DIR --port 8000), "
                    "fix the URL, or pass lazy=True to connect now and retry later"
                ) from None
    except BaseException:
        store.close()
        raise
    if warm:
        engine.warm(background=True)
    return engine
