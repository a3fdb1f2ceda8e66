"""Course-wide settings: where the course lives on GitHub, where data goes, and the lectures' first cell.

The GitHub owner/repo is written here and nowhere else by hand: the README's Colab badges and every
notebook's first cell are written from it by ``python -m helpers.course sync`` and a test checks both.
"""
from __future__ import annotations

import json
import os
import platform
import tempfile
import string
import sys
from pathlib import Path

REPOSITORY = "pagerank-on-the-gpu/pagerank-on-the-gpu"
# The pin: the branch or tag that the badges open and that every notebook's first cell clones on Colab, so a
# student gets the code the notebook was synced with. Change it (e.g. to a release tag), then run sync.
BRANCH = "main"
CHECKOUT_NAME = "pagerank-on-the-gpu"   # the folder colab_setup.sh clones into, under /content
INSTALLED_MARKER = ".course-installed"  # written into that folder by colab_setup.sh once the install succeeded
RAW_URL = "https://raw.githubusercontent.com"   # where the first cell downloads colab_setup.sh from
DATA_DIR_VARIABLE = "PAGERANK_DATA_DIR"
# Test hooks of the Colab set-up (simulated Colab, no network): where the checkout goes (default /content),
# where colab_setup.sh is downloaded from (default RAW_URL); colab_setup.sh also reads PAGERANK_REPO_URL
# (what it clones) and PAGERANK_PIP (the pip command).
CHECKOUT_PARENT_VARIABLE = "PAGERANK_CHECKOUT_PARENT"
RAW_URL_VARIABLE = "PAGERANK_RAW_URL"

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


_SETUP_CELL = string.Template("""\
$marker
import os, subprocess, sys
if 'google.colab' in sys.modules:   # fetch the course once, at the branch or tag this notebook was synced from
    REPOSITORY, BRANCH = $repository, $branch
    checkout = os.path.join(os.environ.get('$parent_variable', '/content'), $checkout_name)
    if not os.path.isfile(os.path.join(checkout, $installed)):   # first run, or an earlier one did not finish
        import urllib.request
        url = f"{os.environ.get('$raw_variable', $raw_url)}/{REPOSITORY}/{BRANCH}/colab_setup.sh"
        try:
            script = urllib.request.urlopen(url, timeout=60).read().decode()
        except Exception as error:
            raise RuntimeError(f"Could not download the course's set-up script {url} ({error}). Is {REPOSITORY} "
                               f"the course's public GitHub repository, with a branch or tag {BRANCH}? If not, set "
                               "REPOSITORY and BRANCH in helpers/course.py, run python -m helpers.course sync, "
                               "push, and open the notebook from its new badge.") from None
        with subprocess.Popen(['bash', '-c', script, 'colab_setup.sh', REPOSITORY, checkout, BRANCH],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as setup:
            for line in setup.stdout:
                print(line, end='')
        if setup.returncode:
            raise RuntimeError(f"The course set-up did not finish (colab_setup.sh exited with status "
                               f"{setup.returncode}; its output above says why). Run this cell again to retry.")
    if checkout not in sys.path:
        sys.path.insert(0, checkout)
import helpers.course
helpers.course.report()""")


def setup_cell_source(repository: str = REPOSITORY, branch: str = BRANCH) -> str:
    """The first code cell of every notebook. On Colab: download colab_setup.sh for ``repository`` at
    ``branch`` (a failed download names both and what to change), run it (it clones that branch or tag and
    installs helpers; a failure stops the cell), and run it again on the next try until its install has
    finished. Everywhere: report Python, the GPU (or what to do without one) and the data directory."""
    return _SETUP_CELL.substitute(
        marker=SETUP_MARKER, repository=repr(repository), branch=repr(branch), checkout_name=repr(CHECKOUT_NAME),
        installed=repr(INSTALLED_MARKER), parent_variable=CHECKOUT_PARENT_VARIABLE, raw_variable=RAW_URL_VARIABLE,
        raw_url=repr(RAW_URL))


