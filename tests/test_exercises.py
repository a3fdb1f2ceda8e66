"""Exercises: student versions in step with their solutions and without outputs; every checker passes the
solution and unusual but correct answers, fails the stub and fails typical wrong answers (mutants of the
solution) with the right cause, the bounds mutants on every seed. The wrong answers include each kind that
once passed: state kept across calls, integer types too narrow for the large inputs, the task's edge cases,
reads past the end, barriers and atomics of the wrong scope, a lane stride other than the prescribed one,
and answers whose cause used to be misnamed; hostile code (a bare except in a loop, writes through the call
stack, a replaced reference) is stopped or fails. CPU checkers run everywhere; every exercise kernel
(solution, stub, mutants, correct variants, and their probed copies) compiles for a T4 without a GPU and
is linted here; the GPU checkers run in the GPU suite."""
import functools
import json
import time
import zlib

import numpy as np
import pytest

from helpers import checks, kernels
from helpers.course.tools import students as exercises
from helpers.checks.lint import lint
from helpers.checks.probe import probed

# lecture 21's finish (the whole last block adds its shares, after `if (!last) return;`), for exercise 21
LECTURE_FINISH = (
    "    __shared__ bool last;\n    __shared__ double warp_totals[2][THREADS / 32];\n"
    "    if (threadIdx.x == 0) {\n        partials[2 * blockIdx.x] = block_dangling[0];\n"
    "        partials[2 * blockIdx.x + 1] = block_change[0];\n        __threadfence();\n"
    "        last = atomicAdd(finished, 1) == gridDim.x - 1;\n    }\n    __syncthreads();\n"
    "    if (!last) return;                             // the same for the whole block\n"
    "    __threadfence();\n    double all_dangling = 0.0, all_change = 0.0;\n"
    "    for (int b = threadIdx.x; b < gridDim.x; b += THREADS) {\n"
    "        all_dangling += ((volatile float*)partials)[2 * b];\n"
    "        all_change += ((volatile float*)partials)[2 * b + 1];\n    }\n"
    "    for (int offset = 16; offset > 0; offset /= 2) {\n"
    "        all_dangling += __shfl_down_sync(0xffffffffu, all_dangling, offset);\n"
    "        all_change += __shfl_down_sync(0xffffffffu, all_change, offset);\n    }\n"
    "    if (threadIdx.x % 32 == 0) {\n        warp_totals[0][threadIdx.x / 32] = all_dangling;\n"
    "        warp_totals[1][threadIdx.x / 32] = all_change;\n    }\n    __syncthreads();\n"
    "    if (threadIdx.x == 0) {\n        double a = 0.0, c = 0.0;\n"
    "        for (int w = 0; w < THREADS / 32; ++w) { a += warp_totals[0][w]; c += warp_totals[1][w]; }\n"
    "        totals[0] = (float)a;\n        totals[1] = (float)c;\n        *finished = 0;\n    }\n")

