"""Course-wide settings: where the course lives on GitHub, where data goes, and the lectures' first cell.

The GitHub owner/repo is written here and nowhere else by hand: the README's Colab badges and every
notebook's first cell are written from it by ``python -m helpers.course sync`` and a test checks both.
"""
from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

REPOSITORY = "pagerank-on-the-gpu/pagerank-on-the-gpu"
BRANCH = "main"
CHECKOUT_NAME = "pagerank-on-the-gpu"   # the folder colab_setup.sh clones into, under /content
DATA_DIR_VARIABLE = "PAGERANK_DATA_DIR"

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def data_dir() -> Path:
    """The one data-directory setting: $PAGERANK_DATA_DIR, else data/ in the checkout, else a user cache."""
    configured = os.environ.get(DATA_DIR_VARIABLE)
    if configured:
        path = Path(configured).expanduser()
    elif (ROOT / "data").is_dir() and os.access(ROOT / "data", os.W_OK):
        path = ROOT / "data"
    else:
        path = Path.home() / ".cache" / "pagerank-on-the-gpu"
    path.mkdir(parents=True, exist_ok=True)
    return path


def in_colab() -> bool:
    return "google.colab" in sys.modules


def colab_url(notebook: str) -> str:
    """Open-in-Colab address of a notebook given by its path inside the repository."""
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/{notebook}"


def colab_badge(notebook: str) -> str:
    return f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab_url(notebook)})"


SETUP_MARKER = "# Course setup (written by `python -m helpers.course sync`; edit helpers/course.py instead)"


def setup_cell_source() -> str:
    """The first code cell of every lecture: on Colab fetch the course once; everywhere report the setup."""
    raw = f"https://raw.githubusercontent.com/{REPOSITORY}/{BRANCH}/colab_setup.sh"
    return "\n".join([
        SETUP_MARKER,
        "import os, subprocess, sys",
        "if 'google.colab' in sys.modules:",
        f"    if not os.path.isdir('/content/{CHECKOUT_NAME}'):",
        f"        subprocess.run(['bash', '-c', 'curl -fsSL {raw} | bash -s {REPOSITORY} {CHECKOUT_NAME}'], check=True)",
        f"    sys.path.insert(0, '/content/{CHECKOUT_NAME}')",
        "import helpers.course",
        "helpers.course.report()",
    ])


def report() -> None:
    """Print where this lecture runs: Python, Colab or not, the GPU (or plainly that there is none), data."""
    from . import gpu

    status = gpu.gpu_status()
    where = "Google Colab" if in_colab() else platform.node() or "this machine"
    print(f"Python {platform.python_version()} on {where}")
    print(f"GPU: {status.description}")
    print(f"data directory: {data_dir()}")


# --- keeping README and notebooks in step with REPOSITORY ------------------------------------------

def lecture_notebooks() -> list[Path]:
    return sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def lecture_title(path: Path) -> str:
    """The lecture's title: its first markdown heading without the number ("# 01 · Title")."""
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            heading = "".join(cell["source"]).splitlines()[0].lstrip("# ").strip()
            return heading.split("·", 1)[-1].strip()
    return path.stem


def needs_gpu(path: Path) -> bool:
    """Whether a notebook declares that it needs a GPU (its metadata: course.needs_gpu)."""
    return bool(json.loads(Path(path).read_text()).get("metadata", {}).get("course", {}).get("needs_gpu", False))


def lecture_table() -> str:
    """The README's lecture table, one row per lecture notebook, each with its Open-in-Colab badge."""
    rows = ["| # | lecture | needs a GPU | open |", "|---|---|---|---|"]
    for path in lecture_notebooks():
        gpu = "yes" if needs_gpu(path) else "no"
        relative = path.relative_to(ROOT).as_posix()
        rows.append(f"| {path.name[:2]} | [{lecture_title(path)}]({relative}) | {gpu} | {colab_badge(relative)} |")
    return "\n".join(rows)


