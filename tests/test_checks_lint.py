"""The CUDA source lint and the probed copy of a kernel, on the CPU: hazards named with their line (warp
collectives, block barriers, block-scoped atomics, the prescribed lane stride), no false alarm on correct
code written in unusual ways, comments and strings ignored; probed copies compile for a T4 with NVRTC (the
exercise kernels are covered in tests/test_exercises.py)."""
import pytest

from helpers import kernels
from helpers.checks import cuda, probe
from helpers.checks.lint import lint

HEAD = 'extern "C" __global__ void k(const float* x, float* out, int n) {\n'


def causes(body: str, lane_stride: str | None = None) -> list[str]:
    return [h.cause for h in lint(HEAD + body + "}\n", "k", lane_stride=lane_stride)]


@pytest.mark.parametrize("body", [
    # a mask named by a macro, by a constant, and one taken with __ballot_sync before the branch
    "#define FULL 0xffffffff\n float s = x[threadIdx.x];\n s += __shfl_down_sync(FULL, s, 1);\n"
    " out[0] = s;\n",
    "const unsigned int all = ~0u;\n float s = x[threadIdx.x];\n s += __shfl_xor_sync(all, s, 1);\n"
    " out[0] = s;\n",
    "int i = blockIdx.x * blockDim.x + threadIdx.x;\n unsigned m = __ballot_sync(0xffffffff, i < n);\n"
    " if (i < n) { float s = x[i];\n s += __shfl_down_sync(m, s, 1);\n out[i] = s; }\n",
    # a half-warp mask used only by the half that runs it
    "int lane = threadIdx.x % 32;\n float s = x[threadIdx.x];\n"
    " if (lane < 16) s += __shfl_down_sync(0x0000ffff, s, 8);\n out[threadIdx.x] = s;\n",
    # whole warps take the branch: threadIdx.x < 32 and a warp index
    "float s = x[threadIdx.x];\n if (threadIdx.x < 32) s += __shfl_down_sync(0xffffffff, s, 1);\n"
    " out[0] = s;\n",
    "int warp = threadIdx.x >> 5;\n if (warp == 1) return;\n float s = x[threadIdx.x];\n"
    " s += __shfl_down_sync(0xffffffff, s, 1);\n out[threadIdx.x] = s;\n",
    # hazards written in comments and strings only
    "// s += __shfl_down_sync(0x0000ffff, s, 8);  if (lane) return;\n /* __activemask() */\n"
    " const char* note = \"__shfl_down_sync(0xf, s, 1) // not code\";\n out[0] = x[0];\n",
    # a serial sum by one thread after a barrier
    "__shared__ float p[256];\n p[threadIdx.x] = x[threadIdx.x];\n __syncthreads();\n"
    " if (threadIdx.x == 0) { for (int i = 1; i < 256; ++i) p[0] += p[i];\n out[blockIdx.x] = p[0]; }\n",
    # a shared-memory step with barriers, and a Volta-safe warp step (read, sync, write, sync)
    "__shared__ float p[64];\n p[threadIdx.x] = x[threadIdx.x];\n __syncthreads();\n"
    " if (threadIdx.x < 32) { float v = p[threadIdx.x] + p[threadIdx.x + 32];\n __syncwarp();\n"
    " p[threadIdx.x] = v;\n __syncwarp();\n v += p[threadIdx.x + 16];\n __syncwarp();\n"
    " p[threadIdx.x] = v; }\n",
])
def test_no_false_alarm_on_correct_code(body):
    assert causes(body) == []


