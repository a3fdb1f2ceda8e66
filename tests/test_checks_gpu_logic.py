"""The GPU checkers' own logic, on the CPU: the device is replaced by NumPy arrays and each kernel by a
Python emulation of what a CUDA kernel (right or wrong) does, stray threads past the end included, in
every grid and block configuration the checker launches. This tests the padding, the canaries, the exact
comparisons, the read-back of inputs, the probed launch (writer ids, atomic counts, NaN-filled shared
memory, reads outside an input) and the causes, on every seed; the real kernels run through the same
checkers in the GPU suite (tests/test_exercises.py)."""
import numpy as np
import pytest

from helpers import checks
from helpers.checks import device, gpu
from helpers.checks.probe import READ_SLOTS, SPAN
from helpers.checks.report import Wrong, after_a_fault
from test_exercises import defined, load


@pytest.fixture(autouse=True)
def in_this_process(monkeypatch):
    """The emulated device lives in this process: the checkers must not move to a child of their own."""
    monkeypatch.setattr(gpu, "APART", False)


SEEDS = (1, 2, 3, 4, 5)
BOUNDS = ("past the end", "pushed rank", "i < count", "past n were added", "never wrote", "outside its")


def seeds_for(cause) -> tuple:
    """Five seeds for the wrong answers that padding and canaries must catch every time, fewer otherwise."""
    if cause is None:
        return SEEDS[:1]
    return SEEDS if any(words in cause for words in BOUNDS) else SEEDS[:2]


class Kernel:
    def __init__(self, emulate, probed: bool):
        self.emulate, self.probed = emulate, probed


class FakeDevice:
    """Device arrays are NumPy arrays; compile() hands back the emulation, probed when the source is."""

    def __init__(self, emulate):
        self.emulate = emulate
        self.time_limit = 1.0
        self.launches = []

    def put(self, host):
        return np.array(host, copy=True)

    def get(self, array):
        return np.array(array, copy=True)

    def compile(self, code, function):
        return Kernel(self.emulate, "namespace checker_probe" in code)

    def launch(self, kernel, grid, block, args):
        self.launches.append((grid[0], block[0]))
        kernel.emulate(grid[0] * block[0], args, kernel.probed, block[0])

    def finish(self):
        pass

    def device_graph(self, graph, arrays=None):
        """The graph's in-CSR and out-degrees as NumPy arrays, as driver.DeviceGraph holds them."""
        from types import SimpleNamespace

        dg = SimpleNamespace(num_vertices=graph.num_vertices, num_edges=graph.num_edges, name=graph.name,
                             in_offsets=graph.in_offsets.astype(np.int32),
                             in_sources=graph.in_sources.astype(np.int32),
                             out_degree=graph.out_degree.astype(np.int32))
        for name, (host, length) in (arrays or {}).items():
            setattr(dg, name, np.array(host, copy=True)[:length])
        return dg


def store(out, probed, rows, values, threads, last_threads=None):
    """out[rows] = values (float32); in a probed launch also the lowest and highest writer of each element,
    as checks.probe's wrapper records them."""
    out[rows] = np.asarray(values, dtype=np.float64).astype(np.float32)
    if probed:
        words = out.view(np.uint32)
        np.minimum.at(words, SPAN + rows, np.asarray(threads).astype(np.uint32))
        np.maximum.at(words, 2 * SPAN + rows, np.asarray(threads if last_threads is None else last_threads)
                      .astype(np.uint32))


def read(array, indices, threads, probed):
    """Record the reads of ``array[indices]`` by ``threads`` outside its length, as checks.probe's input
    wrapper does (a probed input is a view after READ_SLOTS words)."""
    indices, threads = np.atleast_1d(indices).astype(np.int64), np.atleast_1d(threads).astype(np.int64)
    if not probed or array.base is None or not indices.size:
        return
    slots = array.base.view(np.uint32)[:READ_SLOTS]
    outside = (indices < 0) | (indices >= int(slots[0]))
    if outside.any():
        slots[1] += int(outside.sum())
        slots[2] = min(int(slots[2]), int(indices[outside].astype(np.uint32).min()))
        slots[3] = min(int(slots[3]), int(threads[outside].min()))


def run(checker, emulate, monkeypatch, seed, slug):
    monkeypatch.setattr(gpu, "open_device", lambda time_limit: FakeDevice(emulate))
    code = defined(load(slug)[0])
    return getattr(checks, checker)(code, seed=seed, quiet=True)


def run_source(checker, emulate, monkeypatch, code, seed=1):
    monkeypatch.setattr(gpu, "open_device", lambda time_limit: FakeDevice(emulate))
    return getattr(checks, checker)(code, seed=seed, quiet=True)


def expect(report, cause):
    if cause is None:
        assert report.ok, str(report)
    else:
        assert not report.ok, str(report)
        assert any(cause in c for c in report.causes()), str(report)


