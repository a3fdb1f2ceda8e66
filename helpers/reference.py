"""The float64 reference PageRank: the truth every kernel in the course is checked against.

Semantics, fixed once for the whole course: damping d (0.85 by default), teleport to the uniform vector
or to a personalisation vector p, the rank of dangling vertices redistributed by the same p, ranks that
sum to 1, and a stop when the L1 change between two iterates drops below ``tol`` (absolute, not scaled
by the vertex count; networkx scales its tol by N, so call it with tol / N to compare).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .graph import Graph

DAMPING = 0.85


@dataclass(frozen=True)
class PageRankResult:
    ranks: np.ndarray       # float64, sums to 1
    iterations: int         # power-iteration steps taken
    residuals: np.ndarray   # L1 change of each step
    converged: bool         # did the last residual fall below tol?
    damping: float
    tol: float


def check_damping(damping: float) -> float:
    damping = float(damping)
    if not 0.0 < damping < 1.0:
        raise ValueError(f"damping must lie strictly between 0 and 1, got {damping}")
    return damping


def check_tol(tol: float) -> float:
    tol = float(tol)
    if not tol > 0.0:
        raise ValueError(f"tol must be positive, got {tol}")
    return tol


def teleport_vector(num_vertices: int, personalization=None) -> np.ndarray:
    """Where the surfer jumps (and where dangling rank goes): uniform, or the normalised personalisation."""
    if personalization is None:
        return np.full(num_vertices, 1.0 / num_vertices)
    p = np.asarray(personalization, dtype=np.float64)
    if p.shape != (num_vertices,):
        raise ValueError(f"personalization needs one weight per vertex ({num_vertices}), got shape {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any():
        raise ValueError("personalization weights must be finite and non-negative")
    total = p.sum()
    if total == 0:
        raise ValueError("personalization is all zeros: at least one vertex needs a positive weight")
    return p / total


def pagerank_step(graph: Graph, ranks: np.ndarray, damping: float, teleport: np.ndarray) -> np.ndarray:
    """One power-iteration step in float64: pull rank along in-links, redistribute dangling mass, teleport."""
    ranks = np.asarray(ranks, dtype=np.float64)
    degree = graph.out_degree
    contributions = np.divide(ranks, degree, out=np.zeros_like(ranks), where=degree > 0)
    dangling_mass = ranks[graph.dangling].sum()
    pulled = graph.in_matrix @ contributions
    return damping * pulled + (damping * dangling_mass + (1.0 - damping)) * teleport


def pagerank(graph: Graph, damping: float = DAMPING, tol: float = 1e-10, max_iter: int = 1000,
             personalization=None) -> PageRankResult:
    """Power iteration from the uniform vector until the L1 change is below ``tol`` (or ``max_iter`` steps)."""
    damping, tol = check_damping(damping), check_tol(tol)
    if max_iter < 1:
        raise ValueError(f"max_iter must be at least 1, got {max_iter}")
    teleport = teleport_vector(graph.num_vertices, personalization)
    ranks = np.full(graph.num_vertices, 1.0 / graph.num_vertices)
    residuals = []
    for _ in range(max_iter):
        new = pagerank_step(graph, ranks, damping, teleport)
        residuals.append(float(np.abs(new - ranks).sum()))
        ranks = new
        if residuals[-1] < tol:
            break
    return PageRankResult(ranks, len(residuals), np.array(residuals), residuals[-1] < tol, damping, tol)


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
    """Is ``ranks`` a PageRank vector? One more float64 iteration must change it by less than ``tol`` (L1),
    and it must be finite, non-negative and sum to 1 within ``sum_tol``. Independent of how it was computed.
    """
    damping, tol = check_damping(damping), check_tol(tol)
    ranks = np.asarray(ranks, dtype=np.float64)
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
        return FixedPointCheck(False, residual, total, f"ranks sum to {total:.9f}, not 1 (within {sum_tol:g})")
    if residual >= tol:
        return FixedPointCheck(False, residual, total,
                               f"one more iteration moves the ranks by {residual:.3g} (L1) >= tol {tol:g}")
    return FixedPointCheck(True, residual, total,
                           f"fixed point: one more iteration moves the ranks by {residual:.3g} (L1) < {tol:g}")


# --- comparing two rank vectors -------------------------------------------------------------------

def max_abs_diff(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def l1_distance(a, b) -> float:
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).sum())


def top_k(ranks, k: int) -> np.ndarray:
    """Indices of the k largest ranks, largest first; ties go to the smaller vertex id."""
    ranks = np.asarray(ranks)
    k = min(int(k), ranks.size)
    order = np.lexsort((np.arange(ranks.size), -ranks.astype(np.float64)))
    return order[:k]


def top_k_overlap(a, b, k: int) -> float:
    """Share of the k top vertices of ``a`` that are also among the k top vertices of ``b``."""
    top_a, top_b = top_k(a, k), top_k(b, k)
    return len(np.intersect1d(top_a, top_b)) / max(len(top_a), 1)


def rank_correlation(a, b) -> float:
    """Spearman's rank correlation of two rank vectors (1.0: the same order)."""
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)
