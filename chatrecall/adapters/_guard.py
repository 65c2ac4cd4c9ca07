"""Import guard shared by the adapters.

Adapters import their third-party library through :func:`require` so that a
missing optional dependency fails with one clear message naming the extra to
install, instead of a bare ``ModuleNotFoundError`` from deep inside a call.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingExtraError", "install_hint", "require"]


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra that installs it."""


def install_hint(extra: str) -> str:
    """How to install an extra, from the package index and from a clone of the repository."""
    return f"pip install 'chatrecall[{extra}]' (from a clone of the repository: pip install -e '.[{extra}]')"


def require(module_name: str, extra: str, *, package: str | None = None, adapter: str | None = None) -> ModuleType:
    """Import ``module_name`` or raise an ImportError naming the extra.

    Example:
        >>> chromadb = require("chromadb", "chroma")  # doctest: +SKIP

    Args:
        module_name: The module to import, e.g. ``"chromadb"``.
        extra: The chatrecall extra that installs it, e.g. ``"chroma"``.
        package: Distribution name shown in the message when it differs from
            the module name (``sentence-transformers``).
        adapter: Adapter name shown in the message (defaults to ``extra``).

    Returns:
        The imported module.

    Raises:
        MissingExtraError: An ImportError, ``"chroma adapter needs chromadb: pip install 'chatrecall[chroma]'"``.
    """
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        what = package or module_name
        msg = f"{adapter or extra} adapter needs {what}: {install_hint(extra)}"
        raise MissingExtraError(msg, name=module_name) from exc
