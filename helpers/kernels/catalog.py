"""The kernel catalog, the one registry: every .cu file with its lecture, driver variants, exercise, checker
and test. The tests are parametrised from it; ``sync`` writes the README's kernel table from it."""
from __future__ import annotations

from dataclasses import dataclass

TEST = "tests/test_kernels.py::test_kernel_is_right[{}]"


@dataclass(frozen=True)
class Entry:
    file: str                        # helpers/kernels/<file>.cu
    lecture: str                     # the lecture that shows it inline (or explains it)
    variants: tuple[str, ...] = ()   # driver variants whose own kernel it is (helpers.driver.VARIANTS);
    #                                  contributions and stop_test serve every unfused iteration besides
    exercise: str | None = None      # notebooks/exercises/<exercise>.ipynb
    checker: str | None = None       # helpers.checks.<checker>

    @property
    def test(self) -> str:
        return TEST.format(self.file)


CATALOG = {e.file: e for e in [
    Entry("add_one", "00"),
    Entry("pull_thread", "10", ("pull_thread",), "10_pull_grid_stride", "check_pull_grid_stride"),
    Entry("gather_floor", "10"),
    Entry("timeline", "10"),
    Entry("empty", "10"),
    Entry("scan_naive", "11", ("scan_naive",)),
    Entry("push_atomic", "11", ("push_atomic",), "11_push_atomic", "check_push_atomic"),
    Entry("contributions", "12", (), "12_contributions_split", "check_contributions_split"),
    Entry("pull_contrib", "12", ("pull_contrib",)),
    Entry("pull_interleaved", "12", ("pull_interleaved",)),
    Entry("pull_warp", "13", ("pull_warp",), "13_pull_warp", "check_pull_warp"),
    Entry("pull_subwarp", "13", ("pull_subwarp_4", "pull_subwarp_8", "pull_subwarp_16")),
    Entry("pull_hybrid", "13", ("pull_hybrid",), "31_beat_the_library", "check_beat_the_library"),
    Entry("pull_shared_tile", "13", ("pull_shared_tile",)),
    Entry("pull_hybrid_six_versions", "13"),
    Entry("pull_binned", "14", ("pull_binned",), "14_pull_list", "check_pull_list"),
    Entry("coo_atomic", "14", ("coo_atomic",)),
    Entry("pull_dynamic", "14"),
    Entry("stop_test", "20", (), "20_l1_change", "check_l1_change"),
    Entry("pull_contrib_kahan", "20", ("pull_contrib_kahan",)),
    Entry("pull_contrib_f64", "20", ("pull_contrib_f64",)),
    Entry("fused", "21", ("fused",), "21_fused_update", "check_fused_update"),
    Entry("warp_atomic_sum", "21"),
    Entry("pull_segmented", "22", ("pull_segmented", "blocked")),       # blocked's pass
    Entry("blocked", "22", ("blocked",)),
    Entry("fma_roof", "31"),
    Entry("top_k_merge", "33"),                      # exercise 33 is top-k in NumPy, not this kernel
    Entry("top_k_merge_branchy", "33"),
    Entry("to_half", "40", ("pull_f16", "pull_bf16")),
    Entry("pull_half", "40", ("pull_f16", "pull_bf16"), "40_half", "check_pull_bfloat16"),
]}

# The driver variants that launch no kernel of the course's own (CuPy's cumsum, cuSPARSE's SpMV).
WITHOUT_KERNEL = ("coo_cumsum", "cusparse")
