"""Tripwires on the course's own answers: while a student's function runs, the helpers that compute what an
exercise asks for (``helpers.core.reference.top_k`` for exercise 33...) note every call and then do their work,
so an answer that hands back the course's own result (the checker's expected values come from the same
code) is named instead of passing.

A wired function keeps its identity (a name imported before, ``from helpers.core.reference import top_k``,
is wired too): its code is swapped for a wire that records the call and runs a copy of the original.
The isolation child installs the wires and never restores them (it exits); the in-process fallback
restores them after the calls.
"""
from __future__ import annotations

import importlib
import types

KEY = "__checks_tripwires__"     # the name under which a wired module holds the record
BORROWED = ("your function calls {names}, the course's own answer: the checker's expected values come from "
            "that code, so handing back its result proves nothing; compute it yourself (NumPy and SciPy "
            "are fine)")


def _wire(*args, **kwargs):
    """The code a wired function runs (with the wired module's globals): note the call, run the original."""
    import sys

    record = globals()["__checks_tripwires__"]
    name, original = record["wires"][sys._getframe().f_code.co_name]
    record["used"].setdefault(record["call"], []).append(name)
    return original(*args, **kwargs)


def _resolve(dotted: str):
    """The object a dotted name ('helpers.checks.pristine.REFERENCE.top_k') names, or None."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            found = getattr(found, attr, None)
        return found
    return None


def install(names) -> tuple[dict, callable]:
    """Wire the functions named ('helpers.core.reference.top_k'); (the record, a function that restores them).
    ``record['call']`` is set by the caller to the index of the call running; ``record['used']`` maps
    each call to the names it called."""
    record = {"call": None, "used": {}, "wires": {}}
    undo = []
    for dotted in names:
        target = _resolve(dotted)
        if not isinstance(target, types.FunctionType) or target.__closure__:
            continue
        original = types.FunctionType(target.__code__, target.__globals__, target.__name__,
                                      target.__defaults__)
        original.__kwdefaults__ = target.__kwdefaults__
        record["wires"][dotted] = (dotted, original)
        target.__globals__[KEY] = record
        undo.append((target, target.__code__))
        target.__code__ = _wire.__code__.replace(co_name=dotted)

    def restore() -> None:
        for target, code in undo:
            target.__code__ = code
    return record, restore


def used_by(record: dict) -> dict[int, list[str]]:
    """Call index -> the wired names it called (each once), as plain data."""
    return {int(i): sorted(set(names)) for i, names in record["used"].items() if i is not None}


def cause(names) -> str:
    return BORROWED.format(names=", ".join(names))
