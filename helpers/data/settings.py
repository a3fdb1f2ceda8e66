"""Where the course lives and where its data goes: $PAGERANK_DATA_DIR, the home folder and the fallbacks."""
from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

DATA_DIR_VARIABLE = "PAGERANK_DATA_DIR"

ROOT = Path(__file__).resolve().parent.parent.parent


class SettingError(ValueError):
    """An environment setting ($PAGERANK_DATA_DIR, $PAGERANK_DATA_URL, ...) that cannot be used; the message
    names the variable and the fix."""


def data_dir_setting() -> Path | None:
    """$PAGERANK_DATA_DIR as a path, '~' expanded (expand_home); None where it is unset or blank (as the URL
    setting is; spaces around a path are dropped). FileNotFoundError where its '~' names no usable home;
    SettingError where it is relative: a notebook runs in notebooks/ and a script in the course folder, so
    one relative setting would name two caches."""
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
    """The user's home folder ($HOME; on Windows the profile folder Python finds) and None, or None and why
    there is no usable one: unset, blank, relative, not a folder, or not writable."""
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
    """``text`` as a path, a leading '~' expanded to home_folder() and a '~user' to that user's home;
    FileNotFoundError where '~' has no usable home (never the filesystem's root for an empty $HOME),
    pathlib's RuntimeError where '~user' names no one."""
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
    """The data folder of last resort, where there is no usable home: pagerank-on-the-gpu-<user id> in the
    temporary folder (one per user)."""
    user = os.getuid() if hasattr(os, "getuid") else \
        "".join(c for c in os.environ.get("USERNAME", "") if c.isalnum()) or "user"
    return Path(tempfile.gettempdir()) / f"pagerank-on-the-gpu-{user}"


def user_cache_dir() -> Path:
    """~/.cache/pagerank-on-the-gpu, or without a usable home folder (home_folder) temp_data_dir()."""
    home = home_folder()[0]
    return home / ".cache" / "pagerank-on-the-gpu" if home is not None else temp_data_dir()


def data_dir() -> Path:
    """The one data-directory setting: $PAGERANK_DATA_DIR, else data/ in the checkout, else the user cache
    (user_cache_dir); created if need be (OSError where it cannot be)."""
    path = data_dir_setting()
    if path is None:
        writable = (ROOT / "data").is_dir() and os.access(ROOT / "data", os.W_OK)
        path = ROOT / "data" if writable else user_cache_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path


def describe_path(path) -> str:
    """A path as a reader may see it in printed output: relative to the course folder, to $PAGERANK_DATA_DIR
    or to a usable home folder ('~'), or in the fallback temp_data_dir() (named whole); never any other
    absolute path of the machine that printed it."""
    path = Path(path)
    anchors = [(ROOT, "{} in the course folder")]
    try:
        configured = data_dir_setting()
        if configured is not None:
            anchors.insert(0, (configured, f"${DATA_DIR_VARIABLE}/{{}}"))
    except (OSError, SettingError):               # a '~user' that names no one; a relative setting
        pass
    home = home_folder()[0]
    if home is not None:                          # '~' only for the home that '~' expands to here
        anchors.append((home, "~/{}"))
    fallback = temp_data_dir()                    # the last resort: named by its path itself
    anchors.append((fallback, str(fallback).replace("{", "{{").replace("}", "}}") + "/{}"))
    for anchor, form in anchors:
        try:
            relative = path.resolve().relative_to(anchor.resolve())
        except (ValueError, OSError, RuntimeError):   # RuntimeError: a symlink loop (Python < 3.13)
            continue
        if relative == Path("."):                  # the anchor itself: "$PAGERANK_DATA_DIR/", "~/"
            return "the course folder" if anchor == ROOT else form.format("")
        try:
            folder = path.is_dir()
        except OSError:                            # a name too long, no permission: it cannot be told
            folder = False
        return form.format(relative.as_posix() + ("/" if folder else ""))
    in_temporary = str(path).startswith(tempfile.gettempdir())
    return f"{path.name} (in the temporary folder)" if in_temporary else path.name


def data_dir_label() -> str:
    """The data directory as a reader may see it (see describe_path)."""
    return describe_path(data_dir())