def row_sums(values, in_offsets, in_sources, rows, extra=0, lanes=None):
    """Sum of values[in_sources[k]] over each row's in-links (exact here: the inputs are dyadic); with
    ``lanes``, only the in-links whose position in the row, mod 32, is below it."""
    starts = in_offsets[rows].astype(np.int64)
    ends = in_offsets[rows + 1].astype(np.int64) + extra
    terms = values[in_sources].astype(np.float64)
    if lanes is not None:
        offsets = in_offsets.astype(np.int64)
        owner = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
        position = np.arange(owner.size) - offsets[owner]
        terms = np.where(position % 32 < lanes, terms[:owner.size], 0.0)
    cumulative = np.concatenate([[0.0], np.cumsum(terms)])
    return cumulative[ends] - cumulative[starts]


# --- 10: grid-stride pull ------------------------------------------------------------------------

def pull_grid_stride(stride="grid", bound="<", extra=0, start="global", short_count=False):
    def emulate(threads, args, probed, block):
        in_offsets, in_sources, out_degree, rank, pulled, n = args
        n = int(n)
        step = {"grid": threads, "block": block, "once": 10**9, "384": 384}[stride]
        limit = n if bound == "<" else n + 1
        rows, owners = [], []
        for t in range(threads):
            first = t if start == "global" else t % block
            found = np.arange(first, limit, step)
            rows.append(found)
            owners.append(np.full(found.size, t))
        rows, owners = np.concatenate(rows).astype(np.int64), np.concatenate(owners)
        read(in_offsets, rows + 1, owners, probed)
        contrib = np.divide(rank.astype(np.float64), out_degree, out=np.zeros(rank.size),
                            where=out_degree > 0)
        sums = row_sums(contrib, in_offsets, in_sources, rows, extra)
        if short_count:                              # a count held in a short: the hub's loop never runs
            degree = (in_offsets[rows + 1] - in_offsets[rows]).astype(np.int64)
            sums = np.where(degree.astype(np.int16) < 0, 0.0, sums)
        store(pulled, probed, rows, sums, owners)
    return emulate


@pytest.mark.parametrize("emulate, cause", [
    (pull_grid_stride(), None),
    (pull_grid_stride(stride="once"), "never written"),
    (pull_grid_stride(bound="<="), "past the end"),
    (pull_grid_stride(extra=1), "row bounds"),
    (pull_grid_stride(stride="block"), "wrong grid stride"),
    (pull_grid_stride(start="block"), "wrong grid stride"),
    (pull_grid_stride(stride="384"), "not by a number that fits one launch"),
    (pull_grid_stride(short_count=True), "only the vertex with more than 2**15 in-links"),
], ids=["solution", "no stride", "v <= n", "row bound", "stride blockDim.x", "start without blockIdx",
        "stride written as 384", "count in a short"])
def test_pull_grid_stride_logic(emulate, cause, monkeypatch):
    for seed in seeds_for(cause):
        expect(run("check_pull_grid_stride", emulate, monkeypatch, seed, "10_pull_grid_stride"), cause)


def test_exercise_10_is_launched_in_three_configurations(monkeypatch):
    devices = []
    monkeypatch.setattr(gpu, "open_device", lambda time_limit: devices.append(FakeDevice(pull_grid_stride()))
                        or devices[-1])
    assert checks.check_pull_grid_stride(defined(load("10_pull_grid_stride")[0]), seed=1, quiet=True).ok
    assert set(devices[0].launches) == {(3, 128), (5, 64), (2, 256)}


# --- 11: push with atomics -----------------------------------------------------------------------

def push_atomic(bound=True, atomic=True, extra=0, read_first=False):
    def emulate(threads, args, probed, block):
        out_offsets, out_targets, out_degree, rank, pulled, n = args
        n = int(n)
        sources = np.arange(min(threads, out_degree.size))
        if read_first:                                 # rank[u] / out_degree[u] before the bounds check
            read(rank, sources, sources, probed)
            read(out_degree, sources, sources, probed)
        if bound:
            sources = sources[sources < n]
        sources = sources[out_degree[sources] != 0]
        starts = out_offsets[sources].astype(np.int64)
        ends = out_offsets[sources + 1].astype(np.int64) + extra
        counts = np.maximum(ends - starts, 0)
        edges = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]),
                          counts) + np.arange(counts.sum())
        shares = np.repeat(np.float32(1) * rank[sources] / out_degree[sources], counts).astype(np.float32)
        targets = out_targets[edges]
        if atomic:
            np.add.at(pulled, targets, shares)
        else:                                  # lost updates: only the last add to each target survives
            last = targets.size - 1 - np.unique(targets[::-1], return_index=True)[1]
            np.add.at(pulled, targets[last], shares[last])
    return emulate


