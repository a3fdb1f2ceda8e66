"""Running notebooks top to bottom in fresh kernels (nbclient), as ``python -m helpers.course execute`` does:
each in its own folder, its executed copy written to an output folder (or over itself only when asked).
Maintenance tooling: no lecture imports it.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from helpers.checks.report import LOG_VARIABLE
from helpers.course import NOTEBOOKS, SCALE_VARIABLE, needs_gpu
from helpers.driver.floors import T4_DRAM_GBS
from helpers.measure import gpu

DEFAULT_OUT = Path("executed-notebooks")
DEFAULT_TIMEOUT = 1200      # seconds one cell may run


def notebook_name(path: Path) -> Path:
    """A notebook's path relative to notebooks/ (``exercises/01_pagerank_step.ipynb``), or its file name
    where it lies elsewhere."""
    path, notebooks = Path(path).resolve(), NOTEBOOKS.resolve()
    return path.relative_to(notebooks) if path.is_relative_to(notebooks) else Path(path.name)


def executed_path(path: Path, out: Path) -> Path:
    """Where ``execute --out OUT`` writes a notebook: OUT laid out as notebooks/ is."""
    return out / notebook_name(path)


def kernel_config(folder: str):
    """Kernels talk to this process over local sockets in ``folder`` where the system has them (over TCP,
    ipykernel warns once per notebook that the traffic is unencrypted), over TCP where it has none or the
    socket path would pass the system's length limit (Linux 107 bytes, macOS 103)."""
    from traitlets.config import Config  # Jupyter's stack: with [course] or [dev], not with helpers

    config = Config()
    ip = os.path.join(folder, "kernel")            # sockets kernel-1 ... kernel-5, an absolute path
    if os.name == "posix" and len(os.fsencode(ip)) + 2 <= 100:
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = ip
    return config


@dataclass
class Run:
    """One notebook run: seconds in all, each code cell's seconds (by cell index) and the verdict of every
    exercise check it showed (``{"exercise", "ok", "seed"}``)."""
    seconds: float
    cells: dict[int, float] = field(default_factory=dict)
    checks: list[dict] = field(default_factory=list)

    def slowest(self, count: int = 3) -> list[tuple[int, float]]:
        return sorted(self.cells.items(), key=lambda cell: -cell[1])[:count]


@contextlib.contextmanager
def settings(**values: str):
    """Environment settings for the kernels started within (they inherit this process's environment)."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def cell_seconds(notebook) -> dict[int, float]:
    """Each executed code cell's run time, from the timestamps nbclient records in its metadata."""
    found = {}
    for index, cell in enumerate(notebook.cells):
        timing = cell.get("metadata", {}).get("execution", {})
        began, ended = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
        if cell.cell_type == "code" and began and ended:
            stamp = [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (began, ended)]
            found[index] = (stamp[1] - stamp[0]).total_seconds()
    return found


def execute(path: Path, target: Path, *, timeout: int = DEFAULT_TIMEOUT) -> Run:
    """Run a notebook top to bottom in a fresh kernel, in its own folder, and write it with its outputs to
    ``target`` (the notebook itself only where ``target`` is ``path``). The executed notebook is written on
    failure too, so the error can be read in it."""
    import nbformat  # Jupyter's stack: installed with [course] or [dev]
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="course-kernel-") as folder:
            log = Path(folder) / "checks.jsonl"
            with settings(**{LOG_VARIABLE: str(log)}):       # the kernel's checkers add their verdicts
                NotebookClient(notebook, timeout=timeout, kernel_name="python3", coalesce_streams=True,
                               config=kernel_config(folder),
                               resources={"metadata": {"path": str(Path(path).resolve().parent)}}).execute()
            lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    finally:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, target)
    return Run(time.perf_counter() - start, cell_seconds(notebook),
               [json.loads(line) for line in lines if line.strip()])


