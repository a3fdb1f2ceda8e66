"""What a PageRank iteration is measured against on this GPU, for one graph in one vertex order: the byte
model (4E + 20N bytes), the measured stream and gather floors, sector requests per edge and the L2 regime."""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from helpers import kernels
from helpers.core.arguments import host_array, to_host
from helpers.measure.gpu import Timing, device_facts, measure_copy_bandwidth, require_gpu, time_back_to_back

SECTOR_BYTES = 32
WARP = 32
# A Tesla T4 (Colab's GPU), from NVIDIA's datasheet: only for stated model-based expectations, never measured.
T4_NAME = "Tesla T4 (datasheet: 320 GB/s GDDR6, 4 MB L2)"
T4_DRAM_GBS = 320.0
T4_L2_BYTES = 4 * 2**20
T4_SEGMENT = T4_L2_BYTES // 2 // 4     # sources per blocked segment on a T4: 2 MiB, half its L2
BYTES_MODEL = "4E + 20N bytes"      # the DRAM lower bound of one iteration, if every byte moved once
FLOPS_PER_EDGE = 1          # one float32 addition per in-link
FLOPS_PER_VERTEX = 6        # d * sum, + base, rank / out-degree, |new - old|, two reduction adds


def bytes_per_iteration(num_vertices: int, num_edges: int) -> int:
    """The byte model: every in-link's source (4E) and five vectors of N floats, each moved once."""
    return 4 * int(num_edges) + 20 * int(num_vertices)


def flops_per_iteration(num_vertices: int, num_edges: int) -> int:
    """The floating-point operations of one fused iteration, counted from the kernel (not a model's guess)."""
    return FLOPS_PER_EDGE * int(num_edges) + FLOPS_PER_VERTEX * int(num_vertices)


