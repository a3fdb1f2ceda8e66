"""The kernel catalog, the one registry: every .cu file with its lecture, driver variants and test, and every
exercise with its notebook, checker and kernel. The tests are parametrised from it; ``sync`` writes the
README's kernel table from it."""
from __future__ import annotations

from dataclasses import dataclass

TEST = "tests/test_kernels.py::test_kernel_is_right[{}]"


@dataclass(frozen=True)
class Entry:
    file: str                        # helpers/kernels/<file>.cu
    lecture: str                     # the lecture that shows it inline (or explains it)
    variants: tuple[str, ...] = ()   # driver variants whose own kernel it is (helpers.driver.VARIANTS);
    #                                  contributions and stop_test serve every unfused iteration besides

    @property
    def test(self) -> str:
        return TEST.format(self.file)


CATALOG = {e.file: e for e in [
    Entry("add_one", "00"),
    Entry("pull_thread", "10", ("pull_thread",)),
    Entry("gather_floor", "10"),
    Entry("timeline", "10"),
    Entry("empty", "10"),
    Entry("scan_naive", "11", ("scan_naive",)),
    Entry("push_atomic", "11", ("push_atomic",)),
    Entry("contributions", "12"),
    Entry("pull_contrib", "12", ("pull_contrib",)),
    Entry("pull_interleaved", "12", ("pull_interleaved",)),
    Entry("pull_warp", "13", ("pull_warp",)),
    Entry("pull_subwarp", "13", ("pull_subwarp_4", "pull_subwarp_8", "pull_subwarp_16")),
    Entry("pull_hybrid", "13", ("pull_hybrid",)),
    Entry("pull_shared_tile", "13", ("pull_shared_tile",)),
    Entry("pull_hybrid_six_versions", "13"),
    Entry("pull_binned", "14", ("pull_binned",)),
    Entry("coo_atomic", "14", ("coo_atomic",)),
    Entry("pull_dynamic", "14"),
    Entry("stop_test", "20"),
    Entry("pull_contrib_kahan", "20", ("pull_contrib_kahan",)),
    Entry("pull_contrib_f64", "20", ("pull_contrib_f64",)),
    Entry("fused", "21", ("fused",)),
    Entry("warp_atomic_sum", "21"),
    Entry("pull_segmented", "22", ("pull_segmented", "blocked")),       # blocked's pass
    Entry("blocked", "22", ("blocked",)),
    Entry("fma_roof", "31"),
    Entry("top_k_merge", "33"),                      # exercise 33 is top-k in NumPy, not this kernel
    Entry("top_k_merge_branchy", "33"),
    Entry("to_half", "40", ("pull_f16", "pull_bf16")),
    Entry("pull_half", "40", ("pull_f16", "pull_bf16")),
]}


@dataclass(frozen=True)
class Exercise:
    """notebooks/exercises/<number>_<slug>(_solution).ipynb, checked by checks.check_<slug>; in a GPU exercise
    the student writes the kernel <slug>, which its checker launches and probes."""
    number: str                        # also the lecture it follows
    slug: str
    practises: str | None = None       # the CATALOG kernel file it practises
    inputs: tuple[str, ...] = ()       # the kernel's const pointer parameters (none: not a kernel exercise)
    outputs: tuple[str, ...] = ()      # float* parameters whose writers the probe records
    sums: tuple[str, ...] = ()         # float* accumulators whose atomicAdd calls the probe counts
    lane_stride: str | None = None     # the lane stride the exercise prescribes, for the lint

    @property
    def notebook(self) -> str:
        return f"{self.number}_{self.slug}"

    @property
    def checker(self) -> str:
        return f"check_{self.slug}"

    @property
    def kernel(self) -> str:
        return self.slug


PULL = ("in_offsets", "in_sources", "out_degree", "rank")
EXERCISES = {e.number: e for e in [
    Exercise("01", "pagerank_step"),
    Exercise("02", "transpose"),
    Exercise("03", "power_iteration"),
    Exercise("10", "pull_grid_stride", "pull_thread", PULL, ("pulled",)),
    Exercise("11", "push_atomic", "push_atomic", ("out_offsets", "out_targets", "out_degree", "rank")),
    Exercise("12", "contributions_split", "contributions", ("rank", "out_degree"), ("contrib", "dangling_rank")),
    Exercise("13", "pull_warp", "pull_warp", PULL, ("pulled",), lane_stride="32"),
    Exercise("14", "pull_list", "pull_binned", ("vertices", "in_offsets", "in_sources", "contrib"), ("pulled",),
             lane_stride="width"),
    Exercise("20", "l1_change", "stop_test", ("new_rank", "old_rank"), sums=("total",)),
    Exercise("21", "fused_update", "fused", ("in_offsets", "in_sources", "out_degree", "contrib", "rank"),
             ("new_rank", "new_contrib")),
    Exercise("22", "reorder"),
    Exercise("31", "beat_the_library", "pull_hybrid"),
    Exercise("33", "top_k"),
    Exercise("40", "pull_bfloat16", "pull_half", ("in_offsets", "in_sources"), ("pulled",)),
]}

# The driver variants that launch no kernel of the course's own (CuPy's cumsum, cuSPARSE's SpMV).
WITHOUT_KERNEL = ("coo_cumsum", "cusparse")