# exercise -> [(the wrong answer, text in the solution, what replaces it, words the likely cause must
# contain)]
MUTANTS = {
    "01_pagerank_step": [
        ("dangling mass dropped", "(damping * dangling_mass + 1.0 - damping) / n", "(1.0 - damping) / n",
         "dangling mass lost"),
        ("teleport not divided by n", "(damping * dangling_mass + 1.0 - damping) / n",
         "damping * dangling_mass / n + 1.0 - damping", "not summing to 1"),
        ("out-degree of the target", "weights=contrib[sources]",
         "weights=ranks[sources] / np.maximum(graph.out_degree[targets], 1)", "not summing to 1"),
        ("degree 0 patched in the graph", "contrib = np.divide(ranks, graph.out_degree, out=np.zeros(n), "
         "where=graph.out_degree > 0)",
         "deg = graph.out_degree\n    deg[deg == 0] = 1\n    contrib = ranks / deg",
         "modified its input (graph.out_degree)"),
        ("contributions computed in the ranks",
         "contrib = np.divide(ranks, graph.out_degree, out=np.zeros(n), "
         "where=graph.out_degree > 0)",
         "has = graph.out_degree > 0\n    ranks[has] /= graph.out_degree[has]\n"
         "    contrib = np.where(has, ranks, 0.0)", "modified its input (ranks)"),
        ("hard-coded damping", "    n = graph.num_vertices\n",
         "    damping = 0.85\n    n = graph.num_vertices\n",
         "hard-coded"),
        ("renormalised", "return damping * pulled + (damping * dangling_mass + 1.0 - damping) / n",
         "new = damping * pulled + (1.0 - damping) / n\n    return new / new.sum()", "renormalised"),
        ("dangling share not damped", "(damping * dangling_mass + 1.0 - damping) / n",
         "(dangling_mass + 1.0 - damping) / n", "not damped"),
        ("float32 contributions", "weights=contrib[sources]", "weights=contrib[sources].astype(np.float32)",
         "float32 rounding"),
        ("float32 result", "return damping * pulled + (damping * dangling_mass + 1.0 - damping) / n",
         "return (damping * pulled + (damping * dangling_mass + 1.0 - damping) / n).astype(np.float32)",
         "must be float64"),
        ("no return", "return damping * pulled", "damping * pulled", "must be a 1-D array"),
        # state across calls, overflow at scale, unusual returns
        ("one buffer returned by every call",
         "    return damping * pulled + (damping * dangling_mass + 1.0 - damping) / n",
         "    out = pagerank_step.__dict__.setdefault('out', {}).setdefault(n, np.empty(n))\n"
         "    out[:] = damping * pulled + (damping * dangling_mass + 1.0 - damping) / n\n    return out",
         "state kept across calls: what your function returned was overwritten by a later call"),
        ("contributions cached per graph",
         "    contrib = np.divide(ranks, graph.out_degree, out=np.zeros(n), "
         "where=graph.out_degree > 0)",
         "    contrib = pagerank_step.__dict__.setdefault('cache', {}).setdefault(id(graph), "
         "np.divide(ranks, graph.out_degree, out=np.zeros(n), where=graph.out_degree > 0))",
         "the first call on this graph is right"),
        ("vertex ids in uint16", "np.bincount(targets, weights",
         "np.bincount(targets.astype(np.uint16), weights",
         "only the largest input"),
        ("a generator", "    return damping * pulled", "    yield damping * pulled",
         "yields instead of returning"),
        ("a longdouble result",
         "    return damping * pulled + (damping * dangling_mass + 1.0 - damping) / n",
         "    return (damping * pulled + (damping * dangling_mass + 1.0 - damping) / "
         "n).astype(np.longdouble)",
         "more digits"),
        # fresh kinds (red team, issue 23's follow-up): a cache keyed by the size, the course's own
        # answer, edges of one kind skipped, the dangling vertices taken by in-degree
        ("edges cached by the graph's size", "    sources, targets = graph.edges()\n",
         "    sources, targets = pagerank_step.__dict__.setdefault('edges', {}).setdefault(\n"
         "        n, graph.edges())\n", "right answer, but after the checker's earlier calls"),
        ("the course's reference step", None,
         "    from helpers.core import reference\n    n = graph.num_vertices\n"
         "    return reference.pagerank_step(graph, ranks, damping, reference.teleport_vector(n))\n",
         "calls helpers.core.reference.pagerank_step, the course's own answer"),
        ("self-loops dropped", "    sources, targets = graph.edges()\n",
         "    sources, targets = graph.edges()\n    keep = sources != targets\n"
         "    sources, targets = sources[keep], targets[keep]\n", "self-loops dropped"),
        ("dangling taken as no in-links", "ranks[graph.dangling].sum()", "ranks[graph.in_degree == 0].sum()",
         "not those without in-links"),
        # second red team: randomness told from state, the damping hard-coded in one term only
        ("random noise added", "    return damping * pulled",
         "    return 1e-13 * np.random.default_rng().standard_normal(n) + damping * pulled",
         "different results for the same input"),
        ("0.85 hard-coded in the teleport term", "(damping * dangling_mass + 1.0 - damping) / n",
         "(damping * dangling_mass + 1.0 - 0.85) / n", "hard-coded in (1 - d) / n"),
        ("0.85 hard-coded in the dangling share", "(damping * dangling_mass + 1.0 - damping) / n",
         "(0.85 * dangling_mass + 1.0 - damping) / n", "hard-coded in d * D / n"),
        ("0.85 hard-coded in the pulled sum", "return damping * pulled", "return 0.85 * pulled",
         "hard-coded in d * pulled"),
    ],
    "02_transpose": [
        ("bincount without minlength", "np.bincount(out_targets, minlength=num_vertices)",
         "np.bincount(out_targets)", "row bounds"),
        ("no leading 0 in the offsets", "np.concatenate([[0], np.cumsum(np.bincount(out_targets, "
         "minlength=num_vertices))])", "np.cumsum(np.bincount(out_targets, minlength=num_vertices))",
         "row bounds"),
        ("unstable sort by target", 'np.argsort(out_targets, kind="stable")', "np.argsort(out_targets)",
         "wrong order"),
        ("targets instead of sources", "return in_offsets, sources[order]",
         "return in_offsets, out_targets[order]",
         "the edges' sources"),
        ("float offsets", "np.bincount(out_targets, minlength=num_vertices)",
         "np.bincount(out_targets, weights=np.ones(out_targets.size), minlength=num_vertices)",
         "must hold integers"),
        ("the caller's targets sorted", "return in_offsets, sources[order]",
         "out_targets.sort()\n    return in_offsets, sources[order]", "modified its input (out_targets)"),
        ("the pair swapped", "return in_offsets, sources[order]", "return sources[order], in_offsets",
         "wrong order: return (in_offsets, in_sources)"),
        ("three arrays returned", "return in_offsets, sources[order]",
         "return in_offsets, sources[order], order",
         "return a pair"),
        ("only the sources returned", "return in_offsets, sources[order]", "return sources[order]",
         "return a pair"),
        ("in-degree counts in int16", "np.bincount(out_targets, minlength=num_vertices)",
         "np.bincount(out_targets, minlength=num_vertices).astype(np.int16).astype(np.int64)",
         "the in-link counts overflow int16"),
        ("an int32 sort key target * n + source", 'np.argsort(out_targets, kind="stable")',
         "np.argsort(out_targets.astype(np.int32) * np.int32(num_vertices) + sources.astype(np.int32))",
         "the sort key target * n + source overflow int32"),
        ("one buffer for the offsets", "    return in_offsets, sources[order]",
         "    buffer = transpose.__dict__.setdefault('buffer', np.zeros(10**6, dtype=np.int64))\n"
         "    buffer[:in_offsets.size] = in_offsets\n    return buffer[:in_offsets.size], sources[order]",
         "state kept across calls"),
        ("sources cached by the graph's size",
         "    sources = np.repeat(np.arange(num_vertices), np.diff(out_offsets))\n",
         "    sources = transpose.__dict__.setdefault('c', {}).setdefault(\n"
         "        num_vertices, np.repeat(np.arange(num_vertices), np.diff(out_offsets)))\n",
         "right answer, but after the checker's earlier calls"),
        ("the course's graph builder", None,
         "    from helpers.core.graph import from_edges\n"
         "    graph = from_edges(np.repeat(np.arange(num_vertices), np.diff(out_offsets)), out_targets,\n"
         "                       num_vertices)\n    return graph.in_offsets, graph.in_sources\n",
         "helpers.core.graph.from_edges, the course's own answer"),
        # second red team
        ("self-loops skipped", "    sources = np.repeat(np.arange(num_vertices), np.diff(out_offsets))\n",
         "    sources = np.repeat(np.arange(num_vertices), np.diff(out_offsets))\n"
         "    keep = sources != out_targets\n    sources, out_targets = sources[keep], out_targets[keep]\n",
         "self-loops dropped"),
        ("out-degrees counted for the offsets", "np.bincount(out_targets, minlength=num_vertices)",
         "np.diff(out_offsets)", "counts each vertex's out-links"),
    ],
    "03_power_iteration": [
        ("residual scaled by N", "change = np.abs(new - ranks).sum()", "change = np.abs(new - ranks).mean()",
         "scaled by N"),
        ("max-norm residual", "change = np.abs(new - ranks).sum()", "change = np.abs(new - ranks).max()",
         "max of the change"),
        ("dangling mass dropped", "(damping * ranks[graph.dangling].sum() + 1.0 - damping) / n",
         "(1.0 - damping) / n", "dangling mass lost"),
        ("count one too high", "for iterations in range(1, max_iter + 1):",
         "for iterations in range(2, max_iter + 2):", "off by one"),
        ("max_iter ignored", "for iterations in range(1, max_iter + 1):",
         "for iterations in range(1, 100_001):",
         "max_iter not honoured"),
        ("hard-coded damping", "    n = graph.num_vertices\n",
         "    damping = 0.85\n    n = graph.num_vertices\n",
         "hard-coded"),
        ("degree 0 patched in the graph", "    share = 1.0 / graph.out_degree[sources]",
         "    graph.out_degree[graph.out_degree == 0] = 1\n    share = 1.0 / graph.out_degree[sources]",
         "modified its input (graph.out_degree)"),
        ("renormalised",
         "new = damping * pulled + (damping * ranks[graph.dangling].sum() + 1.0 - damping) / n",
         "new = damping * pulled + (1.0 - damping) / n\n        new = new / new.sum()", "renormalised"),
        ("only the ranks returned", "return ranks, iterations", "return ranks", "return a pair"),
        ("iterations as a float", "return ranks, iterations", "return ranks, float(iterations)",
         "must be an int"),
        ("a float32 start vector", "ranks = np.full(n, 1.0 / n)",
         "ranks = np.full(n, 1.0 / n, dtype=np.float32)",
         "the start vector is float32"),
        ("a warm start kept between calls", None,
         "    n = graph.num_vertices\n    sources, targets = graph.edges()\n"
         "    share = 1.0 / graph.out_degree[sources]\n"
         "    last = power_iteration.__dict__.setdefault('last', {})\n"
         "    ranks = last.get(n, np.full(n, 1.0 / n))\n"
         "    for iterations in range(1, max_iter + 1):\n"
         "        pulled = np.bincount(targets, weights=ranks[sources] * share, minlength=n)\n"
         "        new = damping * pulled + (damping * ranks[graph.dangling].sum() + 1.0 - damping) / n\n"
         "        change = np.abs(new - ranks).sum()\n        ranks = new\n        if change < tol:\n"
         "            break\n"
         "    last[n] = ranks\n    return ranks, iterations\n",
         "a warm start: this run started from the ranks an earlier call returned"),
        ("the change as a difference of sums", "change = np.abs(new - ranks).sum()",
         "change = abs(new.sum() - ranks.sum())", "the loop stopped after 1 step(s) although"),
        ("the new ranks written into the old array",
         "        new = damping * pulled + (damping * ranks[graph.dangling].sum() + 1.0 - damping) / n\n",
         "        new = ranks\n        new[:] = damping * pulled + (damping * ranks[graph.dangling].sum() + "
         "1.0 - damping) / n\n",
         "the loop stopped after 1 step(s) although"),
        ("edges cached by the graph's size", "    sources, targets = graph.edges()\n",
         "    sources, targets = power_iteration.__dict__.setdefault('edges', {}).setdefault(\n"
         "        n, graph.edges())\n", "right answer, but after the checker's earlier calls"),
        ("the course's reference", None,
         "    from helpers.core import reference\n"
         "    result = reference.pagerank(graph, damping, tol, max_iter=max_iter)\n"
         "    return result.ranks, result.iterations\n", "helpers.core.reference.pagerank, the course's own"),
        ("the pair swapped", "return ranks, iterations", "return iterations, ranks",
         "the pair is in the wrong order"),
        # second red team
        ("random noise added", "return ranks, iterations",
         "return ranks + 1e-11 * np.random.standard_normal(n), iterations",
         "different results for the same input"),
        ("0.85 hard-coded in the teleport term", "+ 1.0 - damping) / n", "+ 1.0 - 0.85) / n",
         "hard-coded in (1 - d) / n"),
        ("self-loops dropped", "    sources, targets = graph.edges()\n",
         "    sources, targets = graph.edges()\n    keep = sources != targets\n"
         "    sources, targets = sources[keep], targets[keep]\n", "self-loops dropped"),
        ("dangling taken as no in-links", "ranks[graph.dangling].sum()", "ranks[graph.in_degree == 0].sum()",
         "not those without in-links"),
        ("a start vector of ones", "ranks = np.full(n, 1.0 / n)", "ranks = np.ones(n)",
         "the start vector is np.ones(n)"),
    ],
    "33_top_k": [
        ("reversed ascending sort", 'np.argsort(-np.asarray(ranks), kind="stable")',
         'np.argsort(np.asarray(ranks), kind="stable")[::-1]', "ties broken the wrong way"),
        ("argpartition, unordered",
         'order = np.argsort(-np.asarray(ranks), kind="stable")\n    return order[:k]',
         "return np.argpartition(-np.asarray(ranks), min(k, len(ranks)) - 1)[:k]", "wrong"),
        ("the caller's ranks reordered", "    return order[:k]",
         "    ranks[:] = ranks[order]\n    return order[:k]",
         "modified its input (ranks)"),
        ("float indices", "return order[:k]", "return order[:k].astype(float)", "must hold integers"),
        ("the ranks returned", "return order[:k]", "return np.asarray(ranks)[order[:k]]",
         "ranks themselves"),
        ("default (unstable) sort", 'np.argsort(-np.asarray(ranks), kind="stable")',
         "np.argsort(-np.asarray(ranks))",
         "ties broken the wrong way"),
        ("one short", "return order[:k]", "return order[:k - 1]", "exactly k"),
        ("a [-k:] slice, all for k = 0", "return order[:k]", "return order[::-1][-k:][::-1]",
         "k = 0 must give no index"),
        ("compared in float32", 'np.argsort(-np.asarray(ranks), kind="stable")',
         'np.argsort(-np.asarray(ranks, dtype=np.float32), kind="stable")', "compared in float32"),
        ("ids in int16", "return order[:k]", "return order[:k].astype(np.int16)",
         "the vertex ids overflow int16"),
        ("a view of one buffer", "    return order[:k]",
         "    buffer = top_k.__dict__.setdefault('buffer', np.zeros(10**6, dtype=np.int64))\n"
         "    buffer[:order[:k].size] = order[:k]\n    return buffer[:order[:k].size]",
         "state kept across calls"),
        ("a result memoised by (n, k)", None,
         "    memo = top_k.__dict__.setdefault('memo', {})\n    if (len(ranks), k) not in memo:\n"
         "        memo[len(ranks), k] = np.argsort(-np.asarray(ranks), kind='stable')[:k].copy()\n"
         "    return memo[len(ranks), k]\n", "right answer, but after the checker's earlier calls"),
        ("the course's reference", None,
         "    from helpers.core import reference\n    return reference.top_k(ranks, k)\n",
         "calls helpers.core.reference.top_k, the course's own answer"),
        ("compared in float16", 'np.argsort(-np.asarray(ranks), kind="stable")',
         'np.argsort(-np.asarray(ranks, dtype=np.float16), kind="stable")', "compared in float16"),
        ("ranks rounded to 10 decimals", 'np.argsort(-np.asarray(ranks), kind="stable")',
         'np.argsort(-np.round(np.asarray(ranks), 10), kind="stable")', "rounded to 10 decimals"),
        # second red team
        ("ties shuffled at random", 'order = np.argsort(-np.asarray(ranks), kind="stable")',
         'p = np.random.permutation(len(ranks))\n'
         '    order = p[np.argsort(-np.asarray(ranks)[p], kind="stable")]',
         "different results for the same input"),
        ("ascending order", 'order = np.argsort(-np.asarray(ranks), kind="stable")',
         'order = np.argsort(np.asarray(ranks), kind="stable")', "the k smallest ranks"),
    ],
    "10_pull_grid_stride": [
        ("no grid-stride step", "v += stride)", "v += n)", "never written"),
        ("off-by-one row bound", "k < in_offsets[v + 1]", "k <= in_offsets[v + 1]", "row bounds"),
        ("v <= n", "v < n;", "v <= n;", "past the end"),
        ("stride of one block", "long long stride = (long long)blockDim.x * gridDim.x;",
         "long long stride = blockDim.x;", "wrong grid stride"),
        ("start without blockIdx", "long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
         "long long v = threadIdx.x;", "wrong grid stride"),
        ("last in-link skipped", "k < in_offsets[v + 1]", "k < in_offsets[v + 1] - 1",
         "misses its last in-link"),
        ("out-degree of v", "sum += rank[u] / out_degree[u];", "sum += rank[u] / out_degree[v];",
         "the out-degree of u"),
        ("the stride written as the one launch's 384",
         "long long stride = (long long)blockDim.x * gridDim.x;", "long long stride = 384;",
         "not by a number that fits one launch"),
    ],
    "11_push_atomic": [
        ("missing atomicAdd", "atomicAdd(&pulled[out_targets[k]], share);",
         "pulled[out_targets[k]] += share;",
         "race"),
        ("off-by-one row bound", "k < out_offsets[u + 1]", "k <= out_offsets[u + 1]", "row bounds"),
        ("no u < n", "if (u >= n || out_degree[u] == 0) return;", "if (out_degree[u] == 0) return;",
         "pushed rank"),
        ("u > n", "if (u >= n || out_degree[u] == 0) return;", "if (u > n || out_degree[u] == 0) return;",
         "pushed rank"),
        ("rank not divided", "float share = rank[u] / out_degree[u];", "float share = rank[u];",
         "adds rank[u] / out_degree[u]"),
        ("last out-link skipped", "k < out_offsets[u + 1]", "k < out_offsets[u + 1] - 1",
         "misses its last out-link"),
        ("rank read before the bounds check", "    if (u >= n || out_degree[u] == 0) return;\n"
         "    float share = rank[u] / out_degree[u];",
         "    float share = rank[u] / out_degree[u];\n    if (u >= n || out_degree[u] == 0) return;",
         "outside its"),
        ("atomicAdd_block", "atomicAdd(&pulled[out_targets[k]], share);",
         "atomicAdd_block(&pulled[out_targets[k]], share);", "atomic only among the threads of one block"),
    ],
    "12_contributions_split": [
        ("no dangling guard", "contrib[u] = degree > 0 ? rank[u] / degree : 0.0f;",
         "contrib[u] = rank[u] / degree;",
         "out-degree 0"),
        ("dangling contributions never written", "contrib[u] = degree > 0 ? rank[u] / degree : 0.0f;",
         "if (degree > 0) contrib[u] = rank[u] / degree;", "never written"),
        ("u > n", "if (u >= n) return;", "if (u > n) return;", "past the end"),
        ("no u < n", "    if (u >= n) return;\n", "", "past the end"),
        ("dangling_rank for every vertex", "dangling_rank[u] = degree > 0 ? 0.0f : rank[u];",
         "dangling_rank[u] = rank[u];", "0 for the others"),
        ("rank as a dangling contribution", "contrib[u] = degree > 0 ? rank[u] / degree : 0.0f;",
         "contrib[u] = degree > 0 ? rank[u] / degree : rank[u];", "0 for dangling ones"),
        ("the next vertex written too", "    if (u >= n) return;\n",
         "    if (u >= n) return;\n    if (u + 1 < n) { int d1 = out_degree[u + 1]; contrib[u + 1] = d1 > 0 "
         "? rank[u + 1] / d1 : 0.0f; }\n", "stored by several threads"),
        ("out_degree read before the bounds check",
         "    if (u >= n) return;\n    int degree = out_degree[u];",
         "    int degree = out_degree[u];\n    if (u >= n) return;", "outside its"),
    ],
    "13_pull_warp": [
        ("shuffle tree from offset 8", "int offset = 16;", "int offset = 8;", "not all combined"),
        ("lane stride 1", "k += 32", "k += 1", "not all combined"),
        ("no v < n", "    if (v >= n) return;", "", "past the end"),
        ("half-warp mask", "__shfl_down_sync(0xffffffffu", "__shfl_down_sync(0x0000ffffu",
         "leaves out lanes"),
        ("__activemask as the mask", "__shfl_down_sync(0xffffffffu", "__shfl_down_sync(__activemask()",
         "__activemask() used as a mask"),
        ("idle lanes return", "    float sum = 0.0f;\n",
         "    if (lane >= in_offsets[v + 1] - in_offsets[v]) return;   // no in-link for this lane\n"
         "    float sum = 0.0f;\n", "after some lanes of the warp may have returned"),
        ("every lane stores", "        sum += __shfl_down_sync(0xffffffffu, sum, offset);\n    }\n"
         "    if (lane == 0) pulled[v] = sum;",
         "        sum += __shfl_xor_sync(0xffffffffu, sum, offset);\n    }\n    pulled[v] = sum;",
         "several lanes store"),
        ("lanes read contiguous chunks",
         "    for (int k = in_offsets[v] + lane; k < in_offsets[v + 1]; k += 32) {",
         "    int chunk = (in_offsets[v + 1] - in_offsets[v] + 31) / 32;\n"
         "    int begin = in_offsets[v] + lane * chunk;\n"
         "    for (int k = begin; k < min(begin + chunk, in_offsets[v + 1]); ++k) {",
         "do not stride the in-links by 32"),
    ],
    "14_pull_list": [
        ("shuffle with the wrong width", "for (int offset = width / 2; offset > 0; offset /= 2) {\n"
         "        sum += __shfl_down_sync(0xffffffffu, sum, offset, width);",
         "for (int offset = 16; offset > 0; offset /= 2) {\n"
         "        sum += __shfl_down_sync(0xffffffffu, sum, offset);",
         "neighbouring group"),
        ("lane numbered within the warp", "int lane = threadIdx.x % width;", "int lane = threadIdx.x % 32;",
         "lane = threadIdx.x % width"),
        ("index instead of the listed vertex", "vertices[i] : -1", "i : -1", "wrong vertex"),
        ("no i < count", "int v = i < count ? vertices[i] : -1;", "int v = vertices[i];", "i < count"),
        ("i <= count", "int v = i < count ?", "int v = i <= count ?", "i < count"),
        ("groups past the list return", "int v = i < count ? vertices[i] : -1;",
         "if (i >= count) return;\n    int v = vertices[i];",
         "after some lanes of the warp may have returned"),
        ("shuffles inside the branch",
         "        for (int k = in_offsets[v] + lane; k < in_offsets[v + 1]; k += width)\n"
         "            sum += contrib[in_sources[k]];\n    }\n"
         "    for (int offset = width / 2; offset > 0; offset /= 2) {\n"
         "        sum += __shfl_down_sync(0xffffffffu, sum, offset, width);\n    }",
         "        for (int k = in_offsets[v] + lane; k < in_offsets[v + 1]; k += width)\n"
         "            sum += contrib[in_sources[k]];\n"
         "        for (int offset = width / 2; offset > 0; offset /= 2) {\n"
         "            sum += __shfl_down_sync(0xffffffffu, sum, offset, width);\n        }\n    }",
         "inside code that only some lanes of the warp run"),
        ("every lane stores", "        sum += __shfl_down_sync(0xffffffffu, sum, offset, width);\n    }\n"
         "    if (v >= 0 && lane == 0) pulled[v] = sum;",
         "        sum += __shfl_xor_sync(0xffffffffu, sum, offset, width);\n    }\n"
         "    if (v >= 0) pulled[v] = sum;",
         "several lanes store"),
        ("lanes read contiguous chunks",
         "        for (int k = in_offsets[v] + lane; k < in_offsets[v + 1]; k += width)\n"
         "            sum += contrib[in_sources[k]];",
         "        int chunk = (in_offsets[v + 1] - in_offsets[v] + width - 1) / width;\n"
         "        int begin = in_offsets[v] + lane * chunk;\n"
         "        for (int k = begin; k < min(begin + chunk, in_offsets[v + 1]); ++k) sum += "
         "contrib[in_sources[k]];",
         "do not stride the in-links by width"),
    ],
    "20_l1_change": [
        ("missing atomicAdd", "atomicAdd(total, partial[0]);", "*total += partial[0];", "race"),
        ("residual scaled by N", "atomicAdd(total, partial[0]);", "atomicAdd(total, partial[0] / n);",
         "scaled by N"),
        ("no absolute value", "fabsf(new_rank[i] - old_rank[i])", "(new_rank[i] - old_rank[i])", "fabsf"),
        ("no i < n", "partial[threadIdx.x] = i < n ? fabsf(new_rank[i] - old_rank[i]) : 0.0f;",
         "partial[threadIdx.x] = fabsf(new_rank[i] - old_rank[i]);", "past n were added"),
        ("slots past n never written",
         "partial[threadIdx.x] = i < n ? fabsf(new_rank[i] - old_rank[i]) : 0.0f;",
         "if (i < n) partial[threadIdx.x] = fabsf(new_rank[i] - old_rank[i]);",
         "shared memory it never wrote"),
        ("an atomicAdd per element",
         "partial[threadIdx.x] = i < n ? fabsf(new_rank[i] - old_rank[i]) : 0.0f;",
         "partial[threadIdx.x] = i < n ? fabsf(new_rank[i] - old_rank[i]) : 0.0f;\n"
         "    if (i < n) atomicAdd(total, partial[threadIdx.x]);\n    return;", "one atomicAdd per block"),
        ("no barrier between steps", "partial[threadIdx.x + stride];\n        __syncthreads();",
         "partial[threadIdx.x + stride];", "no __syncwarp() or __syncthreads() between them"),
        ("last warp without __syncwarp",
         "    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {\n"
         "        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];\n"
         "        __syncthreads();\n    }",
         "    for (int stride = blockDim.x / 2; stride > 32; stride /= 2) {\n"
         "        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];\n"
         "        __syncthreads();\n    }\n    if (threadIdx.x < 32) {\n"
         "        volatile float* s = partial;\n"
         "        s[threadIdx.x] += s[threadIdx.x + 32];\n        s[threadIdx.x] += s[threadIdx.x + 16];\n"
         "        s[threadIdx.x] += s[threadIdx.x + 8];\n        s[threadIdx.x] += s[threadIdx.x + 4];\n"
         "        s[threadIdx.x] += s[threadIdx.x + 2];\n        s[threadIdx.x] += s[threadIdx.x + 1];\n"
         "    }",
         "no __syncwarp() or __syncthreads() between them"),
        ("a barrier inside if (threadIdx.x < stride)",
         "        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];\n"
         "        __syncthreads();",
         "        if (threadIdx.x < stride) {\n"
         "            partial[threadIdx.x] += partial[threadIdx.x + stride];\n"
         "            __syncthreads();\n        }", "inside code that only part of the block runs"),
        ("an early return before the barriers",
         "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
         "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= n) return;\n",
         "after some threads of the block may have returned"),
    ],
    "21_fused_update": [
        ("the counter compared with gridDim.x", "== gridDim.x - 1) {", "== gridDim.x) {",
         "no block found itself last"),
        ("the counter never reset",
         "            *finished = 0;                         // ready for the next launch\n", "",
         "the counter is not reset"),
        ("only the last block's own shares", "for (int b = 0; b < gridDim.x; ++b) {",
         "for (int b = blockIdx.x; b <= blockIdx.x; ++b) {", "only one block's shares"),
        ("the old ranks' dangling mass", "if (degree == 0) dangling += r;",
         "if (degree == 0) dangling += rank[v];",
         "the dangling mass of the OLD ranks"),
        ("every vertex counted as dangling", "if (degree == 0) dangling += r;", "dangling += r;",
         "the new rank of every vertex"),
        ("signed differences", "change += fabsf(r - rank[v]);", "change += r - rank[v];",
         "signed differences cancel"),
        ("no grid-stride loop", "v < n; v += stride)", "v < n; v += n)", "grid-stride loop"),
        ("threads past n return before the tree",
         "    float dangling = 0.0f, change = 0.0f;          // this thread's two shares\n",
         "    float dangling = 0.0f, change = 0.0f;          // this thread's two shares\n"
         "    if ((long long)blockIdx.x * blockDim.x + threadIdx.x >= n) return;\n",
         "after some threads of the block may have returned"),
        ("blocks without a vertex skip their shares",
         "    if (threadIdx.x == 0) {\n        partials[2 * blockIdx.x]",
         "    if ((long long)blockIdx.x * blockDim.x >= n) return;\n"
         "    if (threadIdx.x == 0) {\n        partials[2 * blockIdx.x]",
         "blocks counted themselves in"),
        ("float atomics into totals",
         "        if (atomicAdd(finished, 1) == gridDim.x - 1) {           // the last block to arrive\n",
         "        atomicAdd(&totals[0], block_dangling[0]);\n"
         "        atomicAdd(&totals[1], block_change[0]);\n"
         "        if (atomicAdd(finished, 1) == gridDim.x - 1) {           // the last block to arrive\n",
         "float atomics into totals"),
        ("no __threadfence before the count",
         "        __threadfence();                           // the shares are visible before the count\n",
         "",
         "no __threadfence() between writing the block's shares"),
        ("no barrier between the tree's steps",
         "            block_change[threadIdx.x] += block_change[threadIdx.x + half];\n        }\n"
         "        __syncthreads();\n",
         "            block_change[threadIdx.x] += block_change[threadIdx.x + half];\n        }\n",
         "no __syncwarp() or __syncthreads() between them"),
        ("dangling mass dropped", "(d * dangling_mass + (1.0f - d)) / n", "(1.0f - d) / n",
         "dangling mass lost"),
        ("hard-coded damping", "float r = d * sum + base;",
         "float r = 0.85f * sum + (0.85f * dangling_mass + 0.15f) / n;", "hard-coded"),
        ("no dangling guard", "degree > 0 ? r / degree : 0.0f", "r / degree", "out-degree 0"),
        ("next contribution from the old one", "new_contrib[v] = degree > 0 ? r / degree : 0.0f;",
         "new_contrib[v] = degree > 0 ? contrib[v] : 0.0f;", "the NEW rank / out-degree"),
    ],
    "22_reorder": [
        ("ascending order", "np.argsort(-np.asarray(out_degree, dtype=np.int64), kind=\"stable\")",
         "np.argsort(np.asarray(out_degree, dtype=np.int64), kind=\"stable\")", "the order is ascending"),
        ("ties reversed", "np.argsort(-np.asarray(out_degree, dtype=np.int64), kind=\"stable\")",
         "np.argsort(np.asarray(out_degree, dtype=np.int64), kind=\"stable\")[::-1]",
         "equal out-degrees must stay in increasing old id"),
        ("the sorted degrees", "np.argsort(-np.asarray(out_degree, dtype=np.int64), kind=\"stable\")",
         "np.sort(np.asarray(out_degree, dtype=np.int64))[::-1]", "perm holds out-degrees"),
        ("in-degree order", "np.argsort(-np.asarray(out_degree, dtype=np.int64), kind=\"stable\")",
         "np.argsort(-np.diff(in_offsets).astype(np.int64), kind=\"stable\")", "ordered by in-degree"),
        ("new_id returned for perm", "return perm, offsets, new_sources[order]",
         "return new_id, offsets, new_sources[order]", "you returned new_id"),
        ("sources not renamed", "new_sources, new_targets = new_id[in_sources], new_id[targets]",
         "new_sources, new_targets = np.asarray(in_sources), new_id[targets]",
         "the sources were not renamed"),
        ("sources renamed with perm", "new_sources, new_targets = new_id[in_sources], new_id[targets]",
         "new_sources, new_targets = perm[in_sources], new_id[targets]", "renamed with perm instead"),
        ("rows not moved", "new_sources, new_targets = new_id[in_sources], new_id[targets]",
         "new_sources, new_targets = new_id[in_sources], targets", "the rows were not moved"),
        ("rows not sorted by source", "order = np.lexsort((new_sources, new_targets))",
         "order = np.argsort(new_targets, kind=\"stable\")", "the right in-links in the wrong order"),
        ("an int32 sort key", "order = np.lexsort((new_sources, new_targets))",
         "order = np.argsort(new_targets.astype(np.int32) * np.int32(n) + new_sources.astype(np.int32),\n"
         "                       kind=\"stable\")", "overflow int32"),
        ("the caller's sources renamed in place",
         "    new_sources, new_targets = new_id[in_sources], new_id[targets]\n",
         "    in_sources[:] = new_id[in_sources]\n"
         "    new_sources, new_targets = in_sources, new_id[targets]\n",
         "modified its input (in_sources)"),
        ("float offsets", "np.bincount(new_targets, minlength=n)",
         "np.bincount(new_targets, weights=np.ones(new_targets.size), minlength=n)", "must hold integers"),
        ("in_sources in int16", "return perm, offsets, new_sources[order]",
         "return perm, offsets, new_sources[order].astype(np.int16)", "in_sources overflow int16"),
        ("perm in int16", "return perm, offsets, new_sources[order]",
         "return perm.astype(np.int16), offsets, new_sources[order]", "perm overflow int16"),
        ("offsets in uint16", "return perm, offsets, new_sources[order]",
         "return perm, offsets.astype(np.uint16), new_sources[order]", "in_offsets overflow uint16"),
        ("new ids cached by the graph's size", "    new_id = np.empty(n, dtype=np.int64)\n"
         "    new_id[perm] = np.arange(n)",
         "    cache = reorder.__dict__.setdefault('ids', {})\n    if n not in cache:\n"
         "        cache[n] = np.empty(n, dtype=np.int64)\n        cache[n][perm] = np.arange(n)\n"
         "    new_id = cache[n]", "right answer, but after the checker's earlier calls"),
    ],
    "31_beat_the_library": [
        ("no v < n", "    if (v < n) y[v] = sum;", "    y[v] = sum;", "past the end"),
        ("off-by-one row bound", "for (int k = begin; k < end; ++k)", "for (int k = begin; k <= end; ++k)",
         "row bounds"),
        ("long lists never summed", "    while (waiting) {", "    while (waiting && false) {",
         "in-links are right, wrong ones have"),
        ("__activemask as the mask", "__ballot_sync(FULL, long_list)",
         "__ballot_sync(__activemask(), long_list)", "__activemask() used as a mask"),
        ("x read in 16 bits", "        for (int k = begin; k < end; ++k) sum += x[in_sources[k]];",
         "        for (int k = begin; k < end; ++k)\n"
         "            sum += __uint_as_float(__float_as_uint(x[in_sources[k]]) & 0xffff0000u);",
         "further from float64 than float32 additions explain"),
        ("x overwritten", "    n = dg.num_vertices\n", "    n = dg.num_vertices\n    x *= 2\n",
         "modified its input (x)"),
        ("a grid one block short", "((n + 255) // 256,)", "(max(n // 256, 1),)", "never written"),
    ],
    "40_pull_bfloat16": [
        ("read as IEEE float16",
         "        unsigned int bits = (unsigned int)contrib[in_sources[k]] << 16;\n"
         "        sum += __uint_as_float(bits);\n",
         "        float value;\n"
         "        asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(value) : \"h\"(contrib[in_sources[k]]));\n"
         "        sum += value;\n", "read as IEEE float16"),
        ("converted as an integer",
         "        unsigned int bits = (unsigned int)contrib[in_sources[k]] << 16;\n"
         "        sum += __uint_as_float(bits);\n",
         "        sum += (float)contrib[in_sources[k]];\n", "converted as an integer"),
        ("bits not shifted", "(unsigned int)contrib[in_sources[k]] << 16;",
         "(unsigned int)contrib[in_sources[k]];", "the bits were not shifted"),
        ("the sum kept in 16 bits", "        sum += __uint_as_float(bits);\n",
         "        unsigned int s = __float_as_uint(sum + __uint_as_float(bits));\n"
         "        s += 0x7fffu + ((s >> 16) & 1u);\n        sum = __uint_as_float(s & 0xffff0000u);\n",
         "kept in 16 bits"),
        ("shifted the wrong way", "<< 16;", ">> 16;", "nothing was added"),
        ("off-by-one row bound", "k < in_offsets[v + 1]", "k <= in_offsets[v + 1]", "row bounds"),
        ("v <= n", "if (v >= n) return;", "if (v > n) return;", "past the end"),
        ("last in-link skipped", "k < in_offsets[v + 1]", "k < in_offsets[v + 1] - 1",
         "misses its last in-link"),
    ],
}