def exercise_table() -> str:
    """The README's exercise table: the lecture, the student version with its Open-in-Colab badge, the
    checker, the solution."""
    from . import exercises

    rows = ["| after | exercise | needs a GPU | checker | open the student version | solution |",
            "|---|---|---|---|---|---|"]
    lectures = {p.name[:2]: p for p in lecture_notebooks()}
    for solution in exercises.solutions():
        meta = json.loads(solution.read_text())["metadata"]["course"]
        lecture = lectures[meta["exercise"]["lecture"]].relative_to(ROOT).as_posix()
        student = exercises.student_path(solution).relative_to(ROOT).as_posix()
        rows.append(f"| [{solution.name[:2]}]({lecture}) | [{lecture_title(solution)}]({student}) | "
                    f"{'yes' if meta['needs_gpu'] else 'no'} | `checks.{meta['exercise']['checker']}` | "
                    f"{colab_badge(student)} | [solution]({solution.relative_to(ROOT).as_posix()}) |")
    return "\n".join(rows)


TABLES = {"lectures": lecture_table, "exercises": exercise_table}


def sync_readme(readme: Path = ROOT / "README.md") -> bool:
    """Rewrite the README's lecture and exercise tables from the notebooks; True if it changed."""
    text = original = readme.read_text()
    for name, table in TABLES.items():
        start, end = f"<!-- {name}: written by python -m helpers.course sync -->", f"<!-- end of {name} -->"
        before, rest = text.split(start, 1)
        _, after = rest.split(end, 1)
        text = f"{before}{start}\n{table()}\n{end}{after}"
    if text == original:
        return False
    readme.write_text(text)
    return True


def sync_notebook(path: Path) -> bool:
    """Rewrite a notebook's first code cell to the current setup cell; True if it changed."""
    notebook = json.loads(path.read_text())
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    wanted = setup_cell_source()
    if not cells or "".join(cells[0]["source"]) == wanted:
        return False
    if not "".join(cells[0]["source"]).startswith(SETUP_MARKER):
        raise ValueError(f"{path}: the first code cell is not the course setup cell")
    cells[0]["source"] = wanted.splitlines(keepends=True)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    return True


def execute(path: Path, timeout: int = 1200) -> float:
    """Run a notebook top to bottom in a fresh kernel and save it with its outputs; returns seconds taken."""
    import time

    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    try:
        NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        nbformat.write(notebook, path)          # also on failure, so the error can be read in place
    return time.perf_counter() - start


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m helpers.course",
        description="sync: write the repository setting into every lecture's and exercise's setup cell, the "
                    "student versions of the exercises and the README's tables; "
                    "report: print Python, GPU and data directory; "
                    "execute: run lectures top to bottom in fresh kernels, saving their outputs "
                    "(GPU lectures are skipped, with the reason, where there is no GPU).")
    parser.add_argument("command", choices=["sync", "report", "execute"])
    parser.add_argument("notebooks", nargs="*", type=Path, help="for execute: the notebooks (default: every lecture)")
    args = parser.parse_args(argv)
    if args.command == "report":
        report()
        return 0
    if args.command == "execute":
        from . import gpu

        status = gpu.gpu_status()
        failed = []
        for path in args.notebooks or lecture_notebooks():
            if needs_gpu(path) and not status.available:
                print(f"skipped {path.name}: needs a CUDA GPU; GPU: {status.description}")
                continue
            try:
                print(f"ran {path.name} in {execute(path):.0f} s", flush=True)
            except Exception as error:                      # report and go on with the next lecture
                failed.append(path.name)
                print(f"FAILED {path.name}: {str(error).strip()[-2000:]}", flush=True)
        if failed:
            print(f"{len(failed)} lecture(s) failed: {', '.join(failed)}")
        return 1 if failed else 0
    from . import exercises

    for path in lecture_notebooks() + exercises.solutions():
        if sync_notebook(path):
            print(f"updated {path.relative_to(ROOT)}")
    for path in exercises.write():
        print(f"updated {path.relative_to(ROOT)}")
    if sync_readme():
        print("updated README.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
