"""Keeping the course in step with its settings (``python -m helpers.course sync``; ``check`` names what is
not): every notebook's first cell and Colab request, the student versions, the README's tables."""
from __future__ import annotations

import json
from pathlib import Path

from helpers.course import BRANCH, NOTEBOOKS, RAW_URL, REPOSITORY, lecture_notebooks, needs_gpu
from helpers.course.tools import students
from helpers.course.tools.files import update
from helpers.data.settings import ROOT
from helpers.kernels import KERNEL_DIR
from helpers.kernels.catalog import CATALOG, EXERCISES

# The first line of every notebook's first cell ends with this: sync finds the cell by it.
SETUP_MARKER = "# course set-up: python -m helpers.course sync"
README = ROOT / "README.md"

# Every notebook's first code cell (at most 10 lines under 100 characters). On Colab, once: download and run
# colab_setup.py of REPOSITORY at BRANCH (a 404 names the maintainers' fix). Everywhere: the report.
_SETUP_CELL = """\
import importlib.util, sys, urllib.request as web  {marker}
REPOSITORY, BRANCH = {repository!r}, {branch!r}
if 'google.colab' in sys.modules and not importlib.util.find_spec('helpers'):  # on Colab, once
    url = f'{raw_url}/{{REPOSITORY}}/{{BRANCH}}/colab_setup.py'
    try: exec(web.urlopen(url, timeout=60).read())  # clone the course, install it, import it
    except web.HTTPError as e: raise RuntimeError(f'{{e}}: {{url}}. On a 404, REPOSITORY or BRANCH is '
        'wrong: set both in helpers/course/__init__.py, run helpers.course sync, push') from None
    except OSError: raise RuntimeError('this runtime has no internet: check it and run the cell '
                                       'again') from None
import helpers.course; helpers.course.report()"""


def setup_cell_source(repository: str = REPOSITORY, branch: str = BRANCH) -> str:
    return _SETUP_CELL.format(marker=SETUP_MARKER, repository=repository, branch=branch, raw_url=RAW_URL)


def is_setup_cell(source: str) -> bool:
    """Whether a cell is a course set-up cell written by sync (this one or an earlier form of it)."""
    return "helpers.course sync" in source.split("\n", 1)[0]


def colab_badge(notebook: str) -> str:
    """The Open-in-Colab badge of a notebook given by its path inside the repository."""
    colab = "https://colab.research.google.com"
    return (f"[![Open In Colab]({colab}/assets/colab-badge.svg)]"
            f"({colab}/github/{REPOSITORY}/blob/{BRANCH}/{notebook})")


def colab_metadata(metadata: dict) -> dict:
    """The metadata with Colab's accelerator request from ``course.needs_gpu``: a T4, or none at all."""
    metadata = json.loads(json.dumps(metadata))
    colab = metadata.setdefault("colab", {})
    if metadata.get("course", {}).get("needs_gpu", False):
        metadata["accelerator"] = "GPU"
        colab["gpuType"] = "T4"
    else:
        metadata.pop("accelerator", None)
        colab.pop("gpuType", None)
    if not any(colab.values()):            # nothing left but an empty provenance list: no colab section
        del metadata["colab"]
    return metadata


def synced_notebook(path: Path) -> str:
    """The notebook's text with the current set-up cell and Colab metadata (ValueError: no set-up cell)."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    if not cells or not is_setup_cell("".join(cells[0]["source"])):
        raise ValueError(f"{path}: the first code cell is not the course setup cell")
    cells[0]["source"] = setup_cell_source().splitlines(keepends=True)
    notebook["metadata"] = colab_metadata(notebook["metadata"])
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def sync_notebook(path: Path) -> bool:
    """Rewrite a notebook's set-up cell and Colab metadata; True if it changed."""
    return update(path, synced_notebook(path))


def relative(path: Path) -> str:
    return Path(path).relative_to(ROOT).as_posix()


