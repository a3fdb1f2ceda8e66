"""The float64 reference PageRank, the truth every kernel is checked against: damping d, teleport to uniform
or a personalisation p that also takes the dangling rank, ranks summing to 1, and a stop when the L1 change
drops below ``tol`` (absolute; networkx scales its tol by N, so give it tol / N).
"""
from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from helpers.core.arguments import ArgumentError, as_number, check_flag, check_integer, check_real, host_array
from helpers.core.graph import Graph, check_graph
from helpers.core.progress import bar

DAMPING = 0.85


class ConvergenceWarning(UserWarning):
    """An iteration stopped at max_iter before its L1 change fell below tol (converged=False)."""


@dataclass(frozen=True)
class PageRankResult:
    ranks: np.ndarray       # float64, sums to 1
    iterations: int         # power-iteration steps taken
    residuals: np.ndarray   # L1 change of each step
    converged: bool         # did the last residual fall below tol?
    damping: float
    tol: float


def check_damping(damping: float) -> float:
    damping = as_number(damping, "damping")
    if not 0.0 < damping < 1.0:
        raise ArgumentError(f"damping must lie strictly between 0 and 1, got {damping}")
    return damping


def check_tol(tol: float, name: str = "tol") -> float:
    return check_real(tol, name, positive=True)


def _floats(values, name: str, what: str, *, xp=np, said: str | None = None):
    """``values`` as a float64 array of ``xp``; what ``host_array`` refuses (a GPU array unless xp is CuPy),
    complex numbers and non-numbers raise ArgumentError (``said`` begins the last message)."""
    host_array(values, name, gpu=xp is not np)
    if np.iscomplexobj(values):
        raise ArgumentError(f"{name} holds complex numbers; it must be real, {what}")
    try:
        return xp.asarray(values, dtype=xp.float64)
    except (TypeError, ValueError) as error:
        raise ArgumentError(f"{said or name + ' must be an array of numbers'}, {what} ({error})") from None