@pytest.mark.parametrize("body, words", [
    ("float s = x[threadIdx.x];\n s += __shfl_down_sync(0xffff, s, 8);\n out[0] = s;\n", "leaves out lanes"),
    ("unsigned m = __activemask();\n float s = x[threadIdx.x];\n s += __shfl_down_sync(m, s, 1);\n"
     " out[0] = s;\n",
     "__activemask() used as a mask"),
    ("int lane = threadIdx.x & 31;\n if (x[lane] == 0.0f) return;\n __syncwarp();\n out[lane] = 1;\n",
     "after some lanes of the warp may have returned"),
    ("int i = blockIdx.x * blockDim.x + threadIdx.x;\n float s = 0;\n"
     " for (int k = i; k < n; k += 32) s += __shfl_down_sync(0xffffffff, x[k], 1);\n out[i] = s;\n",
     "inside code that only some lanes of the warp run"),
    ("__shared__ float p[64];\n p[threadIdx.x] = x[threadIdx.x];\n __syncthreads();\n"
     " for (int s = 32; s > 0; s >>= 1) if (threadIdx.x < s) p[threadIdx.x] += p[threadIdx.x + s];\n"
     " out[0] = p[0];\n",
     "no __syncwarp() or __syncthreads() between them"),
])
def test_hazards_are_named_with_their_line(body, words):
    found = lint(HEAD + body + "}\n", "k")
    assert any(words in h.cause for h in found), found
    assert all(h.line > 1 and h.text in (HEAD + body) and "Volta" in h.cause for h in found)


def test_a_helper_that_shuffles_counts_as_a_shuffle():
    code = ("__device__ float warp_sum(float s) {\n"
            " for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffff, s, o);\n"
            " return s;\n}\n" + HEAD + "int lane = threadIdx.x % 32;\n if (lane >= n) return;\n"
            " out[threadIdx.x] = warp_sum(x[threadIdx.x]);\n}\n")
    assert any("after some lanes" in h.cause and "warp_sum" in h.cause for h in lint(code, "k"))


def test_unreadable_source_gives_no_hazard():
    assert lint('extern "C" __global__ void k( {{{', "k") == []
    assert lint("", "k") == []


def test_comments_are_blanked_with_lines_kept():
    code = 'a // b\n/* c\nd */ "e // f" \'/\''
    assert cuda.strip_comments(code) == 'a     \n    \n     "e // f" \'/\''


def test_a_probed_kernel_with_unusual_declarations_compiles_for_a_t4():
    code = ('#define B 256\nextern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ '
            'out,\n'
            '        float* total, int n) {\n'
            '    int i = blockIdx.x * blockDim.x + threadIdx.x;  // shared comes later\n'
            '    if (i >= n) return;\n    __shared__ float a[B], b[2][B];\n    a[threadIdx.x] = x[i];\n'
            '    b[1][threadIdx.x] = a[threadIdx.x];\n    out[i] = b[1][threadIdx.x];\n    out[i] += 1.0f;\n'
            '    float* p = out + i;\n    *p = out[i] * 2;\n    atomicAdd(total, out[i]);\n}\n')
    probed = probe.probed(code, "k", outputs=("out",), sums=("total",), inputs=("x",))
    assert probed.count("checker_probe::poison") == 2
    assert "checker_probe::Out out{checker_probe_out}" in probed
    assert "checker_probe::In<float> x{checker_probe_x}" in probed
    assert ".entry k(" in kernels.nvrtc_compile(probed)


def test_no_probe_where_the_parameter_is_not_a_plain_float_pointer():
    code = 'extern "C" __global__ void k(const float* x, double* out, int n) { out[0] = x[0]; }'
    assert probe.probed(code, "k", outputs=("out",)) is None
    assert probe.probed(code, "other", outputs=()) is None


BLOCK_HEAD = 'extern "C" __global__ void k(const float* x, float* out, float* total, int n) {\n'


