"""Student versions of the exercise notebooks, written from the solution notebooks (the single source).

In a solution notebook, code between ``# BEGIN SOLUTION hint: ...`` and ``# END SOLUTION`` (``//`` inside
CUDA source) becomes ``# TODO: <hint>`` plus ``raise NotImplementedError`` in Python, or ``// TODO: <hint>``
in CUDA, where the empty kernel still compiles and the checker reports what it leaves unwritten. Cells
tagged ``solution-only`` are dropped, every output is cleared, and nothing of the solution's last run
(outputs, versions) reaches the student version.
``python -m helpers.course sync`` writes the student versions; ``python -m helpers.course check`` fails when
one is out of step. Maintenance tooling: no lecture imports it.
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from helpers.course import NOTEBOOKS
from helpers.course.tools.files import write_atomically

EXERCISES = NOTEBOOKS / "exercises"
SUFFIX = "_solution.ipynb"
BEGIN = re.compile(r"^(?P<indent>\s*)(?P<mark>#|//) BEGIN SOLUTION(?: hint: (?P<hint>.*))?$")
END = re.compile(r"^\s*(#|//) END SOLUTION\s*$")


def solutions() -> list[Path]:
    return sorted(EXERCISES.glob(f"*{SUFFIX}"))


def student_path(solution: Path) -> Path:
    return solution.with_name(solution.name[: -len(SUFFIX)] + ".ipynb")


def stub(source: str) -> str:
    """The source with every marked solution region replaced by a TODO (and a raise, in Python)."""
    lines, out, inside = source.split("\n"), [], None
    for number, line in enumerate(lines, 1):
        begin = BEGIN.match(line)
        if begin:
            if inside:
                raise ValueError(f"line {number}: BEGIN SOLUTION inside another solution region")
            inside = begin
            hint = (begin["hint"] or "write this part").strip()
            out.append(f"{begin['indent']}{begin['mark']} TODO: {hint}")
            if begin["mark"] == "#":
                out.append(f"{begin['indent']}raise NotImplementedError({hint!r})")
        elif END.match(line):
            if not inside:
                raise ValueError(f"line {number}: END SOLUTION without BEGIN SOLUTION")
            inside = None
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError("a BEGIN SOLUTION region is never closed")
    return "\n".join(out)


def has_region(source: str) -> bool:
    return any(BEGIN.match(line) for line in source.split("\n"))


def student_notebook(solution: dict) -> dict:
    """The student version of a solution notebook (as JSON): regions stubbed, outputs cleared."""
    notebook = copy.deepcopy(solution)
    cells = []
    for cell in notebook["cells"]:
        if "solution-only" in cell.get("metadata", {}).get("tags", []):
            continue
        if cell["cell_type"] == "code":
            cell["source"] = stub("".join(cell["source"])).splitlines(keepends=True)
            cell["outputs"], cell["execution_count"] = [], None
            cell.get("metadata", {}).pop("execution", None)
        cells.append(cell)
    notebook["cells"] = cells
    notebook["metadata"]["language_info"] = {"name": "python"}    # not the versions of the last run
    return notebook


def dumps(notebook: dict) -> str:
    return json.dumps(notebook, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def write() -> list[Path]:
    """Write every student version; returns the ones that changed."""
    changed = []
    for solution in solutions():
        text = dumps(student_notebook(json.loads(solution.read_text(encoding="utf-8"))))
        target = student_path(solution)
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            write_atomically(target, text)
            changed.append(target)
    return changed


def out_of_step() -> list[str]:
    """What is wrong with the committed student versions (empty when all are in step)."""
    problems = []
    for solution in solutions():
        notebook = json.loads(solution.read_text(encoding="utf-8"))
        if not any(has_region("".join(c["source"])) for c in notebook["cells"] if c["cell_type"] == "code"):
            problems.append(f"{solution.name}: no BEGIN SOLUTION region")
        target = student_path(solution)
        if not target.is_file():
            problems.append(f"{target.name}: missing (run python -m helpers.course sync)")
        elif target.read_text(encoding="utf-8") != dumps(student_notebook(notebook)):
            problems.append(f"{target.name}: out of step with {solution.name} "
                            "(run python -m helpers.course sync)")
    students = {student_path(s) for s in solutions()}
    for path in sorted(EXERCISES.glob("*.ipynb")):
        if not path.name.endswith(SUFFIX) and path not in students:
            problems.append(f"{path.name}: a student notebook without a solution")
    return problems

