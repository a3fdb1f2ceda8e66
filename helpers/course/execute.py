"""Running notebooks top to bottom in fresh kernels (nbclient), as ``python -m helpers.course execute`` does:
each in its own folder, its executed copy written to an output folder (or over itself only when asked).
Maintenance tooling: no lecture imports it.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from .. import gpu
from . import NOTEBOOKS, needs_gpu

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
    from traitlets.config import Config      # Jupyter's stack: with [course] or [dev], not with helpers

    config = Config()
    ip = os.path.join(folder, "kernel")            # sockets kernel-1 ... kernel-5, an absolute path
    if os.name == "posix" and len(os.fsencode(ip)) + 2 <= 100:
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = ip
    return config


def execute(path: Path, target: Path, *, timeout: int = DEFAULT_TIMEOUT) -> float:
    """Run a notebook top to bottom in a fresh kernel, in its own folder, and write it with its outputs to
    ``target`` (the notebook itself only where ``target`` is ``path``); returns seconds taken. The executed
    notebook is written on failure too, so the error can be read in it."""
    import nbformat                           # Jupyter's stack: installed with [course] or [dev]
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="course-kernel-") as sockets:
            NotebookClient(notebook, timeout=timeout, kernel_name="python3", coalesce_streams=True,
                           config=kernel_config(sockets),
                           resources={"metadata": {"path": str(Path(path).resolve().parent)}}).execute()
    finally:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, target)
    return time.perf_counter() - start


def execute_all(notebooks: list[Path], out: Path | None, *, cpu_only: bool = False,
                timeout: int = DEFAULT_TIMEOUT) -> int:
    """Run each notebook (those that need a GPU skipped, with the reason, where there is none or with
    ``cpu_only``), write the executed copies under ``out`` (over the notebooks where ``out`` is None), print
    one line per notebook and a summary; returns 1 if any failed, else 0."""
    if out is not None:
        print(f"executed copies go to {out} (the notebooks themselves stay as they are; --in-place "
              "overwrites them)")
    status = gpu.gpu_status()
    ran, skipped, failed = 0, [], []
    for path in notebooks:
        name = notebook_name(path)
        if needs_gpu(path) and (cpu_only or not status.available):
            skipped.append(str(name))
            print(f"skipped {name}: needs a CUDA GPU", flush=True)
            continue
        target = path if out is None else executed_path(path, out)
        try:
            seconds = execute(path, target, timeout=timeout)
            ran += 1
            print(f"ran {name} in {seconds:.0f} s", flush=True)
        except Exception as error:                      # report and go on with the next notebook
            failed.append(str(name))
            print(f"FAILED {name} (executed copy: {target}): {str(error).strip()[-2000:]}", flush=True)
    if skipped:
        reason = "--cpu-only" if cpu_only else f"GPU: {status.description}"
        print(f"skipped {len(skipped)} notebook(s) that need a GPU ({reason})")
    print(f"ran {ran}, skipped {len(skipped)}, failed {len(failed)}"
          + (f": {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0
