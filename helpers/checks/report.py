"""What a checker reports, and the loop that runs its cases: one line per case, and for a wrong one the
input, what was expected against what came back, and the likely cause.

A case check raises ``Wrong`` to report a failure; ``Wrong(..., stop=True)`` also stops the run when
every later case would fail the same way (an unwritten stub, a hung or crashed GPU, a runaway loop).
"""
from __future__ import annotations

import inspect
import json
import os
from dataclasses import dataclass, field

import numpy as np

from helpers.core.arguments import fresh_seed   # the checks name their seed as verify does

LOG_VARIABLE = "PAGERANK_CHECK_LOG"   # a file each shown report's verdict is added to (helpers.course execute)
NOT_WRITTEN_YET = "not written yet: replace the TODO with your code"
CHANGED_INPUT = "your function modified its input"
GENERATOR = "a generator (the function contains `yield`)"


@dataclass
class Failure:
    """One wrong case of a report."""
    case: str       # which input (graph name, size, seed)
    detail: str     # which vertex, expected against got
    cause: str      # the likely cause


@dataclass
class Report:
    """What a checker found: the cases passed, those failed with their causes, notes and output."""
    exercise: str
    seed: int
    passed: list[str] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    stopped: bool = False     # stopped early: every later case would have failed the same way
    notes: list[str] = field(default_factory=list)
    printed: str = ""         # what the student's code printed, first characters only
    not_shown: int = 0        # how many more characters it printed

    @property
    def ok(self) -> bool:
        return bool(self.passed) and not self.failures

    def __bool__(self) -> bool:
        return self.ok

    def causes(self) -> list[str]:
        return [f.cause for f in self.failures]

    def __str__(self) -> str:
        total = len(self.passed) + len(self.failures)
        if self.ok:
            lines = [f"PASSED {self.exercise}: all {total} cases right (seed {self.seed})"]
        else:
            counted = ("stopped at the first error" if self.stopped
                       else f"{len(self.failures)} of {total} cases wrong")
            lines = [f"FAILED {self.exercise}: {counted} (seed {self.seed}; pass seed={self.seed} to repeat "
                     "these cases)"]
        lines += [f"  note: {note}" for note in self.notes]
        if self.printed or self.not_shown:
            lines.append("  your code printed:")
            lines += [f"    | {line}" for line in self.printed.rstrip("\n").split("\n")]
            if self.not_shown:
                lines.append(f"    ... ({self.not_shown:,} more characters not shown)")
        for f in self.failures:
            lines += [f"  ✗ {f.case}", f"      {f.detail}", f"      likely cause: {f.cause}"]
        lines += [f"  ✓ {case}" for case in self.passed]
        return "\n".join(lines)


class Wrong(Exception):
    """Raised inside a case check to report a failure; ``stop`` ends the run after this case."""

    def __init__(self, detail: str, cause: str, stop: bool = False):
        super().__init__(detail)
        self.detail, self.cause, self.stop = detail, cause, stop


@dataclass(frozen=True)
class Opaque:
    """Stands for a returned object that does not cross from the process that ran the student's code
    (a generator, a dict, a sparse matrix...): only its description does."""
    description: str


def random_ranks(rng, n: int) -> np.ndarray:
    """A random rank vector that sums to 1, no rank below about 0.05 / n."""
    ranks = rng.random(n) + 0.05
    return ranks / ranks.sum()


def worst_vertex(graph, expected, got, tol) -> tuple[np.ndarray, str]:
    """Mask of wrong vertices and a line naming the worst one."""
    err = np.abs(np.asarray(got, np.float64) - expected)
    bad = ~(err <= tol)
    if not bad.any():
        return bad, ""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        scaled = np.nan_to_num(err / np.maximum(tol, 1e-300), nan=np.inf)
    v = int(np.argmax(np.where(bad, scaled, -1)))
    return bad, (f"vertex {v} (in-degree {int(graph.in_degree[v])}, out-degree {int(graph.out_degree[v])}): "
                 f"expected {expected[v]:.9g}, got {got[v]:.9g}; {int(bad.sum()):,} of "
                 f"{graph.num_vertices:,} vertices wrong")


def largest_difference(expected, got) -> str:
    """'L1 distance 3.2e-10, largest at vertex 7: expected ..., got ...': a detail that never comes out
    empty."""
    expected, got = np.asarray(expected, np.float64), np.asarray(got, np.float64)
    err = np.nan_to_num(np.abs(got - expected), nan=np.inf)
    v = int(np.argmax(err)) if err.size else 0
    return (f"L1 distance {float(err.sum()):.3g} from the expected ranks, largest at vertex {v}: expected "
            f"{expected[v]:.15g}, got {got[v]:.15g}") if err.size else "no values"


