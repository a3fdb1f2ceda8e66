"""Keeping the course in step with its settings: every notebook's first cell and Colab request, the
student versions of the exercises, and the README's tables (lectures, exercises, kernels).

``python -m helpers.course sync`` writes them; ``python -m helpers.course check`` names what is out of step.
Maintenance tooling: no lecture imports it.
"""
from __future__ import annotations

import json
from pathlib import Path

from helpers.course import BRANCH, NOTEBOOKS, RAW_URL, REPOSITORY, lecture_notebooks, needs_gpu
from helpers.course.tools import students
from helpers.course.tools.files import write_atomically
from helpers.data.settings import ROOT
from helpers.kernels.catalog import CATALOG, EXERCISES

# The first line of every notebook's first cell ends with this: sync finds the cell by it.
SETUP_MARKER = "# course set-up: python -m helpers.course sync"
README = ROOT / "README.md"
TABLES = ("lectures", "exercises", "kernels")

# The first code cell of every notebook, at most 10 lines under 100 characters. On Colab, the first time
# (helpers not importable yet): download colab_setup.py of this REPOSITORY at this BRANCH and run it (it
# clones, installs into the kernel's own Python keeping Colab's CuPy, and imports helpers from the clone);
# a 404 names the maintainers' fix, any other failure to download says the runtime has no internet.
# Everywhere: report Python, CPU, GPU (or what to do without one) and the data directory.
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
    """The first code cell of every notebook, for ``repository`` at ``branch``."""
    return _SETUP_CELL.format(marker=SETUP_MARKER, repository=repository, branch=branch, raw_url=RAW_URL)


def is_setup_cell(source: str) -> bool:
    """Whether a cell is a course set-up cell written by sync (this one or an earlier form of it)."""
    first = source.split("\n", 1)[0]
    return "helpers.course sync" in first


def colab_url(notebook: str) -> str:
    """Open-in-Colab address of a notebook given by its path inside the repository."""
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/{notebook}"


def colab_badge(notebook: str) -> str:
    image = "https://colab.research.google.com/assets/colab-badge.svg"
    return f"[![Open In Colab]({image})]({colab_url(notebook)})"


def colab_metadata(metadata: dict) -> dict:
    """A notebook's metadata with Colab's accelerator request matching its ``course.needs_gpu``: a T4 for the
    notebooks that need a GPU, no request at all for the others (a CPU notebook must not spend GPU quota)."""
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
    """The notebook's text with its first code cell the current set-up cell and its Colab metadata what it
    needs; nothing else in it changes. ValueError when its first code cell is not a set-up cell."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    if not cells or not is_setup_cell("".join(cells[0]["source"])):
        raise ValueError(f"{path}: the first code cell is not the course setup cell")
    cells[0]["source"] = setup_cell_source().splitlines(keepends=True)
    notebook["metadata"] = colab_metadata(notebook["metadata"])
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def sync_notebook(path: Path) -> bool:
    """Rewrite a notebook's first code cell and Colab metadata (see synced_notebook); True if it changed."""
    wanted = synced_notebook(path)
    if wanted == Path(path).read_text(encoding="utf-8"):
        return False
    write_atomically(Path(path), wanted)
    return True


# --- the README's tables ------------------------------------------------------------------------------


def lecture_title(path: Path) -> str:
    """The lecture's title: its first markdown heading without the number ("# 01 · Title")."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            heading = "".join(cell["source"]).splitlines()[0].lstrip("# ").strip()
            return heading.split("·", 1)[-1].strip()
    return Path(path).stem


def lecture_table() -> str:
    """The README's lecture table, one row per lecture notebook, each with its Open-in-Colab badge."""
    rows = ["| # | lecture | needs a GPU | open |", "|---|---|---|---|"]
    for path in lecture_notebooks():
        gpu = "yes" if needs_gpu(path) else "no"
        relative = path.relative_to(ROOT).as_posix()
        rows.append(f"| {path.name[:2]} | [{lecture_title(path)}]({relative}) | {gpu} | "
                    f"{colab_badge(relative)} |")
    return "\n".join(rows)