def describe_path(path) -> str:
    """A path as a reader may see it in printed output: relative to the course folder, to $PAGERANK_DATA_DIR
    or to the home folder; never the absolute path of the machine that printed it."""
    path = Path(path)
    configured = os.environ.get(DATA_DIR_VARIABLE)
    anchors = [(ROOT, "{} in the course folder")]
    if configured:
        anchors.insert(0, (Path(configured).expanduser(), f"${DATA_DIR_VARIABLE}/{{}}"))
    try:
        anchors.append((Path.home(), "~/{}"))
    except RuntimeError:
        pass
    for anchor, form in anchors:
        try:
            relative = path.resolve().relative_to(anchor.resolve())
        except (ValueError, OSError, RuntimeError):   # RuntimeError: a symlink loop (Python < 3.13)
            continue
        return form.format(relative.as_posix() + ("/" if path.is_dir() else ""))
    return f"{path.name} (in the temporary folder)" if str(path).startswith(tempfile.gettempdir()) else path.name


def data_dir_label() -> str:
    """The data directory as a reader may see it (see describe_path)."""
    return describe_path(data_dir())


def report() -> None:
    """Print where this lecture runs: Python, Colab or not, the CPU (model, cores), the GPU (or plainly that
    there is none), and the data directory (named, never as this machine's absolute path)."""
    from . import gpu
    from .baselines import cpu_description

    status = gpu.gpu_status()
    print(f"Python {platform.python_version()}{' on Google Colab' if in_colab() else ''}")
    print(f"CPU: {cpu_description()}")
    print(f"GPU: {status.description}")
    try:
        print(f"data directory: {data_dir_label()}")
    except OSError as error:                  # $PAGERANK_DATA_DIR names a folder that cannot be made
        print(f"data directory: ${DATA_DIR_VARIABLE} cannot be created ({error.strerror or error}); downloads "
              "and the stand-in go to the user cache instead")


# --- keeping README and notebooks in step with REPOSITORY ------------------------------------------

def lecture_notebooks() -> list[Path]:
    return sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def exercise_notebooks() -> list[Path]:
    """Every exercise notebook: each solution and its student version."""
    return sorted(p for p in (NOTEBOOKS / "exercises").glob("[0-9][0-9]_*.ipynb"))


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


def sync_notebook(path: Path) -> bool:
    """Rewrite a notebook's first code cell to the current setup cell and its Colab metadata to what it
    needs; True if it changed. Nothing else in the notebook is touched."""
    text = path.read_text()
    notebook = json.loads(text)
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    if not cells or not "".join(cells[0]["source"]).startswith(SETUP_MARKER):
        raise ValueError(f"{path}: the first code cell is not the course setup cell")
    cells[0]["source"] = setup_cell_source().splitlines(keepends=True)
    notebook["metadata"] = colab_metadata(notebook["metadata"])
    wanted = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
    if wanted == text:
        return False
    path.write_text(wanted)
    return True


DEFAULT_OUT = Path("executed-notebooks")


def notebook_name(path: Path) -> Path:
    """A notebook's path relative to notebooks/ (``exercises/01_pagerank_step.ipynb``), or its file name
    where it lies elsewhere."""
    path, notebooks = Path(path).resolve(), NOTEBOOKS.resolve()
    return path.relative_to(notebooks) if path.is_relative_to(notebooks) else Path(path.name)


def executed_path(path: Path, out: Path) -> Path:
    """Where ``execute --out OUT`` writes a notebook: OUT laid out as notebooks/ is."""
    return out / notebook_name(path)


def _kernel_config(folder: str):
    """Kernels talk to this process over local sockets in ``folder`` where the system has them (over TCP,
    ipykernel warns once per notebook that the traffic is unencrypted), over TCP where it has none or the
    socket path would pass the system's length limit (Linux 107 bytes, macOS 103)."""
    import os

    from traitlets.config import Config

    config = Config()
    ip = os.path.join(folder, "kernel")            # sockets kernel-1 ... kernel-5, an absolute path
    if os.name == "posix" and len(os.fsencode(ip)) + 2 <= 100:
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = ip
    return config


