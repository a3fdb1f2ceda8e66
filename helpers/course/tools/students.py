"""Student versions of the exercise notebooks, written from the solutions: code between ``# BEGIN SOLUTION
hint: ...`` and ``# END SOLUTION`` (``//`` in CUDA) becomes a TODO, solution-only cells and outputs go."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from helpers.course import NOTEBOOKS
from helpers.course.tools.files import update

EXERCISES = NOTEBOOKS / "exercises"
SUFFIX = "_solution.ipynb"
BEGIN = re.compile(r"^(?P<indent>\s*)(?P<mark>#|//) BEGIN SOLUTION(?: hint: (?P<hint>.*))?$")
END = re.compile(r"^\s*(#|//) END SOLUTION\s*$")


def solutions() -> list[Path]:
    return sorted(EXERCISES.glob(f"*{SUFFIX}"))


def student_path(solution: Path) -> Path:
    return solution.with_name(solution.name[: -len(SUFFIX)] + ".ipynb")


def stub(source: str) -> str:
    """The source with every solution region replaced by a TODO (and, in Python, a raise)."""
    out, inside = [], None
    for number, line in enumerate(source.split("\n"), 1):
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


def _wanted() -> dict[Path, tuple[Path, dict, str]]:
    """Each student version's path: its solution, the solution's JSON and the student version's text."""
    found = {}
    for solution in solutions():
        notebook = json.loads(solution.read_text(encoding="utf-8"))
        found[student_path(solution)] = solution, notebook, dumps(student_notebook(notebook))
    return found


def write() -> list[Path]:
    """Write every student version; returns the ones that changed."""
    return [target for target, (_, _, text) in _wanted().items() if update(target, text)]


def out_of_step() -> list[str]:
    """What is wrong with the committed student versions (empty when all are in step)."""
    problems, wanted = [], _wanted()
    for target, (solution, notebook, text) in wanted.items():
        sources = ("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code")
        if not any(BEGIN.match(line) for source in sources for line in source.split("\n")):
            problems.append(f"{solution.name}: no BEGIN SOLUTION region")
        if not target.is_file():
            problems.append(f"{target.name}: missing (run python -m helpers.course sync)")
        elif target.read_text(encoding="utf-8") != text:
            problems.append(f"{target.name}: out of step with {solution.name} "
                            "(run python -m helpers.course sync)")
    problems += [f"{path.name}: a student notebook without a solution" for path in
                 sorted(EXERCISES.glob("*.ipynb")) if not path.name.endswith(SUFFIX) and path not in wanted]
    return problems
