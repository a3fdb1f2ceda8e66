"""Private copies of the float64 reference, taken when ``helpers.checks`` is imported: the checkers compute
their expected values with these, so code that later replaces ``helpers.core.reference.pagerank_step`` (or any
other function of it) changes nothing the checkers use.

Each copy is the same code with globals of its own (a snapshot of the module's namespace in which every
function of the module is itself a copy), so one reference function calling another calls the copy too.
``replaced()`` compares each copy's code with the code compiled from ``helpers/core/reference.py`` on disk: a
function replaced before this package was imported shows there, and the checkers then refuse to run.
What no copy can protect is NumPy, SciPy or the graph classes rewritten in the same process: the student's
functions run in a child process where they can change nothing of the checker's (``checks.isolation``).
"""
from __future__ import annotations

import ast
import types
from pathlib import Path

from helpers.core import reference as live_reference

NAMES = ("DAMPING", "teleport_vector", "pagerank_step", "pagerank", "top_k", "l1_distance")


def _copies(module) -> types.SimpleNamespace:
    """The functions of ``module`` copied with globals of their own (see the module's docstring)."""
    namespace = dict(vars(module))
    for name, value in list(namespace.items()):
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            copy = types.FunctionType(value.__code__, namespace, value.__name__, value.__defaults__,
                                      value.__closure__)
            copy.__kwdefaults__ = dict(value.__kwdefaults__ or {}) or None
            copy.__qualname__, copy.__doc__ = value.__qualname__, value.__doc__
            namespace[name] = copy
    return types.SimpleNamespace(**{name: namespace[name] for name in NAMES})


REFERENCE = _copies(live_reference)
SOURCE = Path(live_reference.__file__)


def replaced() -> list[str]:
    """The reference functions whose private copy is not the code in ``helpers/core/reference.py`` (replaced
    before ``helpers.checks`` was imported, or the file edited since); [] when all are genuine or the file
    cannot be read (then there is nothing to compare with)."""
    try:
        text = SOURCE.read_text(encoding="utf-8")
        module_code = compile(text, str(SOURCE), "exec", dont_inherit=True)
        constants = {target.id: ast.literal_eval(node.value) for node in ast.parse(text).body
                     if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                     for target in node.targets if isinstance(target, ast.Name)}
    except (OSError, SyntaxError, ValueError):
        return []
    on_disk = {c.co_name: c for c in module_code.co_consts if isinstance(c, types.CodeType)}
    found = []
    for name in NAMES:
        copy = getattr(REFERENCE, name)
        genuine = (on_disk.get(name) == copy.__code__ if isinstance(copy, types.FunctionType)
                   else constants.get(name, copy) == copy)
        if not genuine:
            found.append(name)
    return found


def refusal() -> tuple[str, str] | None:
    """(detail, cause) when the reference was replaced, else None."""
    found = replaced()
    if not found:
        return None
    names = ", ".join(f"helpers.core.reference.{name}" for name in found)
    return (f"{names} is not the code in {SOURCE.name}",
            "the checker's expected values come from the course's float64 reference, and this one was "
            "replaced (or the file changed) before helpers.checks was imported: restart the kernel (Kernel "
            "> Restart, on Colab Runtime > Restart session) and run the notebook again without replacing it")