# exercise -> [(the unusual but correct answer, text in the solution, what replaces it)]: they must pass
CORRECT = {
    "01_pagerank_step": [
        ("a Python loop over vertices", None,
         "    n = graph.num_vertices\n    new = np.empty(n)\n"
         "    dangling_mass = sum(ranks[u] for u in range(n) if graph.out_degree[u] == 0)\n"
         "    for v in range(n):\n        total = 0.0\n"
         "        for u in graph.in_sources[graph.in_offsets[v]:graph.in_offsets[v + 1]]:\n"
         "            total += ranks[u] / graph.out_degree[u]\n"
         "        new[v] = damping * total + (damping * dangling_mass + 1.0 - damping) / n\n    return new\n"
         ""),
        ("the in-matrix product", None,
         "    n = graph.num_vertices\n    degree = graph.out_degree\n"
         "    contrib = np.where(degree > 0, ranks / np.maximum(degree, 1), 0.0)\n"
         "    return damping * (graph.in_matrix @ contrib) + (damping * ranks @ graph.dangling + 1 - "
         "damping) / n\n"),
        ("a Python list of floats",
         "    return damping * pulled + (damping * dangling_mass + 1.0 - damping) / n",
         "    return list(damping * pulled + (damping * dangling_mass + 1.0 - damping) / n)"),
        ("the missing mass filled in (ranks sum to 1)",
         "    return damping * pulled + (damping * dangling_mass + 1.0 - damping) / n",
         "    new = damping * pulled\n    return new + (1.0 - new.sum()) / n"),
        ("np.add.at and 1 - the linked ranks", None,
         "    n = graph.num_vertices\n    s, t = graph.edges()\n    new = np.zeros(n)\n"
         "    np.add.at(new, t, ranks[s] / graph.out_degree[s])\n"
         "    mass = 1.0 - ranks[graph.out_degree > 0].sum()\n"
         "    return damping * new + (damping * mass + 1 - damping) / n\n"),
        ("a SciPy COO matrix built from the edges", None,
         "    import scipy.sparse as sp\n    n = graph.num_vertices\n    s, t = graph.edges()\n"
         "    a = sp.coo_matrix((1.0 / graph.out_degree[s], (t, s)), shape=(n, n)).tocsr()\n"
         "    return damping * (a @ ranks) + (damping * ranks[graph.dangling].sum() + 1 - damping) / n\n"),
        # second red team
        ("a pandas Series", "    return damping * pulled + (damping * dangling_mass + 1.0 - damping) / n",
         "    import pandas as pd\n"
         "    return pd.Series(damping * pulled + (damping * dangling_mass + 1.0 - damping) / n)"),
        ("a read-only, non-contiguous view, printed every call",
         "    return damping * pulled + (damping * dangling_mass + 1.0 - damping) / n",
         "    out = np.repeat(damping * pulled + (damping * dangling_mass + 1.0 - damping) / n, 2)[::2]\n"
         "    out.setflags(write=False)\n    print(out)\n    return out"),
        ("a list of NumPy scalars",
         "    return damping * pulled + (damping * dangling_mass + 1.0 - damping) / n",
         "    new = damping * pulled + (damping * dangling_mass + 1.0 - damping) / n\n"
         "    return [np.float64(x) for x in new]"),
        ("seeded noise that cancels",
         "    return damping * pulled + (damping * dangling_mass + 1.0 - damping) / n",
         "    noise = np.random.default_rng(0).standard_normal(n)\n"
         "    return (damping * pulled + noise) - noise + (damping * dangling_mass + 1.0 - damping) / n"),
    ],
    "02_transpose": [
        ("a Python loop over vertices", None,
         "    rows = [[] for _ in range(num_vertices)]\n    for u in range(num_vertices):\n"
         "        for k in range(out_offsets[u], out_offsets[u + 1]):\n"
         "            rows[out_targets[k]].append(u)\n"
         "    in_offsets = np.zeros(num_vertices + 1, dtype=np.int64)\n"
         "    in_offsets[1:] = np.cumsum([len(r) for r in rows])\n"
         "    return in_offsets, np.array([u for r in rows for u in r], dtype=np.int32)\n"),
        ("lexsort and searchsorted", None,
         "    sources = np.repeat(np.arange(num_vertices), np.diff(out_offsets))\n"
         "    order = np.lexsort((sources, out_targets))\n"
         "    return np.searchsorted(out_targets[order], np.arange(num_vertices + 1)), sources[order]\n"),
        ("SciPy's transpose", None,
         "    import scipy.sparse as sp\n    n = num_vertices\n"
         "    a = sp.csr_matrix((np.ones(len(out_targets)), out_targets, out_offsets), shape=(n, n))\n"
         "    t = a.T.tocsr()\n    return t.indptr, t.indices\n"),
        ("a counting sort in loops, unsigned results", None,
         "    counts = np.zeros(num_vertices + 1, dtype=np.int64)\n"
         "    for t in out_targets:\n        counts[t + 1] += 1\n    offsets = np.cumsum(counts)\n"
         "    fill, out = offsets[:-1].copy(), np.empty(len(out_targets), dtype=np.int64)\n"
         "    for u in range(num_vertices):\n        for k in range(out_offsets[u], out_offsets[u + 1]):\n"
         "            out[fill[out_targets[k]]] = u\n            fill[out_targets[k]] += 1\n"
         "    return offsets.astype(np.uint32), out.astype(np.uint32)\n"),
        ("sources by searchsorted, int32 arrays in a list", None,
         "    m = len(out_targets)\n"
         "    sources = np.searchsorted(out_offsets, np.arange(m), side='right') - 1\n"
         "    order = np.lexsort((sources, out_targets))\n"
         "    counts = np.bincount(out_targets, minlength=num_vertices)\n"
         "    offsets = np.concatenate([[0], np.cumsum(counts)])\n"
         "    return [offsets.astype(np.int32), sources[order].astype(np.int32)]\n"),
    ],
    "03_power_iteration": [
        ("normalised after every step", "        ranks = new\n", "        ranks = new / new.sum()\n"),
        ("a while loop with a counter", None,
         "    n = graph.num_vertices\n    sources, targets = graph.edges()\n"
         "    ranks = np.full(n, 1.0 / n)\n"
         "    iterations, change = 0, np.inf\n    while change >= tol and iterations < max_iter:\n"
         "        pulled = np.bincount(targets, weights=ranks[sources] / graph.out_degree[sources], "
         "minlength=n)\n"
         "        new = damping * pulled + (damping * ranks[graph.dangling].sum() + 1.0 - damping) / n\n"
         "        change = np.linalg.norm(new - ranks, 1)\n        ranks = new\n        iterations += 1\n"
         "    return ranks, iterations\n"),
        ("two buffers swapped every step", None,
         "    n = graph.num_vertices\n    sources, targets = graph.edges()\n"
         "    share = 1.0 / graph.out_degree[sources]\n"
         "    old, new = np.full(n, 1.0 / n), np.empty(n)\n    for iterations in range(1, max_iter + 1):\n"
         "        new[:] = damping * np.bincount(targets, weights=old[sources] * share, minlength=n)\n"
         "        new += (damping * old[graph.dangling].sum() + 1.0 - damping) / n\n"
         "        change = np.abs(new - old).sum()\n        old, new = new, old\n        if change < tol:\n"
         "            break\n    return old, iterations\n"),
        ("a SciPy matrix, ranks as a list, a NumPy count", None,
         "    import scipy.sparse as sp\n    n = graph.num_vertices\n    s, t = graph.edges()\n"
         "    a = sp.csr_matrix((1.0 / graph.out_degree[s], (t, s)), shape=(n, n))\n"
         "    x, steps = np.full(n, 1.0 / n), np.int64(0)\n    while steps < max_iter:\n"
         "        steps += 1\n"
         "        y = damping * (a @ x) + (damping * x[graph.out_degree == 0].sum() + 1 - damping) / n\n"
         "        change, x = np.abs(y - x).sum(), y\n        if change < tol:\n            break\n"
         "    return list(x), steps\n"),
        ("a pandas Series and an np.int32 count", "return ranks, iterations",
         "import pandas as pd\n    return pd.Series(ranks), np.int32(iterations)"),
        ("while True, the L1 change with np.sum", None,
         "    n = graph.num_vertices\n    s, t = graph.edges()\n    x = np.full(n, 1.0 / n)\n    k = 0\n"
         "    while True:\n        y = np.bincount(t, weights=x[s] / graph.out_degree[s], minlength=n)\n"
         "        y = damping * y + (damping * x[graph.out_degree == 0].sum() + 1 - damping) / n\n"
         "        k += 1\n        done = np.sum(np.abs(y - x)) < tol\n        x = y\n"
         "        if done or k == max_iter:\n            return x, k\n"),
    ],
    "33_top_k": [
        ("lexsort", None, "    return np.lexsort((np.arange(len(ranks)), -np.asarray(ranks)))[:k]\n"),
        ("heapq", None,
         "    import heapq\n    return heapq.nsmallest(k, range(len(ranks)), key=lambda i: (-ranks[i], i))\n"
         ""),
        ("one cached order per vector, views of it returned", None,
         "    cache = top_k.__dict__.setdefault('cache', {})\n    key = np.asarray(ranks).tobytes()\n"
         "    if key not in cache:\n"
         "        cache[key] = np.lexsort((np.arange(len(ranks)), -np.asarray(ranks)))\n"
         "    return cache[key][:k]\n"),
        ("sorted with a (-rank, id) key", None,
         "    order = sorted(range(len(ranks)), key=lambda i: (-ranks[i], i))\n"
         "    return np.array(order[:k], dtype=np.int64)\n"),
        ("heapq.nlargest on ids, a list back", None,
         "    import heapq\n    return heapq.nlargest(k, range(len(ranks)), key=ranks.__getitem__)\n"),
        ("a threshold from np.partition, then a lexsort of the candidates", None,
         "    r = np.asarray(ranks)\n    k = min(k, r.size)\n    if k == 0:\n"
         "        return np.zeros(0, dtype=np.int64)\n    cut = np.partition(r, r.size - k)[r.size - k]\n"
         "    top = np.flatnonzero(r >= cut)\n    return top[np.lexsort((top, -r[top]))][:k]\n"),
        ("the ranks negated in place and restored, unsigned ids", None,
         "    ranks *= -1\n    order = np.argsort(ranks, kind='mergesort')\n    ranks *= -1\n"
         "    return order[:k].astype(np.uint32)\n"),
        ("sorted with reverse=True (stable too)", None,
         "    order = sorted(range(len(ranks)), key=lambda i: ranks[i], reverse=True)\n"
         "    return np.array(order[:k], dtype=np.int64)\n"),
    ],
    "10_pull_grid_stride": [
        ("a while loop", None,
         "    long long stride = (long long)gridDim.x * blockDim.x;\n"
         "    long long v = threadIdx.x + (long long)blockIdx.x * blockDim.x;\n"
         "    while (v < n) {\n        float sum = 0.0f;\n"
         "        for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k) sum += rank[in_sources[k]] / "
         "out_degree[in_sources[k]];\n        pulled[v] = sum;\n        v += stride;\n    }\n"),
        ("in-links unrolled by 4", None,
         "    long long stride = (long long)blockDim.x * gridDim.x;\n"
         "    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) {\n"
         "        int k = in_offsets[v], end = in_offsets[v + 1];\n        float sum = 0.0f;\n"
         "        for (; k + 3 < end; k += 4) {\n"
         "            float a = rank[in_sources[k]] / out_degree[in_sources[k]];\n"
         "            float b = rank[in_sources[k + 1]] / out_degree[in_sources[k + 1]];\n"
         "            float c = rank[in_sources[k + 2]] / out_degree[in_sources[k + 2]];\n"
         "            float e = rank[in_sources[k + 3]] / out_degree[in_sources[k + 3]];\n"
         "            sum += (a + b) + (c + e);\n        }\n"
         "        for (; k < end; ++k) sum += rank[in_sources[k]] / out_degree[in_sources[k]];\n"
         "        pulled[v] = sum;\n    }\n"),
    ],
    "11_push_atomic": [
        ("a pointer walk", None,
         "    long long u = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
         "    if (u >= n || out_degree[u] == 0) return;\n"
         "    float share = rank[u] / out_degree[u];\n    const int* t = out_targets + out_offsets[u];\n"
         "    const int* end = out_targets + out_offsets[u + 1];\n"
         "    while (t != end) atomicAdd(&pulled[*t++], share);\n"),
        ("a grid-stride loop", None,
         "    long long stride = (long long)blockDim.x * gridDim.x;\n"
         "    for (long long u = (long long)blockIdx.x * blockDim.x + threadIdx.x; u < n; u += stride) {\n"
         "        int degree = out_degree[u];\n        if (degree == 0) continue;\n"
         "        for (int k = out_offsets[u]; k < out_offsets[u + 1]; ++k) atomicAdd(pulled + "
         "out_targets[k], "
         "rank[u] / degree);\n    }\n"),
    ],
    "12_contributions_split": [
        ("if and else", None,
         "    long long u = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n    if (u < n) {\n"
         "        int degree = out_degree[u];\n"
         "        if (degree > 0) { contrib[u] = rank[u] / degree; dangling_rank[u] = 0.0f; }\n"
         "        else { contrib[u] = 0.0f; dangling_rank[u] = rank[u]; }\n    }\n"),
        ("a reciprocal", "contrib[u] = degree > 0 ? rank[u] / degree : 0.0f;",
         "contrib[u] = degree > 0 ? rank[u] * (1.0f / degree) : 0.0f;"),
    ],
    "13_pull_warp": [
        ("shared memory with __syncwarp", None,
         "    __shared__ float partial[256];\n"
         "    long long v = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;\n"
         "    int lane = threadIdx.x % 32;\n    if (v >= n) return;\n    float sum = 0.0f;\n"
         "    for (int k = in_offsets[v] + lane; k < in_offsets[v + 1]; k += 32) sum += rank[in_sources[k]] "
         "/ "
         "out_degree[in_sources[k]];\n    partial[threadIdx.x] = sum;\n    __syncwarp();\n"
         "    for (int offset = 16; offset > 0; offset /= 2) {\n"
         "        float other = lane < offset ? partial[threadIdx.x + offset] : 0.0f;\n"
         "        __syncwarp();\n"
         "        if (lane < offset) partial[threadIdx.x] += other;\n        __syncwarp();\n    }\n"
         "    if (lane == 0) pulled[v] = partial[threadIdx.x];\n"),
        ("chunks of 32 with shuffles in the loop", None,
         "    long long v = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;\n"
         "    int lane = threadIdx.x & 31;\n"
         "    if (v >= n) return;\n    int start = in_offsets[v], end = in_offsets[v + 1];\n"
         "    float total = 0.0f;\n"
         "    for (int base = start; base < end; base += 32) {\n        int k = base + lane;\n"
         "        float x = 0.0f;\n"
         "        if (k < end) { int u = in_sources[k]; x = rank[u] / out_degree[u]; }\n"
         "        for (int offset = 16; offset > 0; offset /= 2) x += __shfl_down_sync(0xffffffff, x, "
         "offset);\n"
         "        total += x;\n    }\n    if (lane == 0) pulled[v] = total;\n"),
    ],
    "14_pull_list": [
        ("a butterfly, first lane stores", "sum += __shfl_down_sync(0xffffffffu, sum, offset, width);",
         "sum += __shfl_xor_sync(0xffffffffu, sum, offset, width);"),
        ("bit masks for the lane", None,
         "    long long thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
         "    int i = (int)(thread / width);\n"
         "    int lane = threadIdx.x & (width - 1);\n    bool listed = i < count;\n"
         "    int v = listed ? vertices[i] : 0;\n    float sum = 0.0f;\n"
         "    int start = listed ? in_offsets[v] : 0, end = listed ? in_offsets[v + 1] : 0;\n"
         "    for (int k = start + lane; k < end; k += width) sum += contrib[in_sources[k]];\n"
         "    for (int offset = width >> 1; offset >= 1; offset >>= 1) sum += __shfl_down_sync(~0u, sum, "
         "offset, width);\n"
         "    if (listed && lane == 0) pulled[v] = sum;\n"),
    ],
    "20_l1_change": [
        ("shuffles, then one atomicAdd per block", None,
         "    __shared__ float warp_sums[8];\n"
         "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
         "    float x = i < n ? fabsf(new_rank[i] - old_rank[i]) : 0.0f;\n"
         "    for (int offset = 16; offset > 0; offset /= 2) x += __shfl_down_sync(0xffffffffu, x, "
         "offset);\n"
         "    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = x;\n    __syncthreads();\n"
         "    if (threadIdx.x < 32) {\n        float y = threadIdx.x < blockDim.x / 32 ? "
         "warp_sums[threadIdx.x] : 0.0f;\n"
         "        for (int offset = 16; offset > 0; offset /= 2) y += __shfl_down_sync(0xffffffffu, y, "
         "offset);\n"
         "        if (threadIdx.x == 0) atomicAdd(total, y);\n    }\n"),
        ("interleaved addressing", None,
         "    __shared__ float partial[256];\n"
         "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
         "    partial[threadIdx.x] = i < n ? fabsf(new_rank[i] - old_rank[i]) : 0.0f;\n"
         "    __syncthreads();\n"
         "    for (int s = 1; s < blockDim.x; s *= 2) {\n"
         "        if (threadIdx.x % (2 * s) == 0) partial[threadIdx.x] += partial[threadIdx.x + s];\n"
         "        __syncthreads();\n    }\n    if (threadIdx.x == 0) atomicAdd(total, partial[0]);\n"),
    ],
    "21_fused_update": [
        ("the lecture's finish: the whole last block adds, with shuffles",
         "    if (threadIdx.x == 0) {\n        partials[2 * blockIdx.x] = block_dangling[0];\n"
         "        partials[2 * blockIdx.x + 1] = block_change[0];\n"
         "        __threadfence();                           // the shares are visible before the count\n"
         "        if (atomicAdd(finished, 1) == gridDim.x - 1) {           // the last block to arrive\n"
         "            __threadfence();\n            double total_dangling = 0.0, total_change = 0.0;\n"
         "            for (int b = 0; b < gridDim.x; ++b) {\n"
         "                total_dangling += ((volatile float*)partials)[2 * b];\n"
         "                total_change += ((volatile float*)partials)[2 * b + 1];\n            }\n"
         "            totals[0] = (float)total_dangling;\n            totals[1] = (float)total_change;\n"
         "            *finished = 0;                         // ready for the next launch\n"
         "        }\n    }\n",
         LECTURE_FINISH),
        ("shuffles for the block's shares", "    block_dangling[threadIdx.x] = dangling;\n"
         "    block_change[threadIdx.x] = change;\n    __syncthreads();\n"
         "    for (int half = THREADS / 2; half > 0; half /= 2) {\n        if (threadIdx.x < half) {\n"
         "            block_dangling[threadIdx.x] += block_dangling[threadIdx.x + half];\n"
         "            block_change[threadIdx.x] += block_change[threadIdx.x + half];\n        }\n"
         "        __syncthreads();\n    }\n",
         "    for (int offset = 16; offset > 0; offset /= 2) {\n"
         "        dangling += __shfl_down_sync(0xffffffffu, dangling, offset);\n"
         "        change += __shfl_down_sync(0xffffffffu, change, offset);\n    }\n"
         "    if (threadIdx.x % 32 == 0) {\n        block_dangling[threadIdx.x / 32] = dangling;\n"
         "        block_change[threadIdx.x / 32] = change;\n    }\n    __syncthreads();\n"
         "    if (threadIdx.x == 0) {\n        for (int w = 1; w < THREADS / 32; ++w) {\n"
         "            block_dangling[0] += block_dangling[w];\n"
         "            block_change[0] += block_change[w];\n"
         "        }\n    }\n"),
    ],
    "22_reorder": [
        ("sorted() on (-degree, id) and a loop over rows", None,
         "    n = num_vertices\n"
         "    perm = np.array(sorted(range(n), key=lambda v: (-int(out_degree[v]), v)), dtype=np.int64)\n"
         "    new_id = np.empty(n, dtype=np.int64)\n    new_id[perm] = np.arange(n)\n"
         "    rows = [np.sort(new_id[in_sources[in_offsets[v]:in_offsets[v + 1]]]) for v in perm]\n"
         "    offsets = np.concatenate([[0], np.cumsum([r.size for r in rows])]).astype(np.int64)\n"
         "    return perm, offsets, np.concatenate(rows + [np.zeros(0, dtype=np.int64)])\n"),
        ("a SciPy permutation of the matrix", None,
         "    import scipy.sparse as sp\n    n = num_vertices\n"
         "    perm = np.lexsort((np.arange(n), -np.asarray(out_degree, dtype=np.int64)))\n"
         "    matrix = sp.csr_matrix((np.ones(len(in_sources)), in_sources, in_offsets), shape=(n, n))\n"
         "    permuted = matrix[perm][:, perm].tocsr()\n    permuted.sort_indices()\n"
         "    return perm, permuted.indptr.astype(np.int64), permuted.indices.astype(np.int64)\n"),
        ("a max-minus-degree key", "np.argsort(-np.asarray(out_degree, dtype=np.int64), "
         "kind=\"stable\")", "np.argsort(np.max(out_degree, initial=0) - np.asarray(out_degree), "
         "kind=\"stable\")"),
        ("buckets of equal out-degree, largest first", "np.argsort(-np.asarray(out_degree, dtype=np.int64), "
         "kind=\"stable\")",
         "np.concatenate([np.flatnonzero(out_degree == d) for d in np.unique(out_degree)[::-1]])"),
    ],
    "31_beat_the_library": [
        ("the library itself",
         "    kernel(((n + 255) // 256,), (256,), (dg.in_offsets, dg.in_sources, x, y, np.int32(n)))",
         "    y[...] = dg.in_matrix @ x"),
        ("a grid-stride thread per vertex", None,
         "    long long stride = (long long)blockDim.x * gridDim.x;\n"
         "    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) {\n"
         "        float sum = 0.0f;\n"
         "        for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k) sum += x[in_sources[k]];\n"
         "        y[v] = sum;\n    }\n"),
    ],
    "40_pull_bfloat16": [
        ("a double accumulator, rounded once at the end", None,
         "    long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n    if (v >= n) return;\n"
         "    double sum = 0.0;\n"
         "    for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k)\n"
         "        sum += (double)__uint_as_float((unsigned int)contrib[in_sources[k]] << 16);\n"
         "    pulled[v] = (float)sum;\n"),
        ("a grid-stride loop and __int_as_float", None,
         "    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n;\n"
         "         v += (long long)blockDim.x * gridDim.x) {\n        float sum = 0.0f;\n"
         "        const int* k = in_sources + in_offsets[v];\n"
         "        const int* end = in_sources + in_offsets[v + 1];\n"
         "        while (k != end) sum += __int_as_float((int)contrib[*k++] << 16);\n"
         "        pulled[v] = sum;\n    }\n"),
    ],
}