@pytest.mark.parametrize("body", [
    # a return every thread of the block takes alike, then barriers
    "__shared__ float p[256];\n if (blockIdx.x * blockDim.x >= n) return;\n"
    " p[threadIdx.x] = x[threadIdx.x];\n"
    " __syncthreads();\n out[blockIdx.x] = p[0];\n",
    # the tree: the branch holds the work, the barrier is outside it; the loop's bound is the same for all
    "__shared__ float p[256];\n int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    " p[threadIdx.x] = i < n ? x[i] : 0.0f;\n"
    " __syncthreads();\n for (int s = blockDim.x / 2; s > 0; s >>= 1) {\n"
    "  if (threadIdx.x < s) p[threadIdx.x] += p[threadIdx.x + s];\n  __syncthreads();\n }\n"
    " if (threadIdx.x == 0) atomicAdd(total, p[0]);\n",
    # block-scoped atomics on shared memory, and on a global element only this block touches
    "__shared__ float s;\n if (threadIdx.x == 0) s = 0.0f;\n __syncthreads();\n"
    " atomicAdd_block(&s, x[threadIdx.x]);\n"
    " __syncthreads();\n if (threadIdx.x == 0) out[blockIdx.x] = s;\n",
    "atomicAdd_block(&out[blockIdx.x], x[threadIdx.x]);\n",
    # two sums reduced side by side: one step touches two arrays, a barrier after each step
    "__shared__ float a[256], b[256];\n a[threadIdx.x] = x[threadIdx.x];\n b[threadIdx.x] = 1.0f;\n"
    " __syncthreads();\n for (int s = 128; s > 0; s >>= 1) {\n  if (threadIdx.x < s) {\n"
    "   a[threadIdx.x] += a[threadIdx.x + s];\n   b[threadIdx.x] += b[threadIdx.x + s];\n  }\n"
    "  __syncthreads();\n }\n if (threadIdx.x == 0) out[blockIdx.x] = a[0] + b[0];\n",
    # a __shared__ flag written by one thread, read by all after a barrier: the same in the whole block
    "__shared__ bool last;\n __shared__ float p[256];\n"
    " if (threadIdx.x == 0) last = atomicAdd(total, 1.0f) == gridDim.x - 1;\n __syncthreads();\n"
    " if (!last) return;\n p[threadIdx.x] = x[threadIdx.x];\n __syncthreads();\n"
    " float s = p[threadIdx.x];\n s += __shfl_down_sync(0xffffffff, s, 16);\n"
    " if (threadIdx.x == 0) out[0] = s;\n",
])
def test_no_false_alarm_on_correct_block_code(body):
    assert [h.cause for h in lint(BLOCK_HEAD + body + "}\n", "k")] == []


@pytest.mark.parametrize("body, words", [
    ("__shared__ float p[256];\n p[threadIdx.x] = x[threadIdx.x];\n __syncthreads();\n"
     " for (int s = 128; s > 0; s >>= 1) {\n  if (threadIdx.x < s) {\n"
     "   p[threadIdx.x] += p[threadIdx.x + s];\n"
     "   __syncthreads();\n  }\n }\n out[0] = p[0];\n", "inside code that only part of the block runs"),
    ("__shared__ float p[256];\n int i = blockIdx.x * blockDim.x + threadIdx.x;\n if (i >= n) return;\n"
     " p[threadIdx.x] = x[i];\n __syncthreads();\n out[i] = p[0];\n",
     "after some threads of the block may have returned"),
    ("int i = blockIdx.x * blockDim.x + threadIdx.x;\n if (i < n) atomicAdd_block(total, x[i]);\n",
     "atomic only among the threads of one block"),
    ("atomicMax_block((int*)out, 1);\n", "atomicMax_block() on out"),
    # the array updated is named, not another one its index reads (was: whichever a set gave first)
    ("atomicAdd_block(&out[(int)x[threadIdx.x]], 1.0f);\n", "atomicAdd_block() on out,"),
    # two steps on ONE array with no barrier between them, even when another array's step sits between
    ("__shared__ float a[256], b[256];\n a[threadIdx.x] = x[threadIdx.x];\n b[threadIdx.x] = 1.0f;\n"
     " __syncthreads();\n if (threadIdx.x < 128) {\n  a[threadIdx.x] += a[threadIdx.x + 128];\n"
     "  b[threadIdx.x] += b[threadIdx.x + 128];\n  a[threadIdx.x] += a[threadIdx.x + 64];\n }\n"
     " out[0] = a[0] + b[0];\n", "no __syncwarp() or __syncthreads() between them"),
    # a flag every thread computes for itself is no block-wide value
    ("__shared__ float p[256];\n bool mine = x[threadIdx.x] > 0.0f;\n if (!mine) return;\n"
     " p[threadIdx.x] = 1.0f;\n __syncthreads();\n out[0] = p[0];\n",
     "after some threads of the block may have returned"),
])
def test_block_hazards_are_named_with_their_line(body, words):
    found = lint(BLOCK_HEAD + body + "}\n", "k")
    assert any(words in h.cause for h in found), found
    assert all(h.line > 1 and h.text in (BLOCK_HEAD + body) for h in found)


