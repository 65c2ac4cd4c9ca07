"""Where chatrecall keeps its files: ``$CHATRECALL_HOME`` or the platform's user data directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["data_dir"]


def data_dir(sub: str) -> Path:
    """``$CHATRECALL_HOME/<sub>`` if set, else ``<user data dir>/chatrecall/<sub>``.

    The user data directory is ``$XDG_DATA_HOME`` or ``~/.local/share`` on Linux,
    ``~/Library/Application Support`` on macOS and ``%LOCALAPPDATA%`` on Windows.
    """
    home = os.environ.get("CHATRECALL_HOME")
    if home:
        return Path(home).expanduser() / sub
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "chatrecall" / sub