# what a checker says about the untouched student version (an empty kernel, or a raise in Python)
STUB_CAUSES = {"11_push_atomic": "nothing was added", "20_l1_change": "nothing was added"}
# wrong answers whose detection hangs on padding or canaries: checked on five seeds, each must fail
EVERY_SEED = {"v <= n", "no u < n", "u > n", "no v < n", "no i < count", "i <= count", "no i < n",
              "slots past n never written", "blocks without a vertex skip their shares"}
SEEDS = (11, 22, 33, 44, 55)
# causes the source lint gives (so the CPU suite checks that the lint names these mutants)
WARP_CAUSES = ("leaves out lanes", "__activemask() used as a mask",
               "after some lanes of the warp may have returned",
               "inside code that only some lanes of the warp run", "no __syncwarp() or __syncthreads()")
LINT_CAUSES = WARP_CAUSES + ("inside code that only part of the block runs",
                             "after some threads of the block may have returned",
                             "atomic only among the threads of one block", "do not stride the in-links by")


def exercise_cell(notebook: dict, mark: str) -> str:
    """The one code cell holding the exercise: the solution region's cell, or the student's TODO cell."""
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code" and mark in "".join(c["source"])]
    assert len(cells) == 1, f"one code cell holds the exercise ({mark})"
    return "".join(cells[0]["source"])


