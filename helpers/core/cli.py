"""What every command line of the course shares: ``formatter_class=cli.HelpFormatter``, and
``parser.error(cli.choices_error("variant", unknown, known))`` for names checked after parsing."""
from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterable


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Defaults in the help, minus the noise (none for None, an off flag, an empty list or a help naming its
    own), a list default as the words one would type (``--orders given 'degree groups'``)."""

    def _get_help_string(self, action):
        text, default = action.help or "", action.default
        if ("%(default)" in text or "(default" in text or default is None or default is False
                or default is argparse.SUPPRESS or action.nargs == 0
                or (isinstance(default, (list, tuple, set, frozenset, str)) and not default)):
            return text
        if isinstance(default, (list, tuple, set, frozenset)):
            default = " ".join(shlex.quote(str(item)) for item in default)
        return f"{text} (default: {str(default).replace('%', '%%')})"


def choices_error(what: str, unknown: Iterable[str], known: Iterable[str]) -> str:
    """The message for names not among the known ones: ``unknown variant 'bogus'; known variants: a, b``."""
    unknown, known = [str(u) for u in unknown], [str(k) for k in known]
    names = ", ".join(repr(u) for u in unknown)
    return f"unknown {what}{'s' if len(unknown) > 1 else ''} {names}; known {what}s: {', '.join(known)}"
