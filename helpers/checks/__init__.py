"""Exercise checkers: run a student's function (CPU) or kernel source (GPU) on fresh seeded inputs and say
what is wrong: which input, which vertex, expected against got, and the likely cause.

Every checker takes ``seed=None`` (fresh inputs each call; the report prints the seed, pass it back to
repeat them) and ``time_limit=`` (seconds per call of the student's function, or per kernel launch), and
returns a ``Report`` that it also prints. A student's Python function runs in a child process that cannot
reach the checker's expected values (``isolation``), which come from private copies of the float64
reference (``pristine``), and where the course's own answer is wired to say when it is called
(``borrowed``); a kernel runs on padded, poisoned inputs and a probed copy of it shows what
values cannot (``probe``). The pieces: ``report`` (the report and the loop over cases), ``limits``
(output cap, errors, waiting for a kernel), ``returned`` and ``cpu`` (01, 02, 33), ``iteration`` (03),
``reorder`` (22), ``device`` and ``gpu`` (what every GPU checker shares), ``gpu_pull`` (10, 13, 14),
``gpu_update`` (11, 12, 20), ``gpu_fused`` (21), ``gpu_half`` (40), ``library`` (31: a launch function,
timed against cuSPARSE), ``cuda`` (reading CUDA source), ``flow``, ``lint`` and ``strides`` (hazards
read from it).
"""
from __future__ import annotations

# each checker module's __all__ is its checkers; the catalog names every exercise's
from helpers.checks.cpu import *  # noqa: F403
from helpers.checks.gpu import KERNELS
from helpers.checks.gpu_fused import *  # noqa: F403
from helpers.checks.gpu_half import *  # noqa: F403
from helpers.checks.gpu_pull import *  # noqa: F403
from helpers.checks.gpu_update import *  # noqa: F403
from helpers.checks.iteration import *  # noqa: F403
from helpers.checks.library import *  # noqa: F403
from helpers.checks.limits import CPU_TIME_LIMIT, GPU_TIME_LIMIT
from helpers.checks.reorder import *  # noqa: F403
from helpers.checks.report import NOT_WRITTEN_YET, Failure, Report
from helpers.kernels.catalog import EXERCISES

__all__ = ["Report", "Failure", "NOT_WRITTEN_YET", "CPU_TIME_LIMIT", "GPU_TIME_LIMIT", "KERNELS",
           *(e.checker for e in EXERCISES.values())]