def execute_all(notebooks: list[Path], out: Path | None, *, cpu_only: bool = False,
                timeout: int = DEFAULT_TIMEOUT, failed_checks_fail: bool = True) -> int:
    """Run each notebook (those that need a GPU skipped, with the reason, where there is none or with
    ``cpu_only``), write the executed copies under ``out`` (over the notebooks where ``out`` is None), print
    one line per notebook and a summary; returns 1 if any failed (a notebook that ran but showed a failed
    exercise check counts, unless ``failed_checks_fail`` is off), else 0."""
    if out is not None:
        print(f"executed copies go to {out} (the notebooks themselves stay as they are; --in-place "
              "overwrites them)")
    status = gpu.gpu_status()
    ran, skipped, failed, checks_failed = 0, [], [], []
    for path in notebooks:
        name = notebook_name(path)
        if needs_gpu(path) and (cpu_only or not status.available):
            skipped.append(str(name))
            print(f"skipped {name}: needs a CUDA GPU", flush=True)
            continue
        target = path if out is None else executed_path(path, out)
        try:
            run = execute(path, target, timeout=timeout)
        except Exception as error:                      # report and go on with the next notebook
            failed.append(str(name))
            print(f"FAILED {name} (executed copy: {target}): {str(error).strip()[-2000:]}", flush=True)
            continue
        ran += 1
        wrong = sorted({c["exercise"] for c in run.checks if not c["ok"]})
        if wrong:
            checks_failed.append(str(name))
            print(f"ran {name} in {run.seconds:.0f} s: its check FAILED ({', '.join(wrong)}; the executed "
                  f"copy shows why: {target})", flush=True)
        else:
            print(f"ran {name} in {run.seconds:.0f} s", flush=True)
    if skipped:
        reason = "--cpu-only" if cpu_only else f"GPU: {status.description}"
        print(f"skipped {len(skipped)} notebook(s) that need a GPU ({reason})")
    print(f"ran {ran}, skipped {len(skipped)}, failed {len(failed)}"
          + (f": {', '.join(failed)}" if failed else "")
          + (f"; checks failed in {len(checks_failed)}: {', '.join(checks_failed)}" if checks_failed else "")
          + ("" if failed_checks_fail or not checks_failed else " (allowed: --allow-failed-checks)"))
    return 1 if failed or (checks_failed and failed_checks_fail) else 0


CELL_LIMIT = 60.0     # seconds a lecture cell may take at the student scale on an H200


def refresh(notebooks: list[Path], *, timeout: int = DEFAULT_TIMEOUT) -> int:
    """Run each notebook at the student scale, in place (the committed outputs), one after another (they
    time), with a line before and after each, its time and the T4 model's range for it (from all of it
    fixed costs to all of it memory-bound at 320 GB/s); then the slowest cells and any over CELL_LIMIT.
    Returns 1 if a notebook failed, 2 without a GPU, else 0."""

    status = gpu.gpu_status()
    if not status.available:
        print(f"refresh runs the lectures on a GPU: {status.description}")
        return 2

    slower = gpu.measure_copy_bandwidth() / T4_DRAM_GBS       # the T4 model: its datasheet's 320 GB/s
    gpu.require_gpu().get_default_memory_pool().free_all_blocks()   # the lectures get the whole GPU
    print(f"refreshing {len(notebooks)} notebook(s) in place at the student scale on "
          f"{gpu.device_facts().name}; a T4 (the course's model) moves memory {slower:.0f}x slower",
          flush=True)
    start, failed, cells = time.perf_counter(), [], []
    for number, path in enumerate(notebooks, 1):
        name = notebook_name(path)
        print(f"[{number}/{len(notebooks)}] {name} ...", flush=True)
        try:
            with settings(**{SCALE_VARIABLE: "student"}):
                run = execute(path, path, timeout=timeout)
        except Exception as error:
            failed.append(str(name))
            print(f"[{number}/{len(notebooks)}] FAILED {name}: {str(error).strip()[-1500:]}", flush=True)
            continue
        cells += [(seconds, f"{name} cell {index}") for index, seconds in run.cells.items()]
        slow = ", ".join(f"cell {index} {seconds:.0f} s" for index, seconds in run.slowest(2))
        print(f"[{number}/{len(notebooks)}] {name}: {run.seconds:.0f} s (slowest: {slow}); on a T4, by the "
              f"model, {run.seconds:.0f} to {slower * run.seconds:.0f} s", flush=True)
    cells.sort(reverse=True)
    print(f"{len(notebooks) - len(failed)} refreshed, {len(failed)} failed"
          + (f" ({', '.join(failed)})" if failed else "") + f", in {time.perf_counter() - start:.0f} s")
    print("slowest cells: " + "; ".join(f"{where} {seconds:.1f} s" for seconds, where in cells[:3]))
    over = [f"{where} ({seconds:.0f} s)" for seconds, where in cells if seconds > CELL_LIMIT]
    if over:
        print(f"over {CELL_LIMIT:.0f} s: " + "; ".join(over))
    return 1 if failed else 0