def load(slug: str):
    """(solution cell, student cell, checker name, needs a GPU) of an exercise."""
    solution = json.loads((exercises.EXERCISES / f"{slug}_solution.ipynb").read_text(encoding="utf-8"))
    student = json.loads((exercises.EXERCISES / f"{slug}.ipynb").read_text(encoding="utf-8"))
    meta = solution["metadata"]["course"]
    return (exercise_cell(solution, "BEGIN SOLUTION"), exercise_cell(student, "TODO"),
            meta["exercise"]["checker"],
            meta["needs_gpu"])


def defined(cell: str):
    """What an exercise cell defines: the kernel source, or the one function written in it."""
    namespace = {}
    exec(compile(cell, "<exercise>", "exec"), namespace)
    if "KERNEL" in namespace:
        return namespace["KERNEL"]
    functions = [v for v in namespace.values()
                 if callable(v) and getattr(getattr(v, "__code__", None), "co_filename", "") == "<exercise>"]
    assert len(functions) == 1
    return functions[0]


def mutant(cell: str, old: str | None, new: str) -> str:
    """The cell with ``old`` replaced (it must be there: a mutant never silently becomes the solution), or
    with the whole solution region replaced when ``old`` is None."""
    if old is None:
        lines = cell.split("\n")
        begin = next(i for i, line in enumerate(lines) if "BEGIN SOLUTION" in line)
        end = next(i for i, line in enumerate(lines) if "END SOLUTION" in line)
        return "\n".join(lines[:begin + 1] + new.rstrip("\n").split("\n") + lines[end:])
    assert old in cell, f"the mutation no longer applies: {old!r} is not in the solution"
    changed = cell.replace(old, new)
    assert changed != cell
    return changed


