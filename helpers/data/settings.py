"""Where the course lives and where its data goes: $PAGERANK_DATA_DIR, the home folder and the fallbacks."""
from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

DATA_DIR_VARIABLE = "PAGERANK_DATA_DIR"

ROOT = Path(__file__).resolve().parent.parent.parent


class SettingError(ValueError):
    """An environment setting that cannot be used; the message names the variable and the fix."""


def data_dir_setting() -> Path | None:
    """$PAGERANK_DATA_DIR as a path, '~' expanded; None where unset or blank. FileNotFoundError where its '~'
    names no usable home; SettingError where relative (notebooks/ and the course folder would differ)."""
    configured = os.environ.get(DATA_DIR_VARIABLE, "").strip()
    if not configured:
        return None
    try:
        path = expand_home(configured)
    except RuntimeError:                      # pathlib's "Could not determine home directory"
        raise FileNotFoundError(errno.ENOENT, "its '~' names no known home folder", configured) from None
    if not path.is_absolute():
        shown = "$PWD" + ("" if os.path.normpath(configured) == "." else "/" + os.path.normpath(configured))
        raise SettingError(f"${DATA_DIR_VARIABLE}={configured!r} is a relative path: it would name another "
                           f"folder from notebooks/ than from the course folder (each its own cache); give "
                           f"an absolute path, e.g. \"{shown}\" where you set it, or "
                           f"~/{path.name or 'pagerank-data'}")
    return path


def home_folder() -> tuple[Path | None, str | None]:
    """The user's home folder ($HOME; on Windows the profile folder) and None, or None and why there is no
    usable one: unset, blank, relative, not a folder, or not writable."""
    if os.name == "nt":
        raw, name = os.path.expanduser("~"), "the home folder"
        raw = "" if raw == "~" else raw
    else:
        raw, name = os.environ.get("HOME"), "$HOME"
        if raw is None:
            return None, "$HOME is not set"
    path = Path(raw)
    if not raw.strip():
        return None, f"{name} is empty"
    if not path.is_absolute():
        return None, f"{name}={raw!r} is not an absolute path"
    try:
        there, folder = os.path.lexists(path), path.is_dir()
    except OSError:
        there, folder = True, False
    if there and not folder:
        return None, f"{name}={raw!r} is not a folder"
    if folder and not os.access(path, os.W_OK):
        return None, f"{name}={raw!r} cannot be written"
    return path, None


def expand_home(text: str) -> Path:
    """``text`` as a path, '~' expanded to home_folder() (FileNotFoundError without one, never the root) and
    '~user' to that user's home (pathlib's RuntimeError where it names no one)."""
    if not text.startswith("~"):
        return Path(text)
    user, _, rest = text[1:].replace(os.altsep or os.sep, os.sep).partition(os.sep)
    if user:
        return Path(text).expanduser()
    home, why = home_folder()
    if home is None:
        raise FileNotFoundError(errno.ENOENT, f"its '~' names no usable home folder ({why})", text)
    return home / rest


def temp_data_dir() -> Path:
    """The data folder of last resort: pagerank-on-the-gpu-<user id> in the temporary folder."""
    user = os.getuid() if hasattr(os, "getuid") else \
        "".join(c for c in os.environ.get("USERNAME", "") if c.isalnum()) or "user"
    return Path(tempfile.gettempdir()) / f"pagerank-on-the-gpu-{user}"


def user_cache_dir() -> Path:
    """~/.cache/pagerank-on-the-gpu, or without a usable home folder (home_folder) temp_data_dir()."""
    home = home_folder()[0]
    return home / ".cache" / "pagerank-on-the-gpu" if home is not None else temp_data_dir()


def data_dir() -> Path:
    """$PAGERANK_DATA_DIR, else data/ in the checkout, else the user cache; created (OSError where it cannot
    be)."""
    path = data_dir_setting()
    if path is None:
        writable = (ROOT / "data").is_dir() and os.access(ROOT / "data", os.W_OK)
        path = ROOT / "data" if writable else user_cache_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path


def describe_path(path) -> str:
    """A path as printed: relative to the course folder, $PAGERANK_DATA_DIR, the home folder ('~') or the
    fallback temp_data_dir() (named whole); never another absolute path of this machine."""
    path, anchors = Path(path), [(ROOT, "", " in the course folder")]
    with contextlib.suppress(OSError, SettingError):      # a '~user' that names no one; a relative setting
        configured = data_dir_setting()
        anchors = [(configured, f"${DATA_DIR_VARIABLE}/", "")] * (configured is not None) + anchors
    home = home_folder()[0]                               # '~' only for the home that '~' expands to here
    anchors += [(home, "~/", "")] * (home is not None) + [(temp_data_dir(), f"{temp_data_dir()}/", "")]
    for anchor, before, after in anchors:
        try:
            relative = path.resolve().relative_to(anchor.resolve())
        except (ValueError, OSError, RuntimeError):   # RuntimeError: a symlink loop (Python < 3.13)
            continue
        if relative == Path("."):                  # the anchor itself: "$PAGERANK_DATA_DIR/", "~/"
            return "the course folder" if anchor == ROOT else before
        with contextlib.suppress(OSError):         # a name too long, no permission: it cannot be told
            after = "/" * path.is_dir() + after
        return before + relative.as_posix() + after
    in_temporary = str(path).startswith(tempfile.gettempdir())
    return f"{path.name} (in the temporary folder)" if in_temporary else path.name


def data_dir_label() -> str:
    """The data directory as printed (describe_path)."""
    return describe_path(data_dir())
