"""A probed copy of a student's kernel: the same source, rewritten so that one extra launch shows what
values cannot show.

- An output parameter (``float* pulled``) becomes a small wrapper whose stores also record, per element,
  the lowest and the highest id of the threads that stored it (two arrays after the output, at
  ``SPAN`` and ``2 * SPAN`` elements): an element stored by two threads means redundant work or
  several lanes storing one result.
- An accumulator parameter (``float* total``) becomes a wrapper whose ``atomicAdd`` also counts itself
  (at ``SPAN`` elements after it): one atomicAdd per block, or one per element.
- An input parameter (``const int* out_degree``) becomes a wrapper whose reads through ``[]`` check the
  index against the array's length (in ``READ_SLOTS`` words just before the array) and count the reads
  outside it, with the lowest such index and thread: ``out_degree[u]`` read before ``u < n`` is checked
  shows there, although the checker's padding makes the read harmless in the launches it compares.
- Every ``__shared__`` array declared at the top level of the kernel is declared first and filled with
  NaN (a ``__syncthreads()`` follows), so a slot read before it is written shows as NaN.

The launch that uses it is separate from the launches whose values are checked; when a kernel is
written in a way the rewriting does not cover (it then does not compile), the checker skips it.
"""
from __future__ import annotations

import re

from helpers.checks.cuda import strip_comments

SPAN = 1 << 18              # elements between an output and its first probe array; outputs must be shorter
UNSET = 0xFFFFFFFF          # the lowest-writer array starts at this value: no thread stored the element
POISON = 0x7FF80000         # written to every 32-bit word of shared memory: NaN as float and as double
READ_SLOTS = 4              # words before a probed input: length, bad reads, lowest bad index and thread
INPUT_TYPES = r"(?:unsigned\s+int|unsigned|int|float)"    # 4-byte values: one word per element

PRELUDE = r"""
namespace checker_probe {
constexpr unsigned int SPAN = %(span)du;
__device__ __forceinline__ unsigned int thread_id() { return blockIdx.x * blockDim.x + threadIdx.x; }
struct Ref {
    float* p;
    __device__ void seen() const {
        unsigned int* lowest = reinterpret_cast<unsigned int*>(p + SPAN);
        atomicMin(lowest, thread_id());
        atomicMax(lowest + SPAN, thread_id());
    }
    __device__ Ref& operator=(float x) { seen(); *p = x; return *this; }
    __device__ Ref& operator=(const Ref& other) { float x = *other.p; seen(); *p = x; return *this; }
    __device__ Ref& operator+=(float x) { seen(); *p += x; return *this; }
    __device__ Ref& operator-=(float x) { seen(); *p -= x; return *this; }
    __device__ Ref& operator*=(float x) { seen(); *p *= x; return *this; }
    __device__ Ref& operator/=(float x) { seen(); *p /= x; return *this; }
    __device__ operator float() const { return *p; }
    __device__ float* operator&() const { return p; }
};
struct Out {
    float* raw;
    template <typename I> __device__ Ref operator[](I i) const { return Ref{raw + i}; }
    __device__ Ref operator*() const { return Ref{raw}; }
    __device__ operator float*() const { return raw; }
};
struct Sum {
    float* raw;
    template <typename I> __device__ float& operator[](I i) const { return raw[i]; }
    __device__ float& operator*() const { return *raw; }
    __device__ operator float*() const { return raw; }
};
__device__ float atomicAdd(Sum total, float x) {
    ::atomicAdd(reinterpret_cast<unsigned int*>(total.raw + SPAN), 1u);
    return ::atomicAdd(total.raw, x);
}
template <typename T> struct In {
    const T* raw;
    __device__ void check(long long i) const {
        unsigned int* slot = reinterpret_cast<unsigned int*>(const_cast<T*>(raw)) - %(slots)d;
        if (i < 0 || i >= (long long)slot[0]) {
            ::atomicAdd(slot + 1, 1u);
            ::atomicMin(slot + 2, (unsigned int)i);
            ::atomicMin(slot + 3, thread_id());
        }
    }
    template <typename I> __device__ const T& operator[](I i) const { check((long long)i); return raw[i]; }
    __device__ const T& operator*() const { check(0); return *raw; }
    __device__ operator const T*() const { return raw; }
};
__device__ __forceinline__ void poison(void* where, unsigned int bytes) {
    unsigned int* words = static_cast<unsigned int*>(where);
    for (unsigned int i = threadIdx.x; i < bytes / 4; i += blockDim.x) words[i] = %(poison)du;
}
}  // namespace checker_probe
""" % {"span": SPAN, "poison": POISON, "slots": READ_SLOTS}