def test_a_helper_with_a_barrier_counts_as_a_barrier():
    code = ("__device__ void wait_all() { __syncthreads(); }\n" + BLOCK_HEAD +
            " if (threadIdx.x >= 32) return;\n wait_all();\n out[threadIdx.x] = x[threadIdx.x];\n}\n")
    assert any("call of wait_all()" in h.cause and "returned" in h.cause for h in lint(code, "k"))


ROW_HEAD = 'extern "C" __global__ void k(const int* in_offsets, const int* in_sources, const float* x,\n' \
           '                              float* out,\n' \
           '                              int n, int width) {\n'
WARP = " int v = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;\n" \
       " if (v >= n) return;\n" \
       " float s = 0.0f;\n"


@pytest.mark.parametrize("loop, prescribed", [
    ("for (int k = in_offsets[v] + lane; k < in_offsets[v + 1]; k += 32) s += x[in_sources[k]];\n", "32"),
    ("for (int k = in_offsets[v] + lane; k < in_offsets[v + 1]; k += warpSize) s += x[in_sources[k]];\n",
     "32"),
    ("const int W = 32;\n int k = in_offsets[v] + lane;\n"
     " while (k < in_offsets[v + 1]) { s += x[in_sources[k]]; k += W; }\n",
     "32"),
    ("for (int base = in_offsets[v]; base < in_offsets[v + 1]; base += 32) {\n int k = base + lane;\n"
     " if (k < in_offsets[v + 1]) s += x[in_sources[k]];\n }\n", "32"),
    ("int w = width;\n for (int k = in_offsets[v] + lane; k < in_offsets[v + 1]; k += w) s += "
     "x[in_sources[k]];\n",
     "width"),
    # the grid-stride loop around the row loop is not a lane stride
    ("for (int u = v; u < n; u += gridDim.x * blockDim.x / 32)\n"
     " for (int k = in_offsets[u] + lane; k < in_offsets[u + 1]; k += 32) s += x[in_sources[k]];\n", "32"),
])
def test_the_prescribed_lane_stride_passes(loop, prescribed):
    assert lint(ROW_HEAD + WARP + loop + " out[v] = s;\n}\n", "k", lane_stride=prescribed) == []


@pytest.mark.parametrize("loop, prescribed, got", [
    ("int chunk = (in_offsets[v + 1] - in_offsets[v] + 31) / 32;\n int b = in_offsets[v] + lane * chunk;\n"
     " for (int k = b; k < min(b + chunk, in_offsets[v + 1]); ++k) s += x[in_sources[k]];\n", "32", "1"),
    ("for (int k = in_offsets[v] + lane; k < in_offsets[v + 1]; k += 16) s += x[in_sources[k]];\n", "32",
     "16"),
    ("for (int k = in_offsets[v] + lane; k < in_offsets[v + 1]; k = k + 32) s += x[in_sources[k]];\n",
     "width",
     "32"),
])
def test_another_lane_stride_is_named(loop, prescribed, got):
    found = lint(ROW_HEAD + WARP + loop + " out[v] = s;\n}\n", "k", lane_stride=prescribed)
    assert [h.cause for h in found] and all(f"by {prescribed} as the exercise prescribes (this loop steps "
                                            f"by {got})"
                                            in h.cause for h in found), found
    assert lint(ROW_HEAD + WARP + loop + " out[v] = s;\n}\n",
                "k") == []          # no stride prescribed: silent