@pytest.mark.parametrize("emulate, cause", [
    (push_atomic(), None),
    (push_atomic(bound=False), "pushed rank"),
    (push_atomic(atomic=False), "race"),
    (push_atomic(extra=1), "first out-link of the next vertex"),
    (push_atomic(extra=-1), "misses its last out-link"),
    (push_atomic(read_first=True), "outside its"),
], ids=["solution", "no u < n", "no atomics", "row bound", "last out-link skipped",
        "rank read before the check"])
def test_push_atomic_logic(emulate, cause, monkeypatch):
    for seed in seeds_for(cause):
        expect(run("check_push_atomic", emulate, monkeypatch, seed, "11_push_atomic"), cause)


def test_a_read_past_the_end_names_the_input_index_and_thread(monkeypatch):
    report = run("check_push_atomic", push_atomic(read_first=True), monkeypatch, 1, "11_push_atomic")
    first = report.failures[0]
    assert "out_degree[1] read by thread 1" in first.detail and "outside 0..0" in first.detail, str(report)
    assert "reads out_degree outside its 1 elements" in first.cause


# --- 12: contributions -----------------------------------------------------------------------------

def contributions(bound="<", guard=True, twice=False, read_first=False):
    def emulate(threads, args, probed, block):
        rank, out_degree, contrib, dangling_rank, n = args
        n = int(n)
        u = np.arange(threads)
        if read_first:
            read(out_degree, u, u, probed)
        u = u[u < n] if bound == "<" else u[u <= n]
        degree = out_degree[u].astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.where((degree > 0) | (not guard), rank[u] / degree, np.float32(0))
        last = np.minimum(u + 1, threads - 1) if twice else None     # thread u + 1 stores u as well
        store(contrib, probed, u, values, u, last)
        store(dangling_rank, probed, u, np.where(degree > 0, 0.0, rank[u]), u, last)
    return emulate


@pytest.mark.parametrize("emulate, cause", [
    (contributions(), None),
    (contributions(bound="<="), "past the end"),
    (contributions(guard=False), "out-degree 0"),
    (contributions(twice=True), "several threads"),
    (contributions(read_first=True), "outside its"),
], ids=["solution", "u <= n", "no guard", "two threads per vertex", "out_degree read before the check"])
def test_contributions_split_logic(emulate, cause, monkeypatch):
    for seed in seeds_for(cause):
        expect(run("check_contributions_split", emulate, monkeypatch, seed, "12_contributions_split"), cause)


# --- 13 and 14: lanes per vertex -------------------------------------------------------------------

def store_groups(out, probed, rows, values, width, group_ids, every_lane):
    """Lane 0 (or every lane) of group g stores values into out[rows]; writer ids as the probe records."""
    first = width * group_ids
    store(out, probed, rows, values, first, first + (width - 1 if every_lane else 0))


