"""The CUDA source lint and the probed copy of a kernel, on the CPU: hazards named with their line, no false
alarm on correct warp code written in unusual ways, comments and strings ignored; probed copies compile
for a T4 with NVRTC (the exercise kernels are covered in tests/test_exercises.py)."""
import pytest

from helpers import checks_cuda, checks_lint, checks_probe, kernels

HEAD = 'extern "C" __global__ void k(const float* x, float* out, int n) {\n'


def causes(body: str) -> list[str]:
    return [h.cause for h in checks_lint.lint(HEAD + body + "}\n", "k")]


@pytest.mark.parametrize("body", [
    # a mask named by a macro, by a constant, and one taken with __ballot_sync before the branch
    "#define FULL 0xffffffff\n float s = x[threadIdx.x];\n s += __shfl_down_sync(FULL, s, 1);\n out[0] = s;\n",
    "const unsigned int all = ~0u;\n float s = x[threadIdx.x];\n s += __shfl_xor_sync(all, s, 1);\n out[0] = s;\n",
    "int i = blockIdx.x * blockDim.x + threadIdx.x;\n unsigned m = __ballot_sync(0xffffffff, i < n);\n"
    " if (i < n) { float s = x[i];\n s += __shfl_down_sync(m, s, 1);\n out[i] = s; }\n",
    # a half-warp mask used only by the half that runs it
    "int lane = threadIdx.x % 32;\n float s = x[threadIdx.x];\n"
    " if (lane < 16) s += __shfl_down_sync(0x0000ffff, s, 8);\n out[threadIdx.x] = s;\n",
    # whole warps take the branch: threadIdx.x < 32 and a warp index
    "float s = x[threadIdx.x];\n if (threadIdx.x < 32) s += __shfl_down_sync(0xffffffff, s, 1);\n out[0] = s;\n",
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
    " p[threadIdx.x] = v;\n __syncwarp();\n v += p[threadIdx.x + 16];\n __syncwarp();\n p[threadIdx.x] = v; }\n",
])
def test_no_false_alarm_on_correct_code(body):
    assert causes(body) == []


@pytest.mark.parametrize("body, words", [
    ("float s = x[threadIdx.x];\n s += __shfl_down_sync(0xffff, s, 8);\n out[0] = s;\n", "leaves out lanes"),
    ("unsigned m = __activemask();\n float s = x[threadIdx.x];\n s += __shfl_down_sync(m, s, 1);\n out[0] = s;\n",
     "__activemask() used as a mask"),
    ("int lane = threadIdx.x & 31;\n if (x[lane] == 0.0f) return;\n __syncwarp();\n out[lane] = 1;\n",
     "after some lanes of the warp may have returned"),
    ("int i = blockIdx.x * blockDim.x + threadIdx.x;\n float s = 0;\n"
     " for (int k = i; k < n; k += 32) s += __shfl_down_sync(0xffffffff, x[k], 1);\n out[i] = s;\n",
     "inside code that only some lanes of the warp run"),
    ("__shared__ float p[64];\n p[threadIdx.x] = x[threadIdx.x];\n __syncthreads();\n"
     " for (int s = 32; s > 0; s >>= 1) if (threadIdx.x < s) p[threadIdx.x] += p[threadIdx.x + s];\n out[0] = p[0];\n",
     "no __syncwarp() or __syncthreads() between them"),
])
def test_hazards_are_named_with_their_line(body, words):
    found = checks_lint.lint(HEAD + body + "}\n", "k")
    assert any(words in h.cause for h in found), found
    assert all(h.line > 1 and h.text in (HEAD + body) and "Volta" in h.cause for h in found)


def test_a_helper_that_shuffles_counts_as_a_shuffle():
    code = ("__device__ float warp_sum(float s) {\n for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffff, s, o);\n"
            " return s;\n}\n" + HEAD + "int lane = threadIdx.x % 32;\n if (lane >= n) return;\n"
            " out[threadIdx.x] = warp_sum(x[threadIdx.x]);\n}\n")
    assert any("after some lanes" in h.cause and "warp_sum" in h.cause for h in checks_lint.lint(code, "k"))


def test_unreadable_source_gives_no_hazard():
    assert checks_lint.lint('extern "C" __global__ void k( {{{', "k") == []
    assert checks_lint.lint("", "k") == []


def test_comments_are_blanked_with_lines_kept():
    code = 'a // b\n/* c\nd */ "e // f" \'/\''
    assert checks_cuda.strip_comments(code) == 'a     \n    \n     "e // f" \'/\''


def test_a_probed_kernel_with_unusual_declarations_compiles_for_a_t4():
    code = ('#define B 256\nextern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ out,\n'
            '        float* total, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;  // shared comes later\n'
            '    if (i >= n) return;\n    __shared__ float a[B], b[2][B];\n    a[threadIdx.x] = x[i];\n'
            '    b[1][threadIdx.x] = a[threadIdx.x];\n    out[i] = b[1][threadIdx.x];\n    out[i] += 1.0f;\n'
            '    float* p = out + i;\n    *p = out[i] * 2;\n    atomicAdd(total, out[i]);\n}\n')
    probe = checks_probe.probed(code, "k", outputs=("out",), sums=("total",))
    assert probe.count("checker_probe::poison") == 2 and "checker_probe::Out out{checker_probe_out}" in probe
    assert ".entry k(" in kernels.nvrtc_compile(probe)


def test_no_probe_where_the_parameter_is_not_a_plain_float_pointer():
    code = 'extern "C" __global__ void k(const float* x, double* out, int n) { out[0] = x[0]; }'
    assert checks_probe.probed(code, "k", outputs=("out",)) is None
    assert checks_probe.probed(code, "other", outputs=()) is None