def exercise_table() -> str:
    """The README's exercise table: the lecture, the student version with its Open-in-Colab badge, the
    checker, the solution."""
    rows = ["| after | exercise | needs a GPU | checker | open the student version | solution |",
            "|---|---|---|---|---|---|"]
    lectures = {p.name[:2]: p for p in lecture_notebooks()}
    for solution in students.solutions():
        meta = json.loads(solution.read_text(encoding="utf-8"))["metadata"]["course"]
        lecture = lectures[meta["exercise"]["lecture"]].relative_to(ROOT).as_posix()
        student = students.student_path(solution).relative_to(ROOT).as_posix()
        rows.append(f"| [{solution.name[:2]}]({lecture}) | [{lecture_title(solution)}]({student}) | "
                    f"{'yes' if meta['needs_gpu'] else 'no'} | `checks.{meta['exercise']['checker']}` | "
                    f"{colab_badge(student)} | [solution]({solution.relative_to(ROOT).as_posix()}) |")
    return "\n".join(rows)


def kernel_table() -> str:
    """The README's kernel table, from the kernel catalog: each .cu file, its lecture, test and exercise."""

    def link(text: str, path) -> str:
        return f"[{text}]({path.relative_to(ROOT).as_posix()})"

    lectures = {p.name[:2]: p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")}
    rows = ["| kernel | lecture | variants | verified by | exercise (checker) |", "|---|---|---|---|---|"]
    for e in CATALOG.values():
        kernel = link(f"{e.file}.cu", ROOT / "helpers" / "kernels" / f"{e.file}.cu")
        lecture = link(e.lecture, lectures[e.lecture]) if e.lecture in lectures else e.lecture
        exercise = ", ".join(f"{link(x.notebook, NOTEBOOKS / 'exercises' / (x.notebook + '.ipynb'))} "
                             f"(`checks.{x.checker}`)" for x in EXERCISES.values() if x.practises == e.file) or "-"
        variants = ", ".join(f"`{v}`" for v in e.variants) or "-"
        rows.append(f"| {kernel} | {lecture} | {variants} | `{e.test}` | {exercise} |")
    return "\n".join(rows)


def table(name: str) -> str:
    return {"lectures": lecture_table, "exercises": exercise_table, "kernels": kernel_table}[name]()


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}: written by python -m helpers.course sync -->", f"<!-- end of {name} -->"


def synced_readme(text: str) -> str:
    """The README's text with its tables rewritten between their markers; ValueError names a missing one."""
    for name in TABLES:
        start, end = markers(name)
        if start not in text or end not in text.split(start, 1)[1]:
            raise ValueError(f"README.md lacks the markers {start} ... {end}")
        before, rest = text.split(start, 1)
        _, after = rest.split(end, 1)
        body = table(name)
        text = f"{before}{start}\n{body}{chr(10) if body else ''}{end}{after}"
    return text


def sync_readme(readme: Path = README) -> bool:
    """Rewrite the README's tables from the notebooks and the kernel catalog; True if it changed."""
    original = readme.read_text(encoding="utf-8")
    text = synced_readme(original)
    if text == original:
        return False
    write_atomically(readme, text)
    return True


# --- everything at once ---------------------------------------------------------------------------------


def notebooks_with_setup() -> list[Path]:
    """The notebooks whose first cell sync writes: every lecture and every exercise solution (the student
    versions are written from the solutions)."""
    return lecture_notebooks() + students.solutions()


def sync() -> list[Path]:
    """Write everything sync keeps in step; returns the files that changed."""
    changed = [path for path in notebooks_with_setup() if sync_notebook(path)]
    changed += students.write()
    if sync_readme():
        changed.append(README)
    return changed


def out_of_step() -> list[str]:
    """What sync would change, one line each (empty when everything is in step)."""
    problems = [f"{path.relative_to(ROOT)}: its first cell or Colab metadata is out of step"
                for path in notebooks_with_setup()
                if synced_notebook(path) != path.read_text(encoding="utf-8")]
    problems += students.out_of_step()
    if synced_readme(README.read_text(encoding="utf-8")) != README.read_text(encoding="utf-8"):
        problems.append("README.md: a table is out of step with the notebooks")
    return problems