def cases(gpu: bool, kinds=("solution", "stub", "mutant", "correct")):
    """(exercise, checker, cell, expected cause or None for a right answer, which version) for every
    check."""
    found = []
    for slug, wrongs in MUTANTS.items():
        solution, student, checker, needs_gpu = load(slug)
        if needs_gpu != gpu:
            continue
        if "solution" in kinds:
            found.append(pytest.param(slug, checker, solution, None, "solution", id=f"{slug}-solution"))
        if "stub" in kinds:
            stub_cause = STUB_CAUSES.get(slug, "never written") if gpu else checks.NOT_WRITTEN_YET
            found.append(pytest.param(slug, checker, student, stub_cause, "student stub",
                                      id=f"{slug}-student stub"))
        if "mutant" in kinds:
            for what, old, new, cause in wrongs:
                found.append(pytest.param(slug, checker, mutant(solution, old, new), cause, what,
                                          id=f"{slug}-{what}"))
        if "correct" in kinds:
            for what, old, new in CORRECT[slug]:
                found.append(pytest.param(slug, checker, mutant(solution, old, new), None, what,
                                          id=f"{slug}-correct: {what}"))
    return found


# --- generated student versions ---------------------------------------------------------------------

def test_student_versions_are_in_step_with_their_solutions():
    assert exercises.out_of_step() == []


