"""Build a ChatRecall on the production parts: Chroma and sentence-transformers."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core import ChatRecall


def connect(
    *,
    path: str | os.PathLike[str] | None = None,
    url: str | None = None,
    model: Any = None,
    namespace: str = "chatrecall",
    **engine_kwargs: Any,
) -> ChatRecall:
    """A ChatRecall over Chroma with the bundled all-MiniLM-L6-v2, fully offline.

    Args:
        path: Directory of an embedded Chroma (default: ``$CHATRECALL_HOME`` or
            ``~/.local/share/chatrecall/chroma``).
        url: A Chroma server (``http://host:8000``) instead of the embedded one,
            for several app processes sharing one memory.
        model: A sentence-transformers model path or instance (default: bundled MiniLM).
        namespace: Prefix of the Chroma collections, to keep apps apart.
        **engine_kwargs: Passed to :class:`ChatRecall` (configs, token counter, ...).

    Example:
        >>> cr = connect(path="/tmp/chatrecall-demo")  # doctest: +SKIP
    """
    from .adapters.chroma import ChromaStore
    from .adapters.sentence_transformers import SentenceTransformerEmbedder
    from .core import ChatRecall

    store = ChromaStore(path=path, url=url, namespace=namespace)
    return ChatRecall(store=store, embedder=SentenceTransformerEmbedder(model), **engine_kwargs)