def pull_warp(bound=True, store_by="lane 0", tree_from=16, rank_only=False, short_count=False):
    def emulate(threads, args, probed, block):
        in_offsets, in_sources, out_degree, rank, pulled, n = args
        warps = np.arange(threads // 32)
        if bound:
            warps = warps[warps < int(n)]
        contrib = np.divide(rank.astype(np.float64), out_degree, out=np.zeros(rank.size),
                            where=out_degree > 0)
        if rank_only:                                    # a wrong term: rank[u], not divided
            contrib = rank.astype(np.float64)
        values = row_sums(contrib, in_offsets, in_sources, warps,
                          lanes=None if tree_from == 16 else 2 * tree_from)
        if short_count:                                  # short count = end - begin: negative past 2**15
            values = np.where(np.diff(in_offsets)[warps] > 2**15 - 1, 0.0, values)
        store_groups(pulled, probed, warps, values, 32, warps, store_by != "lane 0")
    return emulate


@pytest.mark.parametrize("emulate, cause", [
    (pull_warp(), None),
    (pull_warp(bound=False), "past the end"),
    (pull_warp(tree_from=8), "vertices with up to 16 in-links are right, wrong ones have 17 or more"),
    (pull_warp(store_by="total"), "several lanes store"),
    (pull_warp(rank_only=True), "a wrong term"),
    (pull_warp(short_count=True), "16-bit type"),
], ids=["solution", "no v < n", "tree from 8", "every lane stores the total", "rank not divided",
        "a 16-bit count"])
def test_pull_warp_logic(emulate, cause, monkeypatch):
    for seed in seeds_for(cause):
        expect(run("check_pull_warp", emulate, monkeypatch, seed, "13_pull_warp"), cause)


def pull_list(check_count=True, store_by="lane 0", listed=True):
    def emulate(threads, args, probed, block):
        vertices, count, in_offsets, in_sources, contrib, pulled, width = args
        groups = np.arange(threads // int(width))
        if check_count:
            groups = groups[groups < int(count)]
        read(vertices, groups, groups * int(width), probed)
        rows = vertices[groups].astype(np.int64) if listed else groups
        values = row_sums(contrib, in_offsets, in_sources, rows)
        store_groups(pulled, probed, rows, values, int(width), groups, store_by != "lane 0")
    return emulate


@pytest.mark.parametrize("emulate, cause", [
    (pull_list(), None),
    (pull_list(check_count=False), "i < count"),
    (pull_list(store_by="all"), "several lanes store"),
    (pull_list(listed=False), "wrong vertex"),
], ids=["solution", "no i < count", "every lane stores", "index as vertex"])
def test_pull_list_logic(emulate, cause, monkeypatch):
    for seed in seeds_for(cause):
        expect(run("check_pull_list", emulate, monkeypatch, seed, "14_pull_list"), cause)


# --- 20: the L1 change -----------------------------------------------------------------------------

def l1_change(bound=True, unset_slots=False, per="block", race=False):
    def emulate(threads, args, probed, block):
        new, old, total, n = args
        n, words = int(n), total.view(np.uint32)
        blocks = threads // 256
        i = np.arange(blocks * 256)
        inside = i < n if bound else np.ones(i.size, bool)
        diff = np.abs(new[np.minimum(i, new.size - 1)].astype(np.float64) - old[np.minimum(i, old.size - 1)])
        slots = np.where(inside, diff, np.nan if (unset_slots and probed) else 0.0).reshape(blocks, 256)
        if per == "element":                           # exact sums: one add per element, the same total
            total[0] = np.float32(total[0] + slots[inside.reshape(blocks, 256)].sum())
            if probed:
                words[SPAN] += int(inside.sum())
            return
        sums = slots.sum(axis=1).astype(np.float32)
        total[0] = sums[-1] if race else np.float32(total[0] + sums.astype(np.float64).sum())
        if probed and not race:
            words[SPAN] += blocks
    return emulate


@pytest.mark.parametrize("emulate, cause", [
    (l1_change(), None),
    (l1_change(bound=False), "past n were added"),
    (l1_change(unset_slots=True), "shared memory it never wrote"),
    (l1_change(per="element"), "one atomicAdd per block"),
    (l1_change(race=True), "race"),
], ids=["solution", "no i < n", "unset slots", "an atomicAdd per element", "no atomicAdd"])
def test_l1_change_logic(emulate, cause, monkeypatch):
    for seed in seeds_for(cause):
        expect(run("check_l1_change", emulate, monkeypatch, seed, "20_l1_change"), cause)


# --- 21: the fused update with the last block's sums ----------------------------------------------------

def fused_update(stride="grid", bound=True, formula="right", guard=True, twice=False, drop_last=False,
                 read_first=False, counter="right", reset=True, own_only=False, dangling="new", signed=False,
                 idle_blocks=True, unset_slots=False):
    def emulate(threads, args, probed, block):
        (in_offsets, in_sources, out_degree, contrib, rank, mass, d, new_rank, new_contrib, partials,
         finished, totals, n) = args
        n, d, mass, one = int(n), np.float32(d), np.float32(mass), np.float32(1)
        grid, thread = threads // block, np.arange(threads)
        if read_first:
            read(out_degree, thread, thread, probed)
        if stride == "grid":
            v = np.arange(max(n, threads) if not bound else n)
            owner = v % threads
        else:                                               # one vertex per thread, no loop
            v = thread if not bound else thread[thread < n]
            owner = v
        starts, ends = in_offsets[v].astype(np.int64), in_offsets[v + 1].astype(np.int64)
        if drop_last:
            ends = np.where(ends > starts, ends - 1, ends)
        cumulative = np.concatenate([[0.0], np.cumsum(contrib[in_sources].astype(np.float64))])
        s = (cumulative[ends] - cumulative[starts]).astype(np.float32)
        if formula == "right":
            r = d * s + (d * mass + (one - d)) / np.float32(n)
        elif formula == "dangling lost":
            r = d * s + (one - d) / np.float32(n)
        else:                                               # hard-coded 0.85
            r = np.float32(0.85) * s + (np.float32(0.85) * mass + np.float32(0.15)) / np.float32(n)
        degree = out_degree[v].astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where((degree > 0) | (not guard), r / degree, np.float32(0))
        last = owner + ((owner + 1 < threads) if twice else 0)    # thread v + 1 stores v as well
        store(new_rank, probed, v, r, owner, last)
        store(new_contrib, probed, v, c, owner, last)
        inside = v < n
        taken = {"new": r, "old": rank[v], "all": r}[dangling].astype(np.float64)
        dangling_share = np.where(inside & ((degree == 0) | (dangling == "all")), taken, 0.0)
        difference = r.astype(np.float64) - rank[v]
        change_share = np.where(inside, difference if signed else np.abs(difference), 0.0)
        shares = [np.bincount(owner // block, weights=w, minlength=grid)[:grid] for w in (dangling_share,
                                                                                      change_share)]
        if unset_slots and probed:
            shares = [np.full(grid, np.nan) for _ in shares]
        partials[0:2 * grid:2], partials[1:2 * grid:2] = shares[0], shares[1]
        arrived = grid if idle_blocks else int(np.count_nonzero(np.arange(grid) * block < n))
        before = int(finished[0])
        finished[0] = before + arrived
        if before + arrived - 1 == grid - (1 if counter == "right" else 0):
            sums = partials[0:2 * grid].astype(np.float64).reshape(grid, 2)
            totals[:2] = sums[-1] if own_only else sums.sum(axis=0)
            if reset:
                finished[0] = 0
    return emulate


@pytest.mark.parametrize("emulate, cause", [
    (fused_update(), None),
    (fused_update(bound=False), "past the end"),
    (fused_update(formula="dangling lost"), "dangling mass lost"),
    (fused_update(formula="hard-coded"), "hard-coded"),
    (fused_update(guard=False), "out-degree 0"),
    (fused_update(twice=True), "several threads"),
    (fused_update(drop_last=True), "row bounds"),
    (fused_update(read_first=True), "outside its"),
    (fused_update(counter="off by one"), "no block found itself last"),
    (fused_update(reset=False), "the counter is not reset"),
    (fused_update(own_only=True), "only one block's shares"),
    (fused_update(dangling="old"), "the dangling mass of the OLD ranks"),
    (fused_update(dangling="all"), "the new rank of every vertex"),
    (fused_update(signed=True), "signed differences cancel"),
    (fused_update(stride="none"), "grid-stride loop"),
    (fused_update(idle_blocks=False), "blocks counted themselves in"),
    (fused_update(unset_slots=True), "shared memory it never wrote"),
], ids=["solution", "no v < n", "dangling lost", "hard-coded damping", "no guard",
        "two threads per vertex", "last in-link dropped", "out_degree read before the check",
        "counter off by one", "counter not reset",
        "own block only", "old ranks' dangling mass", "every vertex dangling", "signed change",
        "no grid-stride loop", "blocks without a vertex not counted", "unset shared slots"])
def test_fused_update_logic(emulate, cause, monkeypatch):
    for seed in seeds_for(cause):
        expect(run("check_fused_update", emulate, monkeypatch, seed, "21_fused_update"), cause)


def test_exercise_21_is_launched_in_three_configurations_and_its_totals_are_exact(monkeypatch):
    from helpers.checks import gpu_fused

    devices = []
    monkeypatch.setattr(gpu, "open_device", lambda time_limit: devices.append(FakeDevice(fused_update()))
                        or devices[-1])
    report = checks.check_fused_update(defined(load("21_fused_update")[0]), seed=1, quiet=True)
    assert report.ok, str(report)
    grids = {grid for grid, block in devices[0].launches}
    for graph in device.gpu_graphs(np.random.default_rng(1)):          # the checker's graphs for seed 1
        need = device.blocks(graph.num_vertices)[0]
        assert {need, need + 2, gpu_fused.FEW_BLOCKS} <= grids
    assert all(block == 256 for _, block in devices[0].launches)
    assert "a whole PageRank with your kernel and its totals" in str(report)
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        for graph in device.gpu_graphs(rng):
            case = gpu_fused.FusedCase(graph, rng)
            for total in (case.dangling, case.change, float(case.dc.expected.sum())):
                assert total / device.UNIT < 2**24 and float(np.float32(total)) == total
            assert np.array_equal(case.old.astype(np.float32).astype(np.float64), case.old)


# --- 40: a pull over bfloat16 contributions ------------------------------------------------------------

def course_pull_bf16(threads, args, probed, block):
    """helpers/kernels/pull_half.cu's pull_bf16: widened bfloat16 values, summed, times scale[1]."""
    from helpers.checks.gpu_half import widened

    in_offsets, in_sources, contrib, scale, pulled, n = args
    v = np.arange(min(threads, int(n)))
    sums = row_sums(widened(contrib).astype(np.float64), in_offsets, in_sources, v)
    pulled[v] = (sums.astype(np.float32) * scale[1]).astype(np.float32)


def pull_bfloat16(reading="bfloat16", bound=True, extra=0, in_16_bits=False):
    def emulate(threads, args, probed, block):
        from types import SimpleNamespace

        from helpers.checks.gpu_half import summed_in_16_bits, widened

        in_offsets, in_sources, contrib, pulled, n = args
        v = np.arange(threads)
        v = v[v < int(n)] if bound else v
        read(in_offsets, v + 1, v, probed)
        values = {"bfloat16": widened(contrib), "float16": contrib.view(np.float16),
                  "integer": contrib.astype(np.float64),
                  "low bits": contrib.astype(np.uint32).view(np.float32)}[reading].astype(np.float64)
        sums = row_sums(values, in_offsets, in_sources, v, extra)
        if in_16_bits:
            rows = SimpleNamespace(in_offsets=in_offsets[:int(n) + 1], in_sources=in_sources,
                                   num_vertices=int(n))
            sums = summed_in_16_bits(rows, widened(contrib))[v]
        store(pulled, probed, v, sums, v)
    return emulate


class HalfDevice(FakeDevice):
    """The student's kernel emulated, and the course's pull_bf16 beside it."""

    def compile(self, code, function):
        if function == "pull_bf16":
            return Kernel(course_pull_bf16, False)
        return super().compile(code, function)


@pytest.mark.parametrize("emulate, cause", [
    (pull_bfloat16(), None),
    (pull_bfloat16(reading="float16"), "read as IEEE float16"),
    (pull_bfloat16(reading="integer"), "converted as an integer"),
    (pull_bfloat16(reading="low bits"), "the bits were not shifted"),
    (pull_bfloat16(in_16_bits=True), "kept in 16 bits"),
    (pull_bfloat16(bound=False), "past the end"),
    (pull_bfloat16(extra=1), "row bounds"),
], ids=["solution", "float16", "integer", "not shifted", "sum in 16 bits", "no v < n", "row bound"])
def test_pull_bfloat16_logic(emulate, cause, monkeypatch):
    monkeypatch.setattr(gpu, "open_device", lambda time_limit: HalfDevice(emulate))
    for seed in seeds_for(cause):
        report = checks.check_pull_bfloat16(defined(load("40_pull_bfloat16")[0]), seed=seed, quiet=True)
        expect(report, cause)
        if cause is None:
            assert "the same bits as the course's pull_bf16" in str(report) and "from float64" in str(report)


def test_bfloat16_in_numpy_rounds_to_nearest_even_and_the_exact_inputs_fit_it():
    from helpers.checks.gpu_half import to_bfloat16, widened

    values = np.array([1.0, 1 + 2**-8, 1 + 2**-7 + 2**-8, 1 + 2**-9, 1 + 2**-8 + 2**-20, 255 * 2.0**-24],
                      np.float32)                                  # ties go to the even neighbour
    assert widened(to_bfloat16(values)).tolist() == [1.0, 1.0, 1 + 2**-6, 1.0, 1 + 2**-7, 255 * 2.0**-24]
    assert to_bfloat16(np.float32(1.0)) == 0x3F80
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        dc = device.DeviceCase(device.gpu_graphs(rng)[4], rng)
        contrib = dc.host["contrib"]
        assert np.array_equal(widened(to_bfloat16(contrib)), contrib)      # exact: 8 significant bits


# --- 31: beat the library (a launch function) ----------------------------------------------------------

def pull_sums(kind="right"):
    """A launch function on the fake device: y = the sums over in-links, right or wrong in one way."""
    calls = []

    def pull(dg, x, y):
        n = dg.num_vertices
        calls.append(n)
        offsets = dg.in_offsets.astype(np.int64)
        values = x.base if kind == "row bound" else x            # the padded x, to read x[n]
        if kind == "16 bits":
            values = (x.astype(np.float32).view(np.uint32) & 0xFFFF0000).view(np.float32)
        extra = 1 if kind == "row bound" else 0
        sources = dg.in_sources.base if kind == "row bound" else dg.in_sources
        rows = np.arange(n)
        sums = row_sums(values.astype(np.float64), offsets, sources, rows, extra)
        if kind == "long lists dropped":
            sums = np.where(np.diff(offsets) > 32, 0.0, sums)
        if kind == "half written":
            rows = rows[::2]
        y[rows] = sums[rows].astype(np.float32)
        if kind == "past the end":
            y.base[n:n + 3] = 0.0
        if kind == "x changed":
            x *= 2
        if kind == "race" and len(calls) % 2 == 0:
            y[int(np.argmax(np.diff(offsets)))] += 1.0
        if kind == "raises":
            raise ValueError("a mistake in the launch function")
    return pull


def fake_race(pull, dg, x, y, *, trials, launches):
    from helpers.measure.gpu import Timing

    pull(dg, x, y)
    samples = {"your pull_sums": 0.8, "cuSPARSE's SpMV (prepared once)": 1.0, "the random-gather floor": 0.5}
    return ({name: Timing.of(value * (1 + 0.01 * np.arange(trials)), pairing=7)
             for name, value in samples.items()}, "a fake GPU", 50 * 2**20)


@pytest.mark.parametrize("kind, cause", [
    ("right", None), ("row bound", "row bounds"),
    ("long lists dropped", "in-links are right, wrong ones have"),
    ("16 bits", "further from float64 than float32 additions explain"), ("half written", "never written"),
    ("past the end", "past the end"), ("x changed", "modified its input (x)"), ("race", "race"),
    ("raises", "your code raised an error"),
])
def test_beat_the_library_logic(kind, cause, monkeypatch):
    from helpers.core import generators
    from helpers.checks import library

    monkeypatch.setattr(gpu, "open_device", lambda time_limit: FakeDevice(None))
    monkeypatch.setattr(library, "open_device", lambda time_limit: FakeDevice(None))
    monkeypatch.setattr(library, "race", fake_race)
    graph = generators.web_graph(5_000, 30_000, seed=3, max_in_degree=800)
    for seed in seeds_for(cause)[:2]:
        report = checks.check_beat_the_library(pull_sums(kind), seed=seed, quiet=True, graph=graph)
        expect(report, cause)
        if cause is None:
            timed = report.passed[-1]
            assert timed.startswith("timed against cuSPARSE") and "on a fake GPU" in timed, str(report)
            assert "your pull_sums is about 1.2x faster than cuSPARSE's SpMV" in timed
            assert "about 1.6x slower than the random-gather floor" in timed and "in L2" in timed
        else:
            assert "not timed" in str(report) or report.stopped, str(report)


def test_beat_the_library_lints_the_sources_its_function_names_and_refuses_what_is_no_function():
    from helpers.checks import library

    solution = defined(load("31_beat_the_library")[0])
    assert library.kernel_sources(solution) == [solution.__globals__["SOURCE"]]
    assert library.source_cases(solution) == []
    broken = solution.__globals__["SOURCE"].replace("__ballot_sync(FULL,", "__ballot_sync(__activemask(),")
    namespace = {"SOURCE": broken}
    exec("def pull(dg, x, y):\n    return SOURCE\n", namespace)
    found = library.source_cases(namespace["pull"])
    assert len(found) == 1 and "__activemask() used as a mask" in found[0][1][1][0].cause
    report = checks.check_beat_the_library("pull_sums", seed=1, quiet=True)
    assert report.stopped and "pass your launch function itself" in report.failures[0].cause


def test_a_kernel_that_writes_its_input_is_named(monkeypatch):
    inner = pull_grid_stride()

    def emulate(threads, args, probed, block):
        inner(threads, args, probed, block)
        args[2][0] = 1                                   # out_degree[0] = 1, as a student "fixing" degree 0
    for seed in SEEDS[:2]:
        expect(run("check_pull_grid_stride", emulate, monkeypatch, seed, "10_pull_grid_stride"),
               "wrote into its input out_degree")


def test_a_hung_kernel_stops_the_checker_with_a_message(monkeypatch):
    class Hung(FakeDevice):
        def launch(self, kernel, grid, block, args):
            raise Wrong("the kernel did not finish within 1 s",
                        device.HUNG.format(limit=1, after=after_a_fault()), stop=True)

    monkeypatch.setattr(gpu, "open_device", lambda time_limit: Hung(None))
    report = checks.check_pull_grid_stride(defined(load("10_pull_grid_stride")[0]), quiet=True, time_limit=1)
    assert report.stopped and len(report.failures) == 1
    assert "restart the runtime" in report.failures[0].cause and "did not finish within 1 s" in str(report)


def test_in_the_checkers_own_process_a_hung_kernel_leaves_the_notebook_unharmed(monkeypatch):
    """What the child process of a GPU checker runs: the checker by its module and name, saying in its causes
    that the fault stayed in that process."""
    from helpers.checks import report as reporting

    class Hung(FakeDevice):
        def launch(self, kernel, grid, block, args):
            raise Wrong("the kernel did not finish within 1 s",
                        device.HUNG.format(limit=1, after=after_a_fault()), stop=True)

    monkeypatch.setattr(gpu, "open_device", lambda time_limit: Hung(None))
    monkeypatch.setattr(reporting, "OWN_PROCESS", False)            # restored after the test
    code = defined(load("10_pull_grid_stride")[0])
    report = gpu.checked_in_child("helpers.checks.gpu_pull", "check_pull_grid_stride", code, 5, 1.0)
    assert report.stopped and report.seed == 5 and len(report.failures) == 1
    assert "unharmed" in report.failures[0].cause and "restart" not in report.failures[0].cause


def test_a_replaced_reference_stops_a_gpu_checker_before_any_launch(monkeypatch):
    from helpers.checks import pristine

    monkeypatch.setattr(pristine.REFERENCE, "pagerank", lambda *args, **kwargs: None)
    monkeypatch.setattr(gpu, "open_device", lambda time_limit: pytest.fail("no device may be opened"))
    report = checks.check_fused_update(defined(load("21_fused_update")[0]), quiet=True)
    assert report.stopped and "helpers.core.reference.pagerank is not the code" in report.failures[0].detail


def test_every_float32_sum_of_the_gpu_inputs_is_exact():
    """The hub's sum stays below 2**24 units of 2**-24, so every partial sum, in any order, is a float32;
    the large graph has more than 2**16 vertices and a hub of more than 2**15 in-links."""
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        graphs = device.gpu_graphs(rng)
        assert graphs[-1].num_vertices > 2**16 and graphs[-1].in_degree.max() > 2**15
        assert graphs[-1].num_vertices + device.PAD < SPAN
        for graph in graphs:
            dc = device.DeviceCase(graph, rng)
            units = dc.contrib_host / device.UNIT
            assert np.array_equal(units, np.round(units)) and units.max(initial=0) <= device.MAX_UNITS
            assert (graph.in_matrix @ units).max(initial=0) < 2**24
            assert np.array_equal(dc.expected.astype(np.float32).astype(np.float64), dc.expected)
            # one dropped in-link always shows: the smallest contribution is one unit, far above float32
            # noise
            assert units[~graph.dangling].min(initial=1) >= 1


def test_the_real_device_launches_then_waits_and_reports_a_kernel_that_does_not_finish():
    """device.Device over a stand-in for CuPy: a launch calls the kernel, then polls its event; an event
    that never completes ends in a failure that stops the checker."""
    class Array(np.ndarray):
        def get(self):
            return np.array(self)

    class Event:
        ptr, status = 1, 0

        def __init__(self, **kwargs):
            pass

        def record(self):
            pass

        def synchronize(self):
            raise RuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")

    class Runtime:
        @staticmethod
        def eventQuery(ptr):
            return Event.status

    class Cupy:
        cuda = type("cuda", (), {"Event": Event, "runtime": Runtime})

        @staticmethod
        def asarray(host):
            return np.array(host).view(Array)

    dev, calls = device.Device(Cupy, 0.2), []
    data = dev.put(np.arange(3, dtype=np.float32))
    dev.launch(lambda grid, block, args: calls.append((grid, block, args)), (1,), (256,), (data,))
    assert calls == [((1,), (256,), (data,))] and dev.get(data).tolist() == [0.0, 1.0, 2.0]
    Event.status = 600                                            # still running, for ever
    with pytest.raises(Wrong) as stopped:
        dev.launch(lambda *args: None, (1,), (1,), ())
    assert stopped.value.stop and "did not finish within 0.2 s" in stopped.value.detail
    Event.status = 700                                            # the kernel faulted
    with pytest.raises(RuntimeError, match="illegal memory access"):
        dev.launch(lambda *args: None, (1,), (1,), ())


def test_a_kernel_the_probe_does_not_cover_is_checked_by_its_values_and_the_report_says_so(monkeypatch):
    code = defined(load("10_pull_grid_stride")[0]).replace("const float* rank", "const float rank[]")
    assert "const float rank[]" in code
    report = run_source("check_pull_grid_stride", pull_grid_stride(), monkeypatch, code)
    assert report.ok and "the probed launch was skipped" in report.notes[0], str(report)
    plain = run("check_pull_grid_stride", pull_grid_stride(), monkeypatch, 1, "10_pull_grid_stride")
    assert plain.ok and not plain.notes


@pytest.mark.parametrize("old, new", [
    ('extern "C" __global__ void pull_warp(', 'extern "C" __global__ void __launch_bounds__(256)\n'
                                                  'pull_warp('),
    ('extern "C" __global__ void pull_warp(', 'extern "C" {\n__global__ void pull_warp('),
], ids=["__launch_bounds__", 'an extern "C" block'])
def test_a_kernel_declared_another_right_way_is_checked_not_refused(old, new, monkeypatch):
    code = defined(load("13_pull_warp")[0]).replace(old, new)
    code = code + "}\n" if "{\n__global__" in code else code
    assert new in code
    report = run_source("check_pull_warp", pull_warp(), monkeypatch, code)
    assert report.ok and "defines no" not in str(report), str(report)
    missing = code.replace('extern "C"', "")
    report = run_source("check_pull_warp", pull_warp(), monkeypatch, missing)
    assert report.stopped and 'defines no extern "C" __global__ void pull_warp' in str(report)


@pytest.mark.parametrize("top, old, new, words", [
    ("", "            totals[0] = (float)total_dangling;",
     "            float* sums = totals;\n            atomicAdd(sums, (float)total_dangling);",
     "float atomics into totals"),
    ("#define TOTALS totals\n", "            totals[0] = (float)total_dangling;",
     "            atomicAdd(&TOTALS[0], (float)total_dangling);", "float atomics into totals"),
    ("", "    block_dangling[threadIdx.x] = dangling;",
     "    block_dangling[threadIdx.x] = 0.0f;\n    __syncthreads();\n"
     "    atomicAdd(&block_dangling[0], dangling);",
     "float atomics into block_dangling"),
], ids=["through an alias", "through a macro", "into shared memory"])
def test_float_atomics_in_the_fused_update_are_named_however_they_are_written(top, old, new, words,
                                                                            monkeypatch):
    solution = defined(load("21_fused_update")[0])
    code = top + solution.replace(old, new)
    assert new in code
    report = run_source("check_fused_update", fused_update(), monkeypatch, code)
    sources = [f for f in report.failures if "(read, not run)" in f.case]
    assert len(sources) == 1 and words in sources[0].cause, str(report)
    assert run_source("check_fused_update", fused_update(), monkeypatch, solution).ok
