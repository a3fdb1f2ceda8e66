"""The GPU checkers' own logic, on the CPU: the device is replaced by NumPy arrays and each kernel by a
Python emulation of what a CUDA kernel (right or wrong) does thread by thread, stray threads past the end
included. This tests the padding, the canaries, the exact comparisons, the read-back of inputs, the probed
launch (writer ids, atomic counts, NaN-filled shared memory) and the causes, on every seed; the real
kernels run through the same checkers in the GPU suite (tests/test_exercises.py)."""
import numpy as np
import pytest

from helpers import checks, checks_gpu
from helpers.checks_probe import SPAN
from test_exercises import defined, load

SEEDS = (1, 2, 3, 4, 5)
BOUNDS = ("past the end", "pushed rank", "i < count", "past n were added", "never wrote")


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

    def put(self, host):
        return np.array(host, copy=True)

    def get(self, array):
        return np.array(array, copy=True)

    def compile(self, code, function):
        return Kernel(self.emulate, "namespace checker_probe" in code)

    def launch(self, kernel, grid, block, args):
        kernel.emulate(grid[0] * block[0], args, kernel.probed)


class Out:
    """Stores into an output as a kernel does; in a probed launch also records the lowest and highest
    writer thread of each element, as checks_probe's wrapper does."""

    def __init__(self, array, probed):
        self.array, self.words = array, (array.view(np.uint32) if probed else None)

    def store(self, i, value, thread):
        self.array[i] = np.float32(value)
        if self.words is not None and thread is not None and i < SPAN:
            self.words[SPAN + i] = min(int(self.words[SPAN + i]), thread)
            self.words[2 * SPAN + i] = max(int(self.words[2 * SPAN + i]), thread)


def run(checker, emulate, monkeypatch, seed, slug):
    monkeypatch.setattr(checks_gpu, "_open_device", lambda time_limit: FakeDevice(emulate))
    code = defined(load(slug)[0])
    return getattr(checks, checker)(code, seed=seed, quiet=True)


def expect(report, cause):
    if cause is None:
        assert report.ok, str(report)
    else:
        assert not report.ok, str(report)
        assert any(cause in c for c in report.causes()), str(report)


# --- 10: grid-stride pull ------------------------------------------------------------------------

def pull_grid_stride(stride="grid", bound="<", extra=0, start="global"):
    def emulate(threads, args, probed):
        in_offsets, in_sources, out_degree, rank, pulled, n = args
        out, n = Out(pulled, probed), int(n)
        step = {"grid": threads, "block": 128, "once": 10**9}[stride]
        for t in range(threads):
            v = t if start == "global" else t % 128
            while (v < n) if bound == "<" else (v <= n):
                total = sum(float(rank[u]) / float(out_degree[u]) for u in in_sources[
                    int(in_offsets[v]):int(in_offsets[v + 1]) + extra])
                out.store(v, total, t)
                v += step
    return emulate


@pytest.mark.parametrize("emulate, cause", [
    (pull_grid_stride(), None),
    (pull_grid_stride(stride="once"), "never written"),
    (pull_grid_stride(bound="<="), "past the end"),
    (pull_grid_stride(extra=1), "row bounds"),
    (pull_grid_stride(stride="block"), "wrong grid stride"),
    (pull_grid_stride(start="block"), "wrong grid stride"),
], ids=["solution", "no stride", "v <= n", "row bound", "stride blockDim.x", "start without blockIdx"])
def test_pull_grid_stride_logic(emulate, cause, monkeypatch):
    for seed in seeds_for(cause):
        expect(run("pull_grid_stride", emulate, monkeypatch, seed, "10_pull_grid_stride"), cause)


# --- 11: push with atomics -----------------------------------------------------------------------

