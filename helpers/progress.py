"""Plain-text progress bars, the same in a terminal, in Jupyter, on Colab and in committed notebook outputs.

tqdm's ``auto`` flavour draws a widget when ipywidgets is present and prints a warning when it is not; a
widget is invisible in a committed notebook and the warning leaks the machine's paths. Every bar in the
course is the plain text one, written to stdout, refreshed at most once a second, one bar at a time (no
cursor movements), and left on screen complete when its step finishes.
"""
from __future__ import annotations

import sys


def bar(total=None, desc: str = "", unit: str = "it", *, enabled: bool = True, **options):
    """A text progress bar (tqdm's plain one); ``enabled=False`` gives a silent one with the same interface."""
    from tqdm.std import tqdm

    settings = dict(total=total, desc=desc, unit=unit, file=sys.stdout, ncols=80, mininterval=1.0,
                    leave=True, dynamic_ncols=False, position=None, disable=not enabled)
    settings.update(options)
    return tqdm(**settings)


def steps(iterable, desc: str = "", total=None, *, enabled: bool = True, **options):
    """Iterate with a text progress bar over a known number of steps."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)
    with bar(total, desc, enabled=enabled, **options) as progress:
        for item in iterable:
            yield item
            progress.update(1)
