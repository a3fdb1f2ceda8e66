"""What every command line of the course shares: help that shows a default only where there is one, and an
unknown name answered with the known ones.

Use ``argparse.ArgumentParser(..., formatter_class=cli.HelpFormatter)`` and, for a list of names checked
after parsing, ``parser.error(cli.choices_error("variant", unknown, known))``.
"""
from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterable


def _shown(default) -> str:
    """A default as a reader types it: a list's items joined with spaces (quoted where they hold one), a path
    or number as it is."""
    if isinstance(default, (list, tuple, set, frozenset)):
        return " ".join(shlex.quote(str(item)) for item in default)
    return str(default)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's defaults-in-help formatter, minus the noise: no "(default: None)", none for a flag that is
    off by default or an empty list, none where the help already says its default, and a list default shown
    as the words one would type (``--orders given 'degree groups'``), never as a Python list."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if ("%(default)" in text or "(default" in text or default is None or default is False
                or default is argparse.SUPPRESS or action.nargs == 0
                or (isinstance(default, (list, tuple, set, frozenset, str)) and not default)):
            return text
        return f"{text} (default: {_shown(default).replace('%', '%%')})"


def choices_error(what: str, unknown: Iterable[str], known: Iterable[str]) -> str:
    """The message for names that are not among the known ones, listing those:
    ``unknown variant 'bogus'; known variants: a, b, c``."""
    unknown, known = [str(u) for u in unknown], [str(k) for k in known]
    names = ", ".join(repr(u) for u in unknown)
    plural = "s" if len(unknown) > 1 else ""
    return f"unknown {what}{plural} {names}; known {what}s: {', '.join(known)}"