def push_rank(bound=True, atomic=True, extra=0):
    def emulate(threads, args, probed):
        out_offsets, out_targets, out_degree, rank, pulled, n = args
        n = int(n)
        last = {}
        for u in range(threads):
            if (bound and u >= n) or out_degree[u] == 0:
                continue
            share = np.float32(rank[u] / out_degree[u])
            for k in range(int(out_offsets[u]), int(out_offsets[u + 1]) + extra):
                if atomic:
                    pulled[out_targets[k]] += share
                else:
                    last[int(out_targets[k])] = share          # lost updates: only one add survives
        for t, share in last.items():
            pulled[t] += share
    return emulate


@pytest.mark.parametrize("emulate, cause", [
    (push_rank(), None),
    (push_rank(bound=False), "pushed rank"),
    (push_rank(atomic=False), "race"),
    (push_rank(extra=1), "first out-link of the next vertex"),
    (push_rank(extra=-1), "misses its last out-link"),
], ids=["solution", "no u < n", "no atomics", "row bound", "last out-link skipped"])
def test_push_rank_logic(emulate, cause, monkeypatch):
    for seed in seeds_for(cause):
        expect(run("push_rank", emulate, monkeypatch, seed, "11_push_rank"), cause)


# --- 12: contributions -----------------------------------------------------------------------------

def contributions(bound="<", guard=True, twice=False):
    def emulate(threads, args, probed):
        rank, out_degree, contrib, dangling_rank, n = args
        c, dr, n = Out(contrib, probed), Out(dangling_rank, probed), int(n)
        for t in range(threads):
            for u in ([t, t - 1] if twice else [t]):
                if u < 0 or not ((u < n) if bound == "<" else (u <= n)):
                    continue
                degree = int(out_degree[u])
                with np.errstate(divide="ignore", invalid="ignore"):
                    c.store(u, np.float32(rank[u]) / np.float32(degree) if (degree or not guard) else 0.0, t)
                dr.store(u, 0.0 if degree else rank[u], t)
    return emulate


@pytest.mark.parametrize("emulate, cause", [
    (contributions(), None),
    (contributions(bound="<="), "past the end"),
    (contributions(guard=False), "out-degree 0"),
    (contributions(twice=True), "several threads"),
], ids=["solution", "u <= n", "no guard", "two threads per vertex"])
def test_contributions_split_logic(emulate, cause, monkeypatch):
    for seed in seeds_for(cause):
        expect(run("contributions_split", emulate, monkeypatch, seed, "12_contributions_split"), cause)


# --- 13 and 14: lanes per vertex -------------------------------------------------------------------

def row_sums(values, in_offsets, in_sources, rows):
    """Sum of values[in_sources[k]] over each row's in-links (exact here: the inputs are dyadic)."""
    starts, ends = in_offsets[rows].astype(np.int64), in_offsets[rows + 1].astype(np.int64)
    terms = values[in_sources].astype(np.float64)
    cumulative = np.concatenate([[0.0], np.cumsum(terms)])
    return cumulative[ends] - cumulative[starts]


def lane_zero(terms, width, tree_from):
    """Lane 0's value after a shfl_down tree from `tree_from`, lane l holding in-links l, l + width, ..."""
    lanes = [sum(terms[l::width]) for l in range(width)]
    offset = tree_from
    while offset > 0:
        lanes = [lanes[l] + (lanes[l + offset] if l + offset < width else lanes[l]) for l in range(width)]
        offset //= 2
    return lanes[0]


def store_groups(out, probed, rows, values, width, group_ids, every_lane):
    """Lane 0 (or every lane) of group g stores values into out[rows]; writer ids as the probe records."""
    out[rows] = values.astype(np.float32)
    if probed:
        words, first = out.view(np.uint32), width * group_ids
        np.minimum.at(words, SPAN + rows, first.astype(np.uint32))
        np.maximum.at(words, 2 * SPAN + rows, (first + (width - 1 if every_lane else 0)).astype(np.uint32))


