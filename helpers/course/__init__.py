"""The course's runtime: its GitHub home, its notebooks, the scale and the report every first cell prints.
REPOSITORY and BRANCH are written only here; ``python -m helpers.course sync`` copies them everywhere else."""
from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

from helpers.core.progress import say
from helpers.data.settings import DATA_DIR_VARIABLE, ROOT, SettingError, data_dir_label
from helpers.measure import gpu
from helpers.measure.cpu import cpu_description

REPOSITORY = "pagerank-on-the-gpu/pagerank-on-the-gpu"
# The branch or tag the badges open and every first cell fetches on Colab; change it, then run sync.
BRANCH = "main"
CHECKOUT_NAME = "pagerank-on-the-gpu"   # the folder colab_setup.py clones into, under /content
INSTALLED_MARKER = ".course-installed"  # written into it by colab_setup.py once the install succeeded
RAW_URL = "https://raw.githubusercontent.com"   # where the first cell downloads colab_setup.py from
SCALE_VARIABLE = "PAGERANK_SCALE"       # "student" (unset: the lectures' own sizes) or "test" (the tests')

NOTEBOOKS = ROOT / "notebooks"


class Scale:
    """The size a lecture runs at: ``student`` (its own sizes) or ``test`` (small: every cell in seconds)."""

    NAMES = ("student", "test")

    def __init__(self, name: str):
        if name not in self.NAMES:
            raise SettingError(f"${SCALE_VARIABLE}={name!r}: use 'student' (the lectures' own sizes) or "
                               "'test' (the tests' small ones)")
        self.name = name

    def __repr__(self) -> str:
        return f"Scale({self.name!r})"

    @property
    def test(self) -> bool:
        return self.name == "test"

    def pick(self, student, test):
        return test if self.test else student

    def __str__(self) -> str:
        if self.test:
            return (f"test (${SCALE_VARIABLE}=test: smaller graphs and sweeps, fewer trials; every cell "
                    "runs and every check checks)")
        return f"student (the lecture's own sizes; the tests run it with ${SCALE_VARIABLE}=test)"


def scale() -> Scale:
    """The one scale setting, $PAGERANK_SCALE: 'student' where unset or blank."""
    return Scale(os.environ.get(SCALE_VARIABLE, "").strip().lower() or "student")


def report() -> None:
    """Print where this lecture runs: Python (on Colab or not), CPU, GPU, scale and the data directory."""
    colab = " on Google Colab" if "google.colab" in sys.modules else ""
    print(f"Python {platform.python_version()}{colab}")
    print(f"CPU: {cpu_description()}")
    print(f"GPU: {gpu.gpu_status().description}")
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
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def exercise_notebooks() -> list[Path]:
    """Every exercise notebook: each solution and its student version."""
    return sorted((NOTEBOOKS / "exercises").glob("[0-9][0-9]_*.ipynb"))


def _declared(path: Path, key: str) -> bool:
    metadata = json.loads(Path(path).read_text(encoding="utf-8")).get("metadata", {})
    return bool(metadata.get("course", {}).get(key, False))


def needs_gpu(path: Path) -> bool:
    """Whether a notebook's metadata declares course.needs_gpu."""
    return _declared(path, "needs_gpu")


def times(path: Path) -> bool:
    """Whether a notebook's checks depend on timings (course.times): the tests run its cells alone."""
    return _declared(path, "times")
