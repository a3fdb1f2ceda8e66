"""Exercise checkers: run a student's function (CPU) or kernel source (GPU) on fresh seeded inputs and say
what is wrong: which input, which vertex, expected against got, and the likely cause.

Every checker takes ``seed=None`` (fresh inputs each call; the report prints the seed, pass it back to
repeat them) and ``time_limit=`` (seconds per call of the student's function, or per kernel launch), and
returns a ``Report`` that it also prints. The student's code gets copies (or read-back device arrays) and
the expected answer comes from pristine inputs, so a function that changes its input is named for it.
The pieces, one module per concern: ``checks_report`` (the report and the loop over cases),
``checks_limits`` (time limit, output cap, exits), ``checks_cpu`` (01, 02, 03, 33), ``checks_gpu`` (10
to 21), ``checks_cuda`` (reading CUDA source), ``checks_lint`` (warp hazards read from it),
``checks_probe`` (the probed launch).
"""
from __future__ import annotations

from .checks_cpu import pagerank_step, power_iteration, top_k, transpose
from .checks_gpu import (contributions_split, fused_update, l1_change, pull_grid_stride, pull_list,
                         pull_warp_rank, push_rank)
from .checks_limits import CPU_TIME_LIMIT, GPU_TIME_LIMIT
from .checks_report import NOT_WRITTEN_YET, Failure, Report

__all__ = ["Report", "Failure", "NOT_WRITTEN_YET", "CPU_TIME_LIMIT", "GPU_TIME_LIMIT",
           "pagerank_step", "transpose", "power_iteration", "top_k",
           "pull_grid_stride", "push_rank", "contributions_split", "pull_warp_rank", "pull_list", "l1_change",
           "fused_update"]
