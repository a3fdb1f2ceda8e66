"""Running notebooks top to bottom in fresh kernels with nbclient: ``python -m helpers.course execute`` and
``refresh``. Maintenance tooling: no lecture imports it."""
from __future__ import annotations

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
CELL_LIMIT = 60.0           # seconds a lecture cell may take at the student scale on an H200


def jupyter():
    """nbformat, nbclient's NotebookClient and traitlets' Config, imported when first needed."""
    import nbformat  # Jupyter's stack: installed with [course] or [dev], not with helpers
    from nbclient import NotebookClient
    from traitlets.config import Config
    return nbformat, NotebookClient, Config


def notebook_name(path: Path) -> Path:
    """A notebook's path relative to notebooks/, or its file name where it lies elsewhere."""
    path, notebooks = Path(path).resolve(), NOTEBOOKS.resolve()
    return path.relative_to(notebooks) if path.is_relative_to(notebooks) else Path(path.name)


def executed_path(path: Path, out: Path) -> Path:
    """Where ``execute --out OUT`` writes a notebook: OUT laid out as notebooks/ is."""
    return out / notebook_name(path)


def kernel_config(folder: str):
    """Kernels talk over local sockets in ``folder`` (TCP makes ipykernel warn it is unencrypted), or over
    TCP where there are none or the path would pass the socket-path limit (Linux 107 bytes, macOS 103)."""
    config = jupyter()[2]()
    ip = os.path.join(folder, "kernel")            # sockets kernel-1 ... kernel-5, an absolute path
    if os.name == "posix" and len(os.fsencode(ip)) + 2 <= 100:
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = ip
    return config


@dataclass
class Run:
    """One notebook run: seconds, each code cell's seconds by index, and its exercise checks' verdicts."""
    seconds: float
    cells: dict[int, float] = field(default_factory=dict)
    checks: list[dict] = field(default_factory=list)


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


def execute(path: Path, target: Path, *, timeout: int = DEFAULT_TIMEOUT, env: dict | None = None) -> Run:
    """Run a notebook in a fresh kernel in its own folder, with ``env`` added to the kernel's environment;
    write it with its outputs to ``target``, on failure too (the error can be read there)."""
    nbformat, NotebookClient, _ = jupyter()
    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="course-kernel-") as folder:
            log = Path(folder) / "checks.jsonl"           # the kernel's checkers add their verdicts
            client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", coalesce_streams=True,
                                    config=kernel_config(folder))
            client.execute(cwd=str(Path(path).resolve().parent),
                           env={**os.environ, **(env or {}), LOG_VARIABLE: str(log)})
            lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    finally:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, target)
    return Run(time.perf_counter() - start, cell_seconds(notebook),
               [json.loads(line) for line in lines if line.strip()])


def execute_all(notebooks: list[Path], out: Path | None, *, cpu_only: bool = False,
                timeout: int = DEFAULT_TIMEOUT, failed_checks_fail: bool = True) -> int:
    """Run each notebook (skipping the GPU ones without a GPU or with ``cpu_only``), write the copies under
    ``out`` (None: in place), print a line each and a summary; 1 if any failed, else 0."""
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
        failure = f": its check FAILED ({', '.join(wrong)}; the executed copy shows why: {target})"
        print(f"ran {name} in {run.seconds:.0f} s{failure if wrong else ''}", flush=True)
    if skipped:
        reason = "--cpu-only" if cpu_only else f"GPU: {status.description}"
        print(f"skipped {len(skipped)} notebook(s) that need a GPU ({reason})")
    print(f"ran {ran}, skipped {len(skipped)}, failed {len(failed)}"
          + (f": {', '.join(failed)}" if failed else "")
          + (f"; checks failed in {len(checks_failed)}: {', '.join(checks_failed)}" if checks_failed else "")
          + ("" if failed_checks_fail or not checks_failed else " (allowed: --allow-failed-checks)"))
    return 1 if failed or (checks_failed and failed_checks_fail) else 0


def refresh(notebooks: list[Path], *, timeout: int = DEFAULT_TIMEOUT) -> int:
    """Run each notebook in place at the student scale, one after another, with its time and the T4 model's
    range; then the slowest cells and any over CELL_LIMIT. 1 if one failed, 2 without a GPU, else 0."""
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
        name, step = notebook_name(path), f"[{number}/{len(notebooks)}]"
        print(f"{step} {name} ...", flush=True)
        try:
            run = execute(path, path, timeout=timeout, env={SCALE_VARIABLE: "student"})
        except Exception as error:
            failed.append(str(name))
            print(f"{step} FAILED {name}: {str(error).strip()[-1500:]}", flush=True)
            continue
        cells += [(seconds, f"{name} cell {index}") for index, seconds in run.cells.items()]
        slowest = sorted(run.cells.items(), key=lambda cell: -cell[1])[:2]
        slow = ", ".join(f"cell {index} {seconds:.0f} s" for index, seconds in slowest)
        print(f"{step} {name}: {run.seconds:.0f} s (slowest: {slow}); on a T4, by the model, "
              f"{run.seconds:.0f} to {slower * run.seconds:.0f} s", flush=True)
    cells.sort(reverse=True)
    print(f"{len(notebooks) - len(failed)} refreshed, {len(failed)} failed"
          + (f" ({', '.join(failed)})" if failed else "") + f", in {time.perf_counter() - start:.0f} s")
    print("slowest cells: " + "; ".join(f"{where} {seconds:.1f} s" for seconds, where in cells[:3]))
    over = [f"{where} ({seconds:.0f} s)" for seconds, where in cells if seconds > CELL_LIMIT]
    if over:
        print(f"over {CELL_LIMIT:.0f} s: " + "; ".join(over))
    return 1 if failed else 0