def _kernel_span(clean: str, function: str) -> tuple[int, int, int, int] | None:
    """(start, end) of the parameter list's inside and (open, close) of the body of the kernel."""
    found = re.search(rf'extern\s+"C"\s+__global__\s+void\s+{function}\s*\(', clean)
    if not found:
        return None
    depth, i = 0, found.end() - 1
    for i in range(found.end() - 1, len(clean)):
        depth += {"(": 1, ")": -1}.get(clean[i], 0)
        if depth == 0:
            break
    params_end = i
    body = clean.find("{", params_end)
    if body < 0 or clean[params_end + 1:body].strip():
        return None
    depth = 0
    for j in range(body, len(clean)):
        depth += {"{": 1, "}": -1}.get(clean[j], 0)
        if depth == 0:
            return found.end(), params_end, body, j
    return None


def _top_level_shared(clean: str, body: int, close: int) -> list[tuple[int, int, list[str]]]:
    """(start, end, names) of each __shared__ array declaration at the top level of the body."""
    found, depth, start = [], 0, body + 1
    for i in range(body + 1, close):
        c = clean[i]
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
            if depth == 0 and c == "}":
                start = i + 1
        elif c == ";" and depth == 0:
            statement = clean[start:i]
            if re.search(r"\b__shared__\b", statement) and not re.search(r"\bextern\b", statement):
                names = re.findall(r"(\w+)\s*(?:\[[^\[\];]*\]\s*)+(?=,|$)", statement.strip())
                if names and "=" not in statement:
                    found.append((start, i + 1, names))
            start = i + 1
    return found


def probed(code: str, function: str, outputs: tuple[str, ...] = (), sums: tuple[str, ...] = (),
           inputs: tuple[str, ...] = ()) -> str | None:
    """The probed source (see the module's docstring), or None when the kernel's parameters or body are
    not found as expected. ``outputs`` and ``sums`` name float* parameters, ``inputs`` const pointers to
    4-byte values (int, float, unsigned)."""
    clean = strip_comments(code)
    span = _kernel_span(clean, function)
    if span is None:
        return None
    params_start, params_end, body, close = span
    params = clean[params_start:params_end]
    renamed = code[params_start:params_end]
    setup = []
    for name, wrapper in [(n, "Out") for n in outputs] + [(n, "Sum") for n in sums]:
        pattern = rf"\bfloat\s*\*\s*((?:__restrict__|const)\s+)*({name})\s*(?=,|$)"
        declared = list(re.finditer(pattern, params))
        if len(declared) != 1:
            return None
        at = declared[0].start(2)
        renamed = renamed[:at] + f"checker_probe_{name}" + renamed[at + len(name):]
        params = params[:at] + f"checker_probe_{name}" + params[at + len(name):]
        setup.append(f"checker_probe::{wrapper} {name}{{checker_probe_{name}}};")
    for name in inputs:
        pattern = (rf"(?:\bconst\s+(?P<type>{INPUT_TYPES})|\b(?P<after>{INPUT_TYPES})\s+const)"
                   rf"\s*\*\s*((?:__restrict__|const)\s+)*(?P<name>{name})\s*(?=,|$)")
        declared = list(re.finditer(pattern, params))
        if len(declared) != 1:
            return None
        at = declared[0].start("name")
        kind = " ".join((declared[0].group("type") or declared[0].group("after")).split())
        renamed = renamed[:at] + f"checker_probe_{name}" + renamed[at + len(name):]
        params = params[:at] + f"checker_probe_{name}" + params[at + len(name):]
        setup.append(f"checker_probe::In<{kind}> {name}{{checker_probe_{name}}};")
    shift = len(renamed) - (params_end - params_start)
    shared = [(start + shift, end + shift, names)
              for start, end, names in _top_level_shared(clean, body, close)]
    text, body = code[:params_start] + renamed + code[params_end:], body + shift
    hoisted, poison = [], []
    for start, end, names in reversed(shared):
        hoisted.insert(0, text[start:end].strip())
        text = text[:start] + " " * (end - start) + text[end:]
        poison += [f"checker_probe::poison((void*)&{n}, sizeof({n}));" for n in names]
    if hoisted:
        setup = hoisted + poison + ["__syncthreads();"] + setup
    text = text[:body + 1] + "\n    " + "\n    ".join(setup) + "\n" + text[body + 1:]
    return PRELUDE + text
