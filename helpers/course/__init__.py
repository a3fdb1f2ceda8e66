"""The course's runtime: where it lives on GitHub, where data goes, which notebooks it has, and the report
every lecture's first cell prints. A lecture imports this; it never imports the maintenance tooling beside
it (``sync``, ``execute``, ``students``: ``python -m helpers.course --help``).

The GitHub owner/repo and the branch are written here and nowhere else by hand: ``python -m helpers.course
sync`` writes them into the README's Colab badges and every notebook's first cell, and a test checks both.
"""
from __future__ import annotations

import errno
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

from .. import gpu
from ..progress import say
from ..baselines import cpu_description

REPOSITORY = "pagerank-on-the-gpu/pagerank-on-the-gpu"
# The pin: the branch or tag that the badges open and that every notebook's first cell fetches on Colab, so a
# student gets the code the notebook was synced with. Change it (e.g. to a release tag), then run sync.
BRANCH = "main"
CHECKOUT_NAME = "pagerank-on-the-gpu"   # the folder colab_setup.py clones into, under /content
INSTALLED_MARKER = ".course-installed"  # written into it by colab_setup.py once the install succeeded
RAW_URL = "https://raw.githubusercontent.com"   # where the first cell downloads colab_setup.py from
DATA_DIR_VARIABLE = "PAGERANK_DATA_DIR"
SCALE_VARIABLE = "PAGERANK_SCALE"       # "student" (unset: the lectures' own sizes) or "test" (the tests')

ROOT = Path(__file__).resolve().parent.parent.parent
NOTEBOOKS = ROOT / "notebooks"


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


class Scale:
    """The size a lecture runs at: ``student`` (its own graphs, sweeps and trials; the committed outputs) or
    ``test`` (smaller ones, fewer trials: every cell runs and every check checks, in seconds)."""

    NAMES = ("student", "test")

    def __init__(self, name: str):
        if name not in self.NAMES:
            raise SettingError(f"${SCALE_VARIABLE}={name!r}: use 'student' (the lectures' own sizes) or "
                               "'test' (the tests' small ones)")
        self.name = name

    @property
    def test(self) -> bool:
        return self.name == "test"

    def pick(self, student, test):
        """``student`` at the student scale, ``test`` at the test scale."""
        return test if self.test else student

    def __repr__(self) -> str:
        return f"Scale({self.name!r})"

    def __str__(self) -> str:
        if self.test:
            return (f"test (${SCALE_VARIABLE}=test: smaller graphs and sweeps, fewer trials; every cell "
                    "runs and every check checks)")
        return f"student (the lecture's own sizes; the tests run it with ${SCALE_VARIABLE}=test)"


def scale() -> Scale:
    """The one scale setting, $PAGERANK_SCALE: 'student' where unset or blank, else 'student' or 'test'."""
    return Scale(os.environ.get(SCALE_VARIABLE, "").strip().lower() or "student")


def in_colab() -> bool:
    return "google.colab" in sys.modules


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


def report() -> None:
    """Print where this lecture runs: Python, Colab or not, the CPU (model, cores), the GPU (or plainly that
    there is none, and what to do), and the data directory (named, never as this machine's absolute path)."""
    status = gpu.gpu_status()
    print(f"Python {platform.python_version()}{' on Google Colab' if in_colab() else ''}")
    print(f"CPU: {cpu_description()}")
    print(f"GPU: {status.description}")
    try:
        print(f"scale: {scale()}")
    except SettingError as error:
        print(f"scale: {error}")
    try:
        say(f"data directory: {data_dir_label()}")
    except OSError as error:                  # $PAGERANK_DATA_DIR names a folder that cannot be made
        say(f"data directory: ${DATA_DIR_VARIABLE} cannot be created ({error.strerror or error}); "
            "downloads and the stand-in go to the user cache instead")
    except SettingError as error:             # a relative $PAGERANK_DATA_DIR: refused, not guessed
        say(f"data directory: {error}")


def lecture_notebooks() -> list[Path]:
    """Every lecture notebook, in course order."""
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def exercise_notebooks() -> list[Path]:
    """Every exercise notebook: each solution and its student version."""
    return sorted((NOTEBOOKS / "exercises").glob("[0-9][0-9]_*.ipynb"))


def _declared(path: Path, key: str) -> bool:
    metadata = json.loads(Path(path).read_text(encoding="utf-8")).get("metadata", {})
    return bool(metadata.get("course", {}).get(key, False))


def needs_gpu(path: Path) -> bool:
    """Whether a notebook declares that it needs a GPU (its metadata: course.needs_gpu)."""
    return _declared(path, "needs_gpu")


def times(path: Path) -> bool:
    """Whether a notebook declares that its checks depend on timings (course.times): the tests run its
    cells alone."""
    return _declared(path, "times")