def pull_warp_rank(bound=True, store="lane 0", tree_from=16):
    def emulate(threads, args, probed):
        in_offsets, in_sources, out_degree, rank, pulled, n = args
        warps = np.arange(threads // 32)
        if bound:
            warps = warps[warps < int(n)]
        contrib = np.divide(rank.astype(np.float64), out_degree, out=np.zeros(rank.size), where=out_degree > 0)
        if tree_from == 16:
            values = row_sums(contrib, in_offsets, in_sources, warps)
        else:
            values = np.array([lane_zero(list(contrib[in_sources[in_offsets[w]:in_offsets[w + 1]]]), 32, tree_from)
                               for w in warps])
        store_groups(pulled, probed, warps, values, 32, warps, store != "lane 0")
    return emulate


@pytest.mark.parametrize("emulate, cause", [
    (pull_warp_rank(), None),
    (pull_warp_rank(bound=False), "past the end"),
    (pull_warp_rank(tree_from=8), "not all combined"),
    (pull_warp_rank(store="total"), "several lanes store"),
], ids=["solution", "no v < n", "tree from 8", "every lane stores the total"])
def test_pull_warp_rank_logic(emulate, cause, monkeypatch):
    for seed in seeds_for(cause):
        expect(run("pull_warp_rank", emulate, monkeypatch, seed, "13_pull_warp_rank"), cause)


def pull_list(check_count=True, store="lane 0", listed=True):
    def emulate(threads, args, probed):
        vertices, count, in_offsets, in_sources, contrib, pulled, width = args
        groups = np.arange(threads // int(width))
        if check_count:
            groups = groups[groups < int(count)]
        rows = vertices[groups].astype(np.int64) if listed else groups
        values = row_sums(contrib, in_offsets, in_sources, rows)
        store_groups(pulled, probed, rows, values, int(width), groups, store != "lane 0")
    return emulate


@pytest.mark.parametrize("emulate, cause", [
    (pull_list(), None),
    (pull_list(check_count=False), "i < count"),
    (pull_list(store="all"), "several lanes store"),
    (pull_list(listed=False), "wrong vertex"),
], ids=["solution", "no i < count", "every lane stores", "index as vertex"])
def test_pull_list_logic(emulate, cause, monkeypatch):
    for seed in seeds_for(cause):
        expect(run("pull_list", emulate, monkeypatch, seed, "14_pull_list"), cause)


# --- 20: the L1 change -----------------------------------------------------------------------------

def l1_change(bound=True, unset_slots=False, per="block", race=False):
    def emulate(threads, args, probed):
        new, old, total, n = args
        n, words = int(n), total.view(np.uint32)
        for block in range(threads // 256):
            i = block * 256 + np.arange(256)
            inside = i < n if bound else np.ones(256, bool)
            diff = np.abs(new[np.minimum(i, new.size - 1)].astype(np.float64) - old[np.minimum(i, old.size - 1)])
            slots = np.where(inside, diff, np.nan if (unset_slots and probed) else 0.0)
            if per == "element":                           # exact sums: one add per element, the same total
                total[0] = np.float32(total[0] + slots[inside].sum())
                if probed:
                    words[SPAN] += int(inside.sum())
                continue
            value = np.float32(slots.sum())
            total[0] = np.float32(value if race else total[0] + value)
            if probed and not race:
                words[SPAN] += 1
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
        expect(run("l1_change", emulate, monkeypatch, seed, "20_l1_change"), cause)


# --- 21: the fused update --------------------------------------------------------------------------

def fused_update(bound=True, formula="right", guard=True, twice=False, drop_last=False):
    def emulate(threads, args, probed):
        in_offsets, in_sources, out_degree, contrib, mass, d, new_rank, new_contrib, n = args
        n, d, mass, one = int(n), np.float32(d), np.float32(mass), np.float32(1)
        v = np.arange(threads)
        v = v[v < n] if bound else v
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
        second = v + 1 < threads if twice else np.zeros(v.size, bool)   # thread v + 1 stores v as well
        for out, values in ((new_rank, r), (new_contrib, c)):
            out[v] = values
            if probed:
                words = out.view(np.uint32)
                np.minimum.at(words, SPAN + v, v.astype(np.uint32))
                np.maximum.at(words, 2 * SPAN + v, (v + second).astype(np.uint32))
    return emulate


@pytest.mark.parametrize("emulate, cause", [
    (fused_update(), None),
    (fused_update(bound=False), "past the end"),
    (fused_update(formula="dangling lost"), "dangling mass lost"),
    (fused_update(formula="hard-coded"), "hard-coded"),
    (fused_update(guard=False), "out-degree 0"),
    (fused_update(twice=True), "several threads"),
    (fused_update(drop_last=True), "row bounds"),
], ids=["solution", "no v < n", "dangling lost", "hard-coded damping", "no guard", "two threads per vertex",
        "last in-link dropped"])
def test_fused_update_logic(emulate, cause, monkeypatch):
    for seed in seeds_for(cause):
        expect(run("fused_update", emulate, monkeypatch, seed, "21_fused_update"), cause)


def test_a_kernel_that_writes_its_input_is_named(monkeypatch):
    inner = pull_grid_stride()

    def emulate(threads, args, probed):
        inner(threads, args, probed)
        args[2][0] = 1                                   # out_degree[0] = 1, as a student "fixing" degree 0
    for seed in SEEDS[:2]:
        expect(run("pull_grid_stride", emulate, monkeypatch, seed, "10_pull_grid_stride"),
               "wrote into its input out_degree")


def test_a_hung_kernel_stops_the_checker_with_a_message(monkeypatch):
    class Hung(FakeDevice):
        def launch(self, kernel, grid, block, args):
            raise checks_gpu.Wrong("the kernel did not finish within 1 s", checks_gpu.HUNG.format(limit=1), stop=True)

    monkeypatch.setattr(checks_gpu, "_open_device", lambda time_limit: Hung(None))
    report = checks.pull_grid_stride(defined(load("10_pull_grid_stride")[0]), quiet=True, time_limit=1)
    assert report.stopped and len(report.failures) == 1
    assert "restart the runtime" in report.failures[0].cause and "did not finish within 1 s" in str(report)


def test_every_float32_sum_of_the_gpu_inputs_is_exact():
    """The hub's sum stays below 2**24 units of 2**-24, so every partial sum, in any order, is a float32."""
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        for graph in checks_gpu._gpu_graphs(rng):
            dc = checks_gpu.DeviceCase(FakeDevice(None), graph, rng)
            units = dc.contrib_host / checks_gpu.UNIT
            assert np.array_equal(units, np.round(units)) and units.max(initial=0) < 512
            assert (graph.in_matrix @ units).max(initial=0) < 2**24
            assert np.array_equal(dc.expected.astype(np.float32).astype(np.float64), dc.expected)
            # one dropped in-link always shows: the smallest contribution is one unit, far above float32 noise
            assert units[~graph.dangling].min(initial=1) >= 1


def test_the_real_device_launches_then_waits_and_reports_a_kernel_that_does_not_finish():
    """checks_gpu.Device over a stand-in for CuPy: a launch calls the kernel, then polls its event; an event
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

    device, calls = checks_gpu.Device(Cupy, 0.2), []
    data = device.put(np.arange(3, dtype=np.float32))
    device.launch(lambda grid, block, args: calls.append((grid, block, args)), (1,), (256,), (data,))
    assert calls == [((1,), (256,), (data,))] and device.get(data).tolist() == [0.0, 1.0, 2.0]
    Event.status = 600                                            # still running, for ever
    with pytest.raises(checks_gpu.Wrong) as stopped:
        device.launch(lambda *args: None, (1,), (1,), ())
    assert stopped.value.stop and "did not finish within 0.2 s" in stopped.value.detail
    Event.status = 700                                            # the kernel faulted
    with pytest.raises(RuntimeError, match="illegal memory access"):
        device.launch(lambda *args: None, (1,), (1,), ())