def test_every_planned_exercise_has_a_solution_mutants_and_correct_variants():
    slugs = {p.name[: -len(exercises.SUFFIX)] for p in exercises.solutions()}
    assert slugs == set(MUTANTS) == set(CORRECT)
    assert {s[:2] for s in slugs} == {"01", "02", "03", "10", "11", "12", "13", "14", "20", "21", "22",
                                      "31", "33", "40"}
    assert all(len(wrongs) >= 6 for wrongs in MUTANTS.values())
    assert all(len(right) >= 2 for right in CORRECT.values())


def test_student_versions_carry_no_outputs_and_no_solution():
    for solution in exercises.solutions():
        student = json.loads(exercises.student_path(solution).read_text(encoding="utf-8"))
        code = [c for c in student["cells"] if c["cell_type"] == "code"]
        assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)
        text = "".join("".join(c["source"]) for c in student["cells"])
        assert "BEGIN SOLUTION" not in text and "This is the solution notebook" not in text
        assert "TODO" in text


def test_exercise_text_is_short_lines_with_one_line_todos_and_graded_hints_a_student_opens():
    """Code lines under 100 characters and markdown lines under 111 (formulas aside); every TODO is one
    short line that says what to write, and the help is in hint cells (Hint 1, 2, ...) folded in
    <details>, kept in the student version."""
    for solution in exercises.solutions():
        student = json.loads(exercises.student_path(solution).read_text(encoding="utf-8"))
        for notebook, name in ((json.loads(solution.read_text(encoding="utf-8")), solution.name),
                               (student, exercises.student_path(solution).name)):
            for cell in notebook["cells"]:
                for line in "".join(cell["source"]).split("\n"):
                    limit = 99 if cell["cell_type"] == "code" else 110
                    assert len(line) <= limit or line.startswith("$$"), f"{name}: {line!r}"
        todos = [line.strip() for c in student["cells"] if c["cell_type"] == "code"
                 for line in "".join(c["source"]).split("\n") if "TODO:" in line]
        assert todos and all(len(t.split("TODO:", 1)[1]) <= 90 for t in todos), todos
        hints = ["".join(c["source"]) for c in student["cells"] if c["cell_type"] == "markdown"
                 and "".join(c["source"]).startswith("<details><summary>Hint")]
        assert len(hints) >= 2, solution.name
        for number, hint in enumerate(hints, 1):
            assert hint.startswith(f"<details><summary>Hint {number}</summary>") and \
                hint.rstrip().endswith("</details>")
        titles = ["".join(c["source"]).split("\n")[0] for c in student["cells"]
                  if c["cell_type"] == "markdown"]
        assert titles[0].startswith(f"# Exercise {solution.name[:2]} · ") and "## Check it" in titles


def test_stub_replaces_regions_with_hints():
    source = "def f(x):\n    # BEGIN SOLUTION hint: double it\n    return 2 * x\n    # END SOLUTION\n"
    assert exercises.stub(source) == ("def f(x):\n    # TODO: double it\n"
                                      "    raise NotImplementedError('double it')\n")
    cuda = ("__global__ void k() {\n    // BEGIN SOLUTION hint: nothing\n    int a = 1;\n"
            "    // END SOLUTION\n}")
    assert exercises.stub(cuda) == "__global__ void k() {\n    // TODO: nothing\n}"
    with pytest.raises(ValueError, match="never closed"):
        exercises.stub("# BEGIN SOLUTION\nx = 1\n")
    with pytest.raises(ValueError, match="without BEGIN"):
        exercises.stub("x = 1\n# END SOLUTION\n")


def test_an_edited_solution_puts_its_student_version_out_of_step(tmp_path, monkeypatch):
    for solution in exercises.solutions()[:1]:
        copy = tmp_path / solution.name
        notebook = json.loads(solution.read_text(encoding="utf-8"))
        copy.write_text(json.dumps(notebook))
        exercises.student_path(copy).write_text(exercises.dumps(exercises.student_notebook(notebook)))
        monkeypatch.setattr(exercises, "EXERCISES", tmp_path)
        assert exercises.out_of_step() == []
        notebook["cells"][0]["source"] = ["# changed\n"]
        copy.write_text(json.dumps(notebook))
        assert "out of step" in " ".join(exercises.out_of_step())


# --- checkers, both ways ----------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def timing_graph():
    """Exercise 31's race in the GPU suite: a web-like graph of 200,000 vertices (generated, no download)."""
    from helpers.core import generators

    return generators.web_graph(200_000, 1_200_000, seed=31)


# settings a checker needs in the suite beyond the seed (exercise 31 races on a smaller graph, fewer trials)
OPTIONS = {"check_beat_the_library": lambda: {"graph": timing_graph(), "trials": 5}}


def run_checker(checker, cell, seed=None):
    options = OPTIONS.get(checker, dict)()
    return getattr(checks, checker)(defined(cell), seed=seed, quiet=True, **options)


