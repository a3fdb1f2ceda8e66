"""``pagerank_gpu``: PageRank to the stop test on the GPU, with the iteration ``choose`` picks for this GPU
and graph unless one is named."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from helpers.core.reference import DAMPING, check_tol
from helpers.driver.device import as_device_graph
from helpers.driver.iteration import NotConvergedWarning, capture, make_iteration, replayed, time_iterations
from helpers.driver.variants import Variant, variant
from helpers.measure.gpu import device_facts, require_gpu
from helpers.measure.verdicts import compare as verdict_on


def choose(dg, *, measure: bool = True) -> tuple[str, str]:
    """The iteration ``pagerank_gpu`` runs when none is named, and why: fused where the rank vector fits in
    half of L2; beyond, blocked only where timing both on this graph says it is faster (``measure=False``:
    the size rule alone)."""
    l2, vector = device_facts().l2_bytes, 4 * int(dg.num_vertices)
    where = f"the {vector / 2**20:.1f} MiB rank vector against this GPU's {l2 / 2**20:.0f} MiB L2"
    if vector <= l2 // 2:
        return "fused", f"{where}: it fits, so one fused launch per iteration"
    if not measure:
        return "blocked", f"{where}: it does not fit, so source segments of {l2 // 2 / 2**20:.0f} MiB that do"
    dg, names = as_device_graph(dg, "blocked"), ("blocked", "fused")
    timings = time_iterations({name: replayed(make_iteration(dg, name), 4) for name in names}, iterations=4,
                              trials=7)
    verdict = verdict_on(timings["blocked"], timings["fused"])
    ms = ", ".join(f"{name} {timings[name].median_ms:.3g} ms" for name in ("blocked", "fused"))
    said = f"{verdict.sentence('blocked', 'fused')} ({ms} per iteration)"
    if verdict.word == "faster":
        return "blocked", f"{where}: it does not fit, and on this graph {said}"
    return "fused", f"{where}: it does not fit, but on this graph segments do not pay: {said}"


@dataclass(frozen=True)
class GpuPageRankResult:
    ranks: np.ndarray        # float32 ranks, copied back
    iterations: int
    residuals: np.ndarray    # L1 change per iteration
    converged: bool
    variant: str
    why: str = ""            # why this variant ran, when pagerank_gpu chose it


def _whole_number(value, what: str) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{what} must be a whole number of at least 1, got {value!r}")
    return int(value)


def pagerank_gpu(graph, name: str | Variant | None = None, damping: float = DAMPING, tol: float = 1e-6,
                 max_iter: int = 1000, personalization=None, *, check_every: int = 8) -> GpuPageRankResult:
    """PageRank on the GPU with the float64 reference's semantics and stop test (``tol=0``: exactly
    ``max_iter`` iterations); with no variant named, the one ``choose`` picks, printed with why."""
    cp = require_gpu()
    tol = 0.0 if tol == 0 and not isinstance(tol, bool) else check_tol(tol)
    max_iter, check_every = _whole_number(max_iter, "max_iter"), _whole_number(check_every, "check_every")
    why = ""
    if name is None:
        dg = as_device_graph(graph, "blocked")
        name, why = (choose(dg) if personalization is None
                     else ("pull_hybrid", "personalised: an unfused variant"))
        print(f"pagerank_gpu: {name} ({why})")
    dg = as_device_graph(graph, variant(name).name)
    step = make_iteration(dg, name, damping, personalization, tol=tol, max_iter=max_iter)
    if step.variant.iteration is not None:
        # the host looks every check_every iterations, rounded up to an even number replayed as one CUDA graph
        stream = cp.cuda.Stream(non_blocking=True)
        per_graph = check_every + check_every % 2
        cuda_graph = capture(step, per_graph, stream)        # its first two iterations ran while warming up
        for _ in range(max_iter // per_graph + 1):           # the GPU stops itself by max_iter at the latest
            if step.stopped_state()[0]:
                break
            cuda_graph.launch(stream)
            stream.synchronize()
    else:
        for i in range(1, max_iter + 1):
            step.run()
            if i % check_every == 0 and step.stopped_state()[0]:
                break
    reason, count = step.stopped_state()
    ranks = (step.ranks_after(count) if step.variant.iteration is not None else step.rank).get()
    if reason != 1:
        warnings.warn(f"{step.variant.name}: no L1 change below {tol:g} within max_iter={max_iter} "
                      "iterations", NotConvergedWarning, stacklevel=2)
    return GpuPageRankResult(ranks, count, step.residuals(count), reason == 1, step.variant.name, why)