def test_inputs_are_probed_whichever_side_const_is_on_and_arrays_are_not():
    code = ('extern "C" __global__ void k(float const* __restrict__ x, const int* const index, float* out,\n'
            '                             int n) {\n'
            '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) out[i] = x[index[i]];\n}\n')
    probed = probe.probed(code, "k", outputs=("out",), inputs=("x", "index"))
    assert "checker_probe::In<float> x{checker_probe_x}" in probed
    assert "checker_probe::In<int> index" in probed
    assert ".entry k(" in kernels.nvrtc_compile(probed)
    array = code.replace("float const* __restrict__ x", "const float x[]")
    assert probe.probed(array, "k", inputs=("x",)) is None


# --- shuffles and barriers that only some threads reach by a ?:, && or ||, a break, continue or goto,
# --- a macro or a helper of a helper; shared arrays smaller than the block

LANE = " int lane = threadIdx.x % 32;\n float s = x[threadIdx.x];\n"


@pytest.mark.parametrize("top, body, words", [
    ("", LANE + " s += lane < 16 ? __shfl_down_sync(0xffffffff, s, 16) : 0.0f;\n out[0] = s;\n",
     "only some lanes of the warp run (the condition on line 4"),
    ("", LANE + " float t = 0.0f;\n bool ok = lane < 16 && (t = __shfl_down_sync(0xffffffff, s, 16)) > 0;\n"
     " out[0] = ok ? t : s;\n", "only some lanes of the warp run (the condition on line 5"),
    ("", LANE + " float t = 0.0f;\n if (lane >= 16 || (t = __shfl_xor_sync(0xffffffff, s, 1)) > 0) s += t;\n"
     " out[0] = s;\n", "only some lanes of the warp run"),
    ("", LANE + " for (int o = 16; o > 0; o /= 2) {\n  if (lane >= o) continue;\n"
     "  s += __shfl_down_sync(0xffffffff, s, o);\n }\n out[0] = s;\n",
     "may have skipped the rest of this round of the loop (continue) (line 5)"),
    ("", LANE + " for (int o = 16; o > 0; o /= 2) {\n  if (s == 0.0f) break;\n"
     "  s += __shfl_down_sync(0xffffffff, s, o);\n }\n out[0] = s;\n",
     "may have left the loop (break) (line 5)"),
    ("#define SHFL(v, o) __shfl_down_sync(FULL, (v), (o))\n#define FULL 0xffffffffu\n",
     LANE + " if (lane < 16) s += SHFL(s, 16);\n out[0] = s;\n", "only some lanes of the warp run"),
    ("#define LEAVE_IF(c) \\\n    if (c) return\n", LANE + " LEAVE_IF(s == 0.0f);\n"
     " s += __shfl_down_sync(0xffffffff, s, 1);\n out[0] = s;\n", "may have returned (line 6)"),
    ("__device__ float inner(float s) { return s + __shfl_xor_sync(0xffffffff, s, 1); }\n"
     "__device__ float outer(float s) { return inner(s); }\n",
     LANE + " if (s == 0.0f) return;\n out[0] = outer(s);\n", "call of outer() (it shuffles) after"),
    ("template <int W> __device__ float wsum(float s) {\n"
     " for (int o = W / 2; o > 0; o /= 2) s += __shfl_down_sync(0xffffffff, s, o);\n return s;\n}\n",
     LANE + " if (lane < 16) s = wsum<16>(s);\n out[0] = s;\n", "call of wsum() (it shuffles) inside"),
])
def test_a_shuffle_only_some_lanes_reach_is_named_however_it_is_written(top, body, words):
    code = top + HEAD + body + "}\n"
    found = lint(code, "k")
    assert any(words in h.cause for h in found), found
    assert all(h.text in code and "Volta" in h.cause for h in found)