def lecture_title(path: Path) -> str:
    """The lecture's title: its first markdown heading without the number ("# 01 · Title")."""
    for cell in json.loads(Path(path).read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            heading = "".join(cell["source"]).splitlines()[0].lstrip("# ").strip()
            return heading.split("·", 1)[-1].strip()
    return Path(path).stem


def lecture_table() -> str:
    rows = ["| # | lecture | needs a GPU | open |", "|---|---|---|---|"]
    for path in lecture_notebooks():
        rows.append(f"| {path.name[:2]} | [{lecture_title(path)}]({relative(path)}) | "
                    f"{'yes' if needs_gpu(path) else 'no'} | {colab_badge(relative(path))} |")
    return "\n".join(rows)


def exercise_table() -> str:
    rows = ["| after | exercise | needs a GPU | checker | open the student version | solution |",
            "|---|---|---|---|---|---|"]
    lectures = {p.name[:2]: p for p in lecture_notebooks()}
    for solution in students.solutions():
        meta = json.loads(solution.read_text(encoding="utf-8"))["metadata"]["course"]
        student = relative(students.student_path(solution))
        rows.append(f"| [{solution.name[:2]}]({relative(lectures[meta['exercise']['lecture']])}) | "
                    f"[{lecture_title(solution)}]({student}) | {'yes' if meta['needs_gpu'] else 'no'} | "
                    f"`checks.{meta['exercise']['checker']}` | {colab_badge(student)} | "
                    f"[solution]({relative(solution)}) |")
    return "\n".join(rows)


def kernel_table() -> str:
    """The README's kernel table, from the kernel catalog."""
    lectures = {p.name[:2]: p for p in lecture_notebooks()}
    rows = ["| kernel | lecture | variants | verified by | exercise (checker) |", "|---|---|---|---|---|"]
    for e in CATALOG.values():
        lecture = f"[{e.lecture}]({relative(lectures[e.lecture])})" if e.lecture in lectures else e.lecture
        exercise = ", ".join(f"[{x.notebook}]({relative(NOTEBOOKS / 'exercises' / (x.notebook + '.ipynb'))}) "
                             f"(`checks.{x.checker}`)" for x in EXERCISES.values() if x.practises == e.file) or "-"
        variants = ", ".join(f"`{v}`" for v in e.variants) or "-"
        rows.append(f"| [{e.file}.cu]({relative(KERNEL_DIR / (e.file + '.cu'))}) | {lecture} | {variants} | "
                    f"`{e.test}` | {exercise} |")
    return "\n".join(rows)


TABLES = {"lectures": lecture_table, "exercises": exercise_table, "kernels": kernel_table}


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}: written by python -m helpers.course sync -->", f"<!-- end of {name} -->"


def synced_readme(text: str) -> str:
    """The README's text with its tables rewritten between their markers; ValueError names a missing one."""
    for name, table in TABLES.items():
        start, end = markers(name)
        if start not in text or end not in text.split(start, 1)[1]:
            raise ValueError(f"README.md lacks the markers {start} ... {end}")
        before, rest = text.split(start, 1)
        body = table()
        text = f"{before}{start}\n{body}{chr(10) if body else ''}{end}{rest.split(end, 1)[1]}"
    return text


def notebooks_with_setup() -> list[Path]:
    """The notebooks whose first cell sync writes: the lectures and the solutions (students' follow)."""
    return lecture_notebooks() + students.solutions()


def sync() -> list[Path]:
    """Write everything sync keeps in step; returns the files that changed."""
    changed = [path for path in notebooks_with_setup() if sync_notebook(path)] + students.write()
    if update(README, synced_readme(README.read_text(encoding="utf-8"))):
        changed.append(README)
    return changed


def out_of_step() -> list[str]:
    """What sync would change, one line each (empty when everything is in step)."""
    problems = [f"{path.relative_to(ROOT)}: its first cell or Colab metadata is out of step"
                for path in notebooks_with_setup()
                if synced_notebook(path) != path.read_text(encoding="utf-8")]
    problems += students.out_of_step()
    readme = README.read_text(encoding="utf-8")
    if synced_readme(readme) != readme:
        problems.append("README.md: a table is out of step with the notebooks")
    return problems