def execute(path: Path, target: Path, *, timeout: int = 1200) -> float:
    """Run a notebook top to bottom in a fresh kernel, in its own folder, and write it with its outputs to
    ``target`` (the notebook itself only where ``target`` is ``path``); returns seconds taken. The executed
    notebook is written on failure too, so the error can be read in it."""
    import tempfile
    import time

    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="course-kernel-") as sockets:
            NotebookClient(notebook, timeout=timeout, kernel_name="python3", coalesce_streams=True,
                           config=_kernel_config(sockets),
                           resources={"metadata": {"path": str(Path(path).resolve().parent)}}).execute()
    finally:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, target)
    return time.perf_counter() - start


def build_parser():
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m helpers.course",
        description="sync: write the repository and branch settings into every notebook's setup cell and Colab "
                    "metadata, the student versions of the exercises and the README's tables; "
                    "report: print Python, GPU and data directory; "
                    "execute: run notebooks top to bottom in fresh kernels and write the executed copies to a "
                    "folder (GPU notebooks are skipped, with the reason, where there is no GPU).")
    parser.add_argument("command", choices=["sync", "report", "execute"], help="what to do (see above)")
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="for execute: the notebooks to run (default: every lecture, and with --exercises "
                             "every exercise notebook too)")
    parser.add_argument("--exercises", action="store_true",
                        help="for execute: also run every exercise notebook, solutions and student versions "
                             "(default: lectures only)")
    parser.add_argument("--cpu-only", action="store_true",
                        help="for execute: skip the notebooks that need a GPU even where there is one "
                             "(default: run them where a GPU answers, skip them with the reason elsewhere)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                       help="for execute: the folder the executed copies go to, laid out as notebooks/ is "
                            "(default: %(default)s/ in the current directory)")
    where.add_argument("--in-place", action="store_true",
                       help="for execute: overwrite the notebooks themselves with their new outputs "
                            "(default: off; the notebooks stay as they are)")
    parser.add_argument("--timeout", type=int, default=1200, metavar="SECONDS",
                        help="for execute: the longest one cell may run (default: %(default)s)")
    return parser


def _execute_command(parser, args) -> int:
    from . import gpu

    if not args.notebooks:
        args.notebooks = lecture_notebooks() + (exercise_notebooks() if args.exercises else [])
    for path in args.notebooks:
        if path.suffix != ".ipynb" or not path.is_file():
            parser.error(f"not a notebook: {path}")
    out = None if args.in_place else args.out.resolve()
    if out is not None:
        clash = [p for p in args.notebooks if executed_path(p, out) == p.resolve()]
        if clash:
            parser.error(f"--out {args.out} would overwrite {clash[0]} itself; use --in-place for that")
        print(f"executed copies go to {out} (the notebooks themselves stay as they are; --in-place overwrites them)")
    status = gpu.gpu_status()
    ran, skipped, failed = 0, [], []
    for path in args.notebooks:
        name = notebook_name(path)
        if needs_gpu(path) and (args.cpu_only or not status.available):
            skipped.append(str(name))
            print(f"skipped {name}: needs a CUDA GPU", flush=True)
            continue
        target = path if out is None else executed_path(path, out)
        try:
            seconds = execute(path, target, timeout=args.timeout)
            ran += 1
            print(f"ran {name} in {seconds:.0f} s", flush=True)
        except Exception as error:                      # report and go on with the next notebook
            failed.append(str(name))
            print(f"FAILED {name} (executed copy: {target}): {str(error).strip()[-2000:]}", flush=True)
    if skipped:
        reason = "--cpu-only" if args.cpu_only else f"GPU: {status.description}"
        print(f"skipped {len(skipped)} notebook(s) that need a GPU ({reason})")
    print(f"ran {ran}, skipped {len(skipped)}, failed {len(failed)}" + (f": {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_intermixed_args(argv)          # options before or after the notebooks
    if args.command != "execute" and (args.notebooks or args.exercises or args.cpu_only or args.in_place
                                      or args.out != DEFAULT_OUT):
        parser.error(f"{args.command} takes no notebooks and no execute options")
    if args.command == "report":
        report()
        return 0
    if args.command == "execute":
        return _execute_command(parser, args)
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