@pytest.mark.parametrize("body, words", [
    (" int c = threadIdx.x == 0 ? __syncthreads_count(x[0] > 0) : 0;\n out[0] = c;\n",
     "__syncthreads_count() inside code that only part of the block runs"),
    (" __shared__ float p[256];\n int i = blockIdx.x * blockDim.x + threadIdx.x;\n if (i >= n) goto done;\n"
     " p[threadIdx.x] = x[i];\n __syncthreads();\n out[i] = p[0];\ndone:\n return;\n",
     "after some threads of the block may have jumped past it (goto) (line 4)"),
    (" __shared__ float p[256];\n p[threadIdx.x] = x[threadIdx.x];\n __syncthreads();\n"
     " for (int s = 128; s > 0; s /= 2) {\n  if (p[threadIdx.x] == 0.0f) break;\n"
     "  if (threadIdx.x < s) p[threadIdx.x] += p[threadIdx.x + s];\n  __syncthreads();\n }\n"
     " out[0] = p[0];\n", "instead of breaking out"),
])
def test_a_barrier_only_part_of_the_block_reaches_is_named_however_it_is_written(body, words):
    found = lint(BLOCK_HEAD + body + "}\n", "k")
    assert any(words in h.cause for h in found), found


def test_a_kernel_with_launch_bounds_is_read():
    code = ('extern "C" __global__ void __launch_bounds__(256) k(const float* x, float* out, int n) {\n'
            + LANE + " if (lane >= n) return;\n s += __shfl_down_sync(0xffffffff, s, 1);\n out[0] = s;\n}\n")
    assert [h.line for h in lint(code, "k") if "may have returned (line 4)" in h.cause] == [5]


@pytest.mark.parametrize("top, body", [
    # a ?: or && whose condition is the same in every lane; a shuffle before a varying &&
    ("", LANE + " for (int o = 16; o > 0; o /= 2) s += o > 0 ? __shfl_down_sync(0xffffffff, s, o) : 0.0f;\n"
     " out[0] = s;\n"),
    ("", " int v = (blockIdx.x * blockDim.x + threadIdx.x) / 32;\n float s = x[threadIdx.x], t = 0;\n"
     " if (v < n && (t = __shfl_down_sync(0xffffffff, s, 1)) > 0) s += t;\n out[0] = s;\n"),
    ("", LANE + " float t = __shfl_down_sync(0xffffffff, s, 1);\n if (lane < 31 && t > 0) s += t;\n"
     " out[0] = s;\n"),
    # a break of a switch, a break of an earlier loop, a continue all lanes take alike
    ("", LANE + " for (int o = 16; o > 0; o /= 2) {\n"
     "  switch (lane) { case 0: s += 1; break; default: break; }\n"
     "  s += __shfl_down_sync(0xffffffff, s, o);\n }\n out[0] = s;\n"),
    ("", LANE + " for (int j = 0; j < 4; ++j) if (lane == j) break;\n"
     " s += __shfl_down_sync(0xffffffff, s, 1);\n out[0] = s;\n"),
    ("", LANE + " for (int o = 32; o > 0; o /= 2) {\n  if (o == 32) continue;\n"
     "  s += __shfl_down_sync(0xffffffff, s, o);\n }\n out[0] = s;\n"),
    # a helper that takes its mask, called by each half of the warp with the half's mask
    ("__device__ float half_sum(float s, unsigned mask) {\n"
     " for (int o = 8; o > 0; o /= 2) s += __shfl_down_sync(mask, s, o, 16);\n return s;\n}\n",
     LANE + " if (lane < 16) s = half_sum(s, 0x0000ffffu);\n else s = half_sum(s, 0xffff0000u);\n"
     " out[threadIdx.x] = s;\n"),
    # a function-like macro for the shuffle, a template helper, both reached by every lane
    ("#define SHFL(v, o) __shfl_xor_sync(0xffffffffu, (v), (o))\n",
     LANE + " for (int o = 16; o > 0; o >>= 1) s += SHFL(s, o);\n out[0] = s;\n"),
    ("template <int W> __device__ __forceinline__ float wsum(float s) {\n#pragma unroll\n"
     " for (int o = W / 2; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o, W);\n return s;\n}\n",
     LANE + " s = wsum<32>(s);\n out[0] = s;\n"),
])
def test_no_false_alarm_on_right_code_written_in_unusual_ways(top, body):
    assert [h.cause for h in lint(top + HEAD + body + "}\n", "k")] == []