def describe_value(value) -> str:
    """What a function returned, in a few words, for messages about a wrong return value."""
    if isinstance(value, Opaque):
        return value.description
    if value is None:
        return "None (is the return statement missing?)"
    if inspect.isgenerator(value):
        return GENERATOR
    if isinstance(value, np.ndarray):
        return f"a NumPy array of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, (tuple, list)):
        kinds = ", ".join(type(v).__name__ for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"a {type(value).__name__} of {len(value)} item{'s' * (len(value) != 1)} ({kinds})"
    if isinstance(value, (str, bytes)):
        return f"a {type(value).__name__} ({value[:40]!r})"
    if isinstance(value, (bool, int, float, complex, np.generic)):
        return f"a single {type(value).__name__} ({value!r})"
    return f"a {type(value).__module__}.{type(value).__name__}"


def changed(name: str, before: np.ndarray, after) -> str | None:
    """How an input array differs from its pristine copy ('name: 3 of 40 entries changed, e.g. [5]: 0 -> 1'),
    or None when it is unchanged."""
    if isinstance(after, Opaque):
        return f"{name} is now {after.description}"
    after = np.asarray(after)
    if after.shape != before.shape:
        return f"{name} now has shape {after.shape} instead of {before.shape}"
    differ = np.flatnonzero(~((after == before) | (np.isnan(after) & np.isnan(before))
                              if before.dtype.kind == "f" and after.dtype.kind == "f"
                              else after == before).ravel())
    if not differ.size:
        return None
    i = int(differ[0])
    return (f"{name}: {differ.size:,} of {before.size:,} entries changed, e.g. [{i}]: "
            f"{before.ravel()[i].item()!r} -> {after.ravel()[i].item()!r}")


def show(report: Report) -> None:
    """Print a report for the student; where $PAGERANK_CHECK_LOG names a file, add its verdict there too (one
    JSON line), so that a headless run of the notebook can count a failed check."""
    print(report)
    log = os.environ.get(LOG_VARIABLE)
    if log:
        with open(log, "a", encoding="utf-8") as file:
            file.write(json.dumps({"exercise": report.exercise, "ok": report.ok, "seed": report.seed}) + "\n")


def refused(exercise: str, seed: int, detail: str, cause: str, quiet: bool) -> Report:
    """The report when what was passed to the checker cannot be checked at all (not a function, not a
    source)."""
    report = Report(exercise, seed, failures=[Failure("what was passed to the checker", detail, cause)],
                    stopped=True)
    if not quiet:
        show(report)
    return report


OWN_PROCESS = False      # True in the child process a GPU checker runs in (``checks.gpu.own_context``)


def after_a_fault() -> str:
    """What a fault or a hung kernel leaves behind, where the checker ran."""
    if OWN_PROCESS:
        return "it ran in a process of the checker's own, now ended: your notebook's GPU is unharmed"
    return ("this process's GPU is now unusable: restart the runtime (on Colab: Runtime > Restart session) "
            "before running anything else on the GPU")


def gpu_fault(text: str) -> str:
    """The likely cause of a CUDA error raised by a student's kernel."""
    if "ILLEGAL_INSTRUCTION" in text or "illegal instruction" in text:
        what = ("an instruction the GPU refused, e.g. a full-mask shuffle or __syncwarp() that a lane named "
                "in the mask never reaches (it took the other branch, or returned early)")
    elif "ILLEGAL_ADDRESS" in text or "illegal memory access" in text or "MISALIGNED" in text:
        what = "a read or write outside the kernel's arrays (check every index against its bound first)"
    else:
        what = "a fault in the kernel"
    return f"the kernel crashed the GPU: {what}; {after_a_fault()}"


def run(exercise: str, seed: int, cases, check, quiet: bool, notes=(), output=None, review=None) -> Report:
    """Call check(case) for every (name, case) and collect passes and failures. ``check`` raises Wrong
    for a wrong answer; any other exception comes from the kernel's compilation or from the GPU, since
    the student's Python code runs apart (``checks.isolation``), whose errors come back as Wrong.
    ``review(report)``, when given, may sharpen the causes once every case is in (before printing)."""
    report = Report(exercise, seed, notes=list(notes))
    for name, case in cases:
        try:
            note = check(case)
            report.passed.append(name if not note else f"{name}: {note}")
            continue
        except Wrong as wrong:
            report.failures.append(Failure(name, wrong.detail, wrong.cause))
            if not wrong.stop:
                continue
        except Exception as error:                # a compile error or a GPU fault: report it, never crash
            text = f"raised {type(error).__name__}: {str(error).strip()[:600]}"
            if "CUDA" in type(error).__name__ or "cudaError" in str(error) or "CUDA_ERROR" in str(error):
                cause = gpu_fault(str(error))
            elif type(error).__name__ in ("CompileException", "CompileError") \
                    or "compile" in str(error).lower():
                cause = "the kernel does not compile"
            else:
                cause = ("the checker could not run this case (this is a bug in the checker: please report "
                         "it)")
            report.failures.append(Failure(name, text, cause))
        report.stopped = True
        break
    if output is not None:
        report.printed, report.not_shown = output.kept, output.dropped
    if review is not None:
        review(report)
    if not quiet:
        show(report)
    return report