def assert_right(report, slug, what, cause):
    if cause is None:
        assert report.ok, f"{slug} ({what}): the checker failed a right answer\n{report}"
    else:
        assert not report.ok, f"{slug}: the checker passed a wrong answer ({what})\n{report}"
        assert any(cause in c for c in report.causes()), \
            f"{slug} ({what}): expected a cause with {cause!r}\n{report}"
        first = report.failures[0]
        assert first.case and first.detail


def one_seed(what: str) -> int:
    """The seed a kind runs with (a kind runs once): one of the first three, spread over the kinds."""
    return SEEDS[zlib.crc32(what.encode()) % 3]


@pytest.mark.parametrize("slug, checker, cell, cause, what", cases(gpu=False))
def test_cpu_checker(slug, checker, cell, cause, what):
    report = run_checker(checker, cell, one_seed(what))
    assert_right(report, slug, what, cause)
    if cause is None:
        assert len(report.passed) >= 8


def kernel_of(checker: str, cell: str) -> tuple[str, str, str | None]:
    """(CUDA source, kernel name, prescribed lane stride) of a GPU exercise cell: its KERNEL, or the
    SOURCE its launch function compiles (exercise 31)."""
    if checker in checks.KERNELS:
        spec = checks.KERNELS[checker]
        return defined(cell), spec.kernel, spec.lane_stride
    namespace = {}
    exec(compile(cell, "<exercise>", "exec"), namespace)
    source = namespace["SOURCE"]
    assert defined(cell).__name__ in kernels.kernel_names(source)
    return source, kernels.kernel_names(source)[0], None


@pytest.mark.parametrize("slug, checker, cell, cause, what", cases(gpu=True))
def test_gpu_exercise_kernel_compiles_for_a_t4_and_its_probe_too(slug, checker, cell, cause, what,
                                                                 nvrtc_compiled):
    code, kernel, _ = kernel_of(checker, cell)
    ptx = kernels.nvrtc_compile(code, name=f"{slug}.cu")
    assert f".entry {kernel}(" in ptx
    if checker in checks.KERNELS:
        spec = checks.KERNELS[checker]
        probe = probed(code, spec.kernel, spec.outputs, spec.sums, spec.inputs)
        assert probe is not None, "the probe does not cover this kernel"
        assert f".entry {spec.kernel}(" in kernels.nvrtc_compile(probe, name=f"{slug}-probe.cu")
    nvrtc_compiled(f"exercise {slug} ({what})")


@pytest.mark.parametrize("slug, checker, cell, cause, what", cases(gpu=True, kinds=("solution", "stub",
                                                                                    "correct")))
def test_the_lint_passes_right_kernels(slug, checker, cell, cause, what):
    code, kernel, stride = kernel_of(checker, cell)
    assert lint(code, kernel, lane_stride=stride) == []


@pytest.mark.parametrize("slug, checker, cell, cause, what",
                         [c for c in cases(gpu=True, kinds=("mutant",))
                          if any(k in c.values[3] for k in LINT_CAUSES)])
def test_the_lint_names_the_hazard(slug, checker, cell, cause, what):
    code, kernel, stride = kernel_of(checker, cell)
    found = lint(code, kernel, lane_stride=stride)
    assert any(cause in hazard.cause for hazard in found), found
    assert all(hazard.line > 0 and hazard.text for hazard in found)
    if any(k in cause for k in WARP_CAUSES):
        assert all("Volta" in hazard.cause for hazard in found if "lanes" in hazard.cause)


TIMED = {"31_beat_the_library"}       # its checker races the library: those checks run alone


@pytest.mark.gpu
@pytest.mark.parametrize("slug, checker, cell, cause, what",
                         [pytest.param(*case.values, id=case.id,
                                       marks=[pytest.mark.timing] if case.values[0] in TIMED else [])
                          for case in cases(gpu=True)])
def test_gpu_checker(slug, checker, cell, cause, what):
    for seed in SEEDS if what in EVERY_SEED else SEEDS[:1]:
        assert_right(run_checker(checker, cell, seed), slug, what, cause)


def test_a_checker_reports_an_error_instead_of_raising():
    def broken(graph, ranks, damping):
        return ranks[graph.num_vertices + 5]
    report = checks.check_pagerank_step(broken, quiet=True)
    assert not report.ok and "IndexError" in report.failures[0].detail
    assert f"line {broken.__code__.co_firstlineno + 1} of broken)" in report.failures[0].detail
    assert "FAILED pagerank_step" in str(report) and f"seed={report.seed}" in str(report)


def test_a_seed_repeats_the_same_cases():
    def solution(graph, ranks, damping):
        return defined(load("01_pagerank_step")[0])(graph, ranks, damping)
    assert checks.check_pagerank_step(solution, seed=7, quiet=True).passed == \
        checks.check_pagerank_step(solution, seed=7, quiet=True).passed


def test_a_gpu_checker_without_a_gpu_says_what_to_do():
    from helpers.measure import gpu
    if gpu.gpu_status().available:
        pytest.skip("this machine has a GPU: the GPU checkers run instead")
    with pytest.raises(gpu.NoGPUError, match="needs a CUDA GPU"):
        checks.check_pull_grid_stride(defined(load("10_pull_grid_stride")[0]), quiet=True)


def test_every_exercise_names_a_checker_of_the_package_and_gpu_ones_their_kernel():
    for solution in exercises.solutions():
        slug = solution.name[: -len(exercises.SUFFIX)]
        cell, _, checker, needs_gpu = load(slug)
        assert checker.startswith("check_") and checker in checks.__all__ and callable(getattr(checks,
                                                                                               checker))
        assert (checker in checks.KERNELS or checker in OPTIONS) == needs_gpu
        if checker in checks.KERNELS:
            assert f'__global__ void {checks.KERNELS[checker].kernel}(' in cell
    assert not hasattr(checks, "pagerank_step") and not hasattr(checks, "top_k") and not hasattr(checks,
                                                                                                 "describe")


# --- hostile code: the checker can neither be fooled nor stopped by the code it grades ---------------

def hub_answer(graph, ranks, damping):
    """A wrong step (1/n everywhere) that writes itself into every array of n floats it can reach through
    the call stack, containers included: the checker's expected values, were they reachable."""
    import sys
    n = graph.num_vertices
    answer, seen = np.full(n, 1.0 / n), set()

    def visit(obj, depth):
        if id(obj) in seen or depth > 5:
            return
        seen.add(id(obj))
        if isinstance(obj, np.ndarray) and obj.dtype == np.float64 and obj.shape == (n,) \
                and obj.flags.writeable:
            obj[:] = answer
        elif isinstance(obj, (list, tuple)):
            for item in obj:
                visit(item, depth + 1)
        elif isinstance(obj, dict):
            for item in list(obj.values()):
                visit(item, depth + 1)

    frame = sys._getframe(1)
    while frame is not None:
        visit(frame.f_locals, 0)
        frame = frame.f_back
    return answer


def test_a_function_that_writes_into_its_callers_arrays_fails():
    report = checks.check_pagerank_step(hub_answer, seed=5, quiet=True)
    assert not report.ok and report.passed, str(report)       # 4 vertices without edges: 1/n is right there
    wrong = {f.case for f in report.failures}
    assert any("adversarial" in case for case in wrong) and any("random" in case for case in wrong)


def test_a_function_that_replaces_the_reference_fails_and_the_reference_stays():
    import helpers.core.reference

    genuine = helpers.core.reference.pagerank_step

    def replaces(graph, ranks, damping):
        helpers.core.reference.pagerank_step = lambda *args, **kwargs: np.zeros(graph.num_vertices)
        return np.zeros(graph.num_vertices)
    report = checks.check_pagerank_step(replaces, seed=5, quiet=True)
    assert not report.ok and len(report.failures) == 10
    assert all("not summing to 1" in c or "dangling mass lost" in c for c in report.causes()), str(report)
    assert helpers.core.reference.pagerank_step is genuine


def test_a_reference_replaced_before_the_checker_is_refused_and_one_replaced_after_is_not_used(monkeypatch):
    import helpers.core.reference
    from helpers.checks import pristine

    solution = defined(load("01_pagerank_step")[0])
    monkeypatch.setattr(helpers.core.reference, "pagerank_step", lambda *args, **kwargs: None)
    assert checks.check_pagerank_step(solution, seed=5, quiet=True).ok       # the private copy is used
    monkeypatch.setattr(pristine.REFERENCE, "pagerank_step", lambda graph, ranks, damping, teleport: ranks)
    report = checks.check_pagerank_step(solution, seed=5, quiet=True)
    assert report.stopped
    assert "helpers.core.reference.pagerank_step is not the code in reference.py" in str(report)
    assert "restart the kernel" in report.failures[0].cause


def test_a_bare_except_in_a_loop_cannot_swallow_the_time_limit():
    def stubborn(graph, ranks, damping):
        while True:
            try:
                while True:
                    pass
            except:                 # noqa: E722 - what the test is about
                pass
    start = time.monotonic()
    report = checks.check_power_iteration(lambda graph, damping, tol, max_iter=10: stubborn(graph, None,
                                                                                            damping),
                                          seed=5, quiet=True, time_limit=1)
    assert time.monotonic() - start < 8 and report.stopped
    assert "did not return within the time limit (1 s)" in report.failures[0].cause


def test_where_no_child_can_be_forked_the_calls_run_here_and_the_report_says_so(monkeypatch):
    from helpers.checks import isolation

    monkeypatch.setattr(isolation, "CAN_FORK", False)
    report = checks.check_top_k(defined(load("33_top_k")[0]), seed=5, quiet=True)
    assert report.ok and "runs inside the checker's process" in report.notes[0]
    report = checks.check_pagerank_step(hub_answer, seed=5, quiet=True)
    assert report.stopped and "reached into the checker's arrays" in report.failures[0].cause, str(report)


def test_where_no_child_can_be_forked_the_course_answer_is_named_and_its_function_restored(monkeypatch):
    import helpers.core.reference
    from helpers.checks import isolation

    monkeypatch.setattr(isolation, "CAN_FORK", False)
    code = helpers.core.reference.top_k.__code__
    report = checks.check_top_k(lambda ranks, k: helpers.core.reference.top_k(ranks, k), seed=5, quiet=True)
    assert not report.ok and all("helpers.core.reference.top_k, the course's own answer" in c
                                 for c in report.causes()), str(report)
    assert helpers.core.reference.top_k.__code__ is code