@pytest.mark.parametrize("body", [
    # a forward goto whose label comes before the barrier; a backward goto (a loop)
    " __shared__ float p[256];\n int i = blockIdx.x * blockDim.x + threadIdx.x;\n float v = 0.0f;\n"
    " if (i >= n) goto stored;\n v = x[i];\nstored:\n p[threadIdx.x] = v;\n __syncthreads();\n"
    " if (threadIdx.x == 0) out[blockIdx.x] = p[0];\n",
    " __shared__ float p[256];\n int k = threadIdx.x;\nagain:\n if (k < n) { k += 256; goto again; }\n"
    " p[threadIdx.x] = k;\n __syncthreads();\n out[threadIdx.x] = p[255 - threadIdx.x];\n",
    # two passes: shuffles, then one warp adds the 8 warps' sums from a small shared array
    " __shared__ float warps[8];\n float s = x[blockIdx.x * blockDim.x + threadIdx.x];\n"
    " for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);\n"
    " if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = s;\n __syncthreads();\n"
    " if (threadIdx.x < 32) {\n  s = threadIdx.x < 8 ? warps[threadIdx.x] : 0.0f;\n"
    "  for (int o = 4; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);\n"
    "  if (threadIdx.x == 0) atomicAdd(total, s);\n }\n",
    # a shared array twice the block; a store through a pointer parameter by thread 0
    " __shared__ float p[512];\n p[threadIdx.x] = x[threadIdx.x];\n p[threadIdx.x + 256] = 0.0f;\n"
    " __syncthreads();\n out[threadIdx.x] = p[threadIdx.x + 1];\n",
    " if (threadIdx.x == 0) total[1] = 1.0f;\n if (total[0] > 0.0f) return;\n"
    " __syncthreads();\n out[threadIdx.x] = x[threadIdx.x];\n",
])
def test_no_false_alarm_on_right_block_code_written_in_unusual_ways(body):
    assert [h.cause for h in lint(BLOCK_HEAD + body + "}\n", "k", block=256)] == []


@pytest.mark.parametrize("top, declaration, index", [
    ("", "__shared__ float p[128];\n", "threadIdx.x"),
    ("#define HALF (256 / 2)\n", "__shared__ float q[8], p[HALF];\n int t = threadIdx.x;\n", "t"),
    ("", "const int W = 64;\n __shared__ float p[W];\n int t = (int)threadIdx.x;\n", "t"),
])
def test_a_shared_array_smaller_than_the_block_is_named(top, declaration, index):
    code = (top + BLOCK_HEAD + " " + declaration + f" p[{index}] = x[threadIdx.x];\n __syncthreads();\n"
            " out[threadIdx.x] = p[0];\n}\n")
    found = lint(code, "k", block=256)
    assert len(found) == 1 and f"reaches p[{index}] and the checker launches 256 threads" in found[0].cause
    assert found[0].text == f"p[{index}] = x[threadIdx.x];", found
    assert lint(code, "k") == [] and lint(code, "k", block=64) == []       # no block, or one that fits


def test_the_course_kernels_raise_no_false_alarm():
    """Every kernel of helpers/kernels is right but one, kept wrong on purpose for lecture 13."""
    from pathlib import Path

    folder = Path(kernels.__file__).parent
    flagged = {path.name for path in folder.glob("*.cu") if lint(path.read_text(encoding="utf-8"),
                                                                 block=256)}
    assert flagged == {"pull_hybrid_six_versions.cu"}


def test_macros_are_expanded_in_place_with_their_lines():
    toks, macros = cuda.tokens("#define F(a, b) g((a) + FULL, \\\n  b)\n#define FULL 1u\nx = F(y, 2);\n")
    assert " ".join(t.text for t in toks) == "x = g ( ( y ) + 1u , 2 ) ;"
    assert {t.line for t in toks} == {4} and set(macros) == {"FULL"}
