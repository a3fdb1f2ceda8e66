"""The GPU PageRank driver: one loop for every kernel the course teaches (each launched through
``helpers.kernels.compiled``), so that lectures compare kernels, not loops. Importing it imports no CuPy."""
from helpers.core.graph import GraphTooLargeError
from helpers.core.suites import verification_graphs
from helpers.driver.compare import compare, float64_reference, graph_label, timed_row
from helpers.driver.device import BLOCK, DeviceGraph, as_device_graph, blocks_for, device_bytes
from helpers.driver.device_generators import rmat_device, web_like_device
from helpers.driver.floors import BYTES_MODEL, bytes_per_iteration
from helpers.driver.iteration import (BlockedIteration, FusedIteration, Iteration, NotConvergedWarning,
                                      WorkPlan, capture, graph_iteration_ms, make_iteration, replayed,
                                      resident_blocks, time_iterations)
from helpers.driver.solve import GpuPageRankResult, choose, pagerank_gpu
from helpers.driver.variants import (VARIANTS, Variant, coo_cumsum, half_spmv, i32, pull_binned, pull_hybrid,
                                     pull_launcher, segment_size, variant, variants_for)
from helpers.driver.verify import VerificationError, spmv_error, step_error, verify

__all__ = [name for name in dir() if not name.startswith("_")]