def teleport_vector(num_vertices: int, personalization=None) -> np.ndarray:
    """Where the surfer jumps (and dangling rank goes): uniform, or the personalisation normalised (scaled by
    its largest weight first, so that even weights whose sum overflows give a vector summing to 1)."""
    n = check_integer(num_vertices, "num_vertices", minimum=1)
    if personalization is None:
        return np.full(n, 1.0 / n)
    p = _floats(personalization, "personalization", "one weight per vertex")
    if p.shape != (n,):
        raise ArgumentError(f"personalization needs one weight per vertex ({n}), got shape {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any():
        raise ArgumentError("personalization weights must be finite and non-negative")
    peak = p.max()
    if peak == 0:
        raise ArgumentError("personalization is all zeros: at least one vertex needs a positive weight")
    p = p / peak                      # now in [0, 1]: the sum cannot overflow
    return p / p.sum()


def pagerank_step(graph, ranks, damping: float, teleport):
    """One float64 power-iteration step: pull rank along in-links, redistribute dangling mass, teleport. Runs
    on the GPU for CuPy ranks and any ``graph`` with num_vertices, out_degree, dangling and in_matrix."""
    return _step(graph, *_step_arguments(graph, ranks, damping, teleport))


def _step_arguments(graph, ranks, damping, teleport):
    """(ranks, damping, teleport) checked, as float64 arrays of the ranks' kind: once per run."""
    if not all(hasattr(graph, key) for key in ("num_vertices", "out_degree", "dangling", "in_matrix")):
        raise ArgumentError(f"expected a helpers.core.graph.Graph (or an object with num_vertices, "
                            f"out_degree, dangling and in_matrix), got {type(graph).__name__}")
    damping = check_damping(damping)
    cupy = sys.modules.get("cupy")            # CuPy ranks: the step runs on the GPU, else on the host
    xp = cupy if cupy is not None and isinstance(ranks, cupy.ndarray) else np
    said = "ranks and teleport must be arrays of numbers"
    ranks, teleport = (_floats(v, key, "one per vertex", xp=xp, said=said)
                       for key, v in (("ranks", ranks), ("teleport", teleport)))
    if ranks.shape != (graph.num_vertices,) or tuple(teleport.shape) != (graph.num_vertices,):
        raise ArgumentError(f"ranks and teleport need one entry per vertex ({graph.num_vertices}), "
                            f"got shapes {ranks.shape} and {tuple(teleport.shape)}")
    return ranks, damping, teleport


def _step(graph, ranks, damping: float, teleport):
    """``pagerank_step``'s arithmetic on arguments ``_step_arguments`` checked."""
    xp = sys.modules["cupy"] if type(ranks).__module__.startswith("cupy") else np
    degree = graph.out_degree
    contributions = xp.where(degree > 0, ranks / xp.maximum(degree, 1), 0.0)
    dangling_mass = (ranks * graph.dangling).sum()
    pulled = graph.in_matrix @ contributions
    return damping * pulled + (damping * dangling_mass + (1.0 - damping)) * teleport


def iterate(graph, ranks, teleport, damping: float, tol: float, max_iter: int, *, progress: bool = False):
    """``pagerank_step`` from ``ranks`` until the L1 change is below ``tol`` or for ``max_iter`` steps:
    (ranks, the L1 change of every step). NumPy or CuPy arrays alike."""
    residuals = []
    with bar(None, "PageRank (float64)", enabled=progress) as shown:
        if max_iter > 0:                      # checked once here, not in every step
            ranks, damping, teleport = _step_arguments(graph, ranks, damping, teleport)
        for _ in range(max_iter):
            new = _step(graph, ranks, damping, teleport)
            residuals.append(float(abs(new - ranks).sum()))
            ranks = new
            shown.set_postfix_str(f"L1 change {residuals[-1]:.2e}", refresh=False)
            shown.update(1)
            if residuals[-1] < tol:
                break
    return ranks, residuals


def pagerank(graph: Graph, damping: float = DAMPING, tol: float = 1e-10, max_iter: int = 1000,
             personalization=None, *, progress: bool = False) -> PageRankResult:
    """Power iteration from the uniform vector until the L1 change is below ``tol``; a ConvergenceWarning (and
    converged=False) after ``max_iter`` steps. ``progress=True`` shows a text bar with the L1 change."""
    graph = check_graph(graph)
    damping, tol = check_damping(damping), check_tol(tol)
    max_iter = check_integer(max_iter, "max_iter", minimum=1)
    progress = check_flag(progress, "progress")
    teleport = teleport_vector(graph.num_vertices, personalization)
    ranks, residuals = iterate(graph, np.full(graph.num_vertices, 1.0 / graph.num_vertices), teleport,
                               damping, tol, max_iter, progress=progress)
    converged = residuals[-1] < tol
    if not converged:
        warnings.warn(f"PageRank on {graph.name!r} did not converge in max_iter={max_iter} iterations: the "
                      f"last L1 change is {residuals[-1]:.3g}, not below tol={tol:g}; raise max_iter (or "
                      f"tol)",
                      ConvergenceWarning, stacklevel=2)
    return PageRankResult(ranks, len(residuals), np.array(residuals), converged, damping, tol)


@dataclass(frozen=True)
class FixedPointCheck:
    ok: bool
    residual: float     # L1 change that one more float64 iteration makes
    total: float        # sum of the ranks
    message: str

    def __bool__(self) -> bool:
        return self.ok


def verify_fixed_point(graph: Graph, ranks, damping: float = DAMPING, tol: float = 1e-6,
                       personalization=None, sum_tol: float = 1e-6) -> FixedPointCheck:
    """Is ``ranks`` a PageRank vector, however computed? Finite, non-negative, summing to 1 within
    ``sum_tol``, and moved by less than ``tol`` (L1) by one more float64 iteration."""
    graph = check_graph(graph)
    damping, tol, sum_tol = check_damping(damping), check_tol(tol), check_tol(sum_tol, "sum_tol")
    ranks = _floats(ranks, "ranks", "one per vertex")
    if ranks.shape != (graph.num_vertices,):
        return FixedPointCheck(False, np.inf, np.nan,
                               f"expected {graph.num_vertices} ranks, got shape {ranks.shape}")
    if not np.isfinite(ranks).all():
        bad = int(np.flatnonzero(~np.isfinite(ranks))[0])
        return FixedPointCheck(False, np.inf, np.nan, f"rank of vertex {bad} is {ranks[bad]}")
    total = float(ranks.sum())
    if (ranks < 0).any():
        bad = int(np.flatnonzero(ranks < 0)[0])
        return FixedPointCheck(False, np.inf, total, f"rank of vertex {bad} is negative ({ranks[bad]:.3g})")
    teleport = teleport_vector(graph.num_vertices, personalization)
    residual = float(np.abs(pagerank_step(graph, ranks, damping, teleport) - ranks).sum())
    if abs(total - 1.0) > sum_tol:
        return FixedPointCheck(False, residual, total,
                               f"ranks sum to {total:.9f}, not 1 (within {sum_tol:g})")
    moves = f"one more iteration moves the ranks by {residual:.3g} (L1)"
    if residual >= tol:
        return FixedPointCheck(False, residual, total, f"{moves} >= tol {tol:g}")
    return FixedPointCheck(True, residual, total, f"fixed point: {moves} < {tol:g}")


def _pair(a, b) -> tuple[np.ndarray, np.ndarray]:
    """Two rank vectors as float64 arrays of the same 1-D shape (no silent broadcasting of a length-1 one)."""
    said = "rank vectors must be arrays of numbers"
    a, b = (_floats(v, key, "one rank per vertex", said=said) for key, v in (("a", a), ("b", b)))
    if a.ndim != 1 or a.shape != b.shape:
        raise ArgumentError(f"expected two rank vectors of the same length, got shapes {a.shape} and "
                            f"{b.shape}")
    return a, b


def max_abs_diff(a, b) -> float:
    a, b = _pair(a, b)
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def l1_distance(a, b) -> float:
    a, b = _pair(a, b)
    return float(np.abs(a - b).sum())


def top_k(ranks, k: int) -> np.ndarray:
    """Indices of the k largest ranks, largest first, ties to the smaller id; k beyond n gives them all."""
    k = check_integer(k, "k", minimum=0)
    ranks = _floats(ranks, "ranks", "one per vertex")
    if ranks.ndim != 1:
        raise ArgumentError(f"ranks must be a 1-D vector, got shape {ranks.shape}")
    if np.isnan(ranks).any():                 # NaN has no place in an order: it was put last, silently
        raise ArgumentError(f"ranks must not hold NaN: vertex {int(np.flatnonzero(np.isnan(ranks))[0])} has "
                            f"no rank to order by")
    return np.lexsort((np.arange(ranks.size), -ranks))[:min(k, ranks.size)]


def top_k_overlap(a, b, k: int) -> float:
    """Share of the k top vertices of ``a`` that are also among the k top vertices of ``b`` (k >= 1)."""
    k = check_integer(k, "k", minimum=1)
    top_a, top_b = (top_k(v, k) for v in _pair(a, b))
    return len(np.intersect1d(top_a, top_b)) / max(len(top_a), 1)


def rank_correlation(a, b) -> float:
    """Spearman's rank correlation of two rank vectors (1.0: the same order)."""
    return float(spearmanr(*_pair(a, b)).statistic)