def sectors_per_edge(in_sources, *, sample_warps: int = 1 << 20) -> float:
    """Distinct 32-byte sectors a warp's 32 consecutive gathers touch, per edge (1/32 to 1), over evenly
    spaced warps of big graphs; NumPy or CuPy input."""
    host_array(in_sources, "in_sources", gpu=True, ndim=1)
    cupy = sys.modules.get("cupy")           # imported already wherever a CuPy array exists
    xp = cupy if cupy is not None and isinstance(in_sources, cupy.ndarray) else np
    if xp is np:                       # a list, or a GPU array that is not CuPy's: what to_host says
        in_sources = to_host(in_sources, "in_sources")
    warps = in_sources.size // WARP
    if warps == 0:
        return float("nan")
    pick = xp.linspace(0, warps - 1, min(warps, sample_warps)).astype(xp.int64)
    rows = xp.sort(in_sources[: warps * WARP].reshape(warps, WARP)[pick] // (SECTOR_BYTES // 4), axis=1)
    distinct = 1 + (rows[:, 1:] != rows[:, :-1]).sum(axis=1)
    return float(distinct.mean()) / WARP


@dataclass(frozen=True)
class Floors:
    """The measured floors of one graph in one order on this GPU."""
    stream: Timing           # reading in_sources once
    gather: Timing           # ... and gathering one float per in-link
    sectors_per_edge: float
    model_ms: float          # the byte model at the measured copy bandwidth
    copy_gbs: float
    l2_bytes: int
    vector_bytes: int

    @property
    def regime(self) -> str:
        return regime(self.vector_bytes, self.l2_bytes)

    def as_dict(self) -> dict:
        return {"stream_ms": self.stream.median_ms, "stream_lo": self.stream.min_ms,
                "stream_hi": self.stream.max_ms, "gather_ms": self.gather.median_ms,
                "gather_lo": self.gather.min_ms, "gather_hi": self.gather.max_ms,
                "sectors_per_edge": self.sectors_per_edge, "model_ms": self.model_ms, "regime": self.regime}


def regime(vector_bytes: int, l2_bytes: int, gpu: str = "this GPU's") -> str:
    """Where the contribution vector falls against L2, in words."""
    ratio = vector_bytes / l2_bytes
    size = (f"the contribution vector ({vector_bytes / 2**20:.1f} MiB) is {ratio:.2f}x {gpu} L2 "
            f"({l2_bytes / 2**20:.0f} MiB)")
    if ratio <= 0.5:
        return f"in L2: {size}; gathers are served by L2, whose throughput, not DRAM's, sets the floor"
    if ratio <= 1.0:
        return f"about L2-sized: {size}; part of the gathers miss L2 and go to DRAM"
    return (f"beyond L2: {size}; most gathers go to DRAM, a 32-byte sector each, unless the order keeps them "
            "close")


def _grid(cp) -> int:
    per_sm = cp.cuda.Device().attributes["MaxThreadsPerMultiProcessor"] // 256
    return device_facts().multiprocessors * max(per_sm, 1)


def measure(dg, *, copy_gbs: float | None = None, launches: int = 10, trials: int = 7) -> Floors:
    """Measure the stream and gather floors of a DeviceGraph (its in_sources as stored) on this GPU."""
    cp = require_gpu()
    blocks = _grid(cp)
    out = cp.empty(blocks * 256, dtype=cp.float32)
    x = cp.full(dg.num_vertices, 1.0 / dg.num_vertices, dtype=cp.float32)
    count = np.int64(dg.num_edges)
    stream = kernels.compiled("gather_floor", "stream_floor")
    gather = kernels.compiled("gather_floor", "gather_floor")
    # ten warm-up launches: the first trials after a quiet spell can run at lower clocks
    stream_t = time_back_to_back(lambda: stream((blocks,), (256,), (dg.in_sources, out, count)),
                                 launches=launches, trials=trials, warmup=10)
    gather_t = time_back_to_back(lambda: gather((blocks,), (256,), (dg.in_sources, x, out, count)),
                                 launches=launches, trials=trials, warmup=10)
    copy_gbs = copy_gbs or measure_copy_bandwidth()
    model = bytes_per_iteration(dg.num_vertices, dg.num_edges) / (copy_gbs * 1e9) * 1e3
    return Floors(stream_t, gather_t, sectors_per_edge(dg.in_sources), model, copy_gbs,
                  device_facts().l2_bytes, 4 * dg.num_vertices)


def t4_expectation(num_vertices: int, num_edges: int, sectors: float) -> dict:
    """A T4's model-based expectation, never a measurement: the byte model at 320 GB/s, the gathers from L2
    (best case) or DRAM, and the blocked iteration; the regime says which end the graph is near."""
    dram = T4_DRAM_GBS * 1e9
    stream_ms = 4 * num_edges / dram * 1e3
    return {"gpu": T4_NAME, "regime": regime(4 * num_vertices, T4_L2_BYTES, "a T4's"),
            "vector beyond L2": 4 * num_vertices > T4_L2_BYTES,
            "byte model ms": bytes_per_iteration(num_vertices, num_edges) / dram * 1e3,
            "gather from L2 ms (model, best case)": stream_ms,
            "gather from DRAM ms (model)": stream_ms + sectors * num_edges * SECTOR_BYTES / dram * 1e3,
            "blocked ms (model, at most)": t4_blocked_bytes(num_vertices, num_edges) / dram * 1e3}


def t4_blocked_bytes(num_vertices: int, num_edges: int) -> int:
    """DRAM bytes of one blocked iteration on a T4, at most: the sources (4E), 16 bytes per row a segment
    touches (at most min(E, segments x N)) and the vertex pass (20N)."""
    n, e = int(num_vertices), int(num_edges)
    return 4 * e + 16 * min(e, -(-n // T4_SEGMENT) * n) + 20 * n


def compute_roof(rounds: int = 4096, trials: int = 7) -> Timing:
    """This GPU's float32 compute roof, measured: fma_roof on every resident thread, a Timing of GFLOP/s."""
    cp = require_gpu()
    blocks = 4 * _grid(cp)
    out = cp.empty(blocks * 256, dtype=cp.float32)
    kernel = kernels.compiled("fma_roof")
    args = (out, np.int32(rounds), np.float32(0.999), np.float32(0.001))
    timing = time_back_to_back(lambda: kernel((blocks,), (256,), args), launches=3, trials=trials)
    return Timing.of(16.0 * rounds * blocks * 256 / (timing.samples_ms * 1e-3) / 1e9)
