"""Exercises: student versions in step with their solutions and without outputs; every checker passes the
solution, fails the stub and fails typical wrong answers (mutants of the solution) with the right cause.
CPU checkers run everywhere; every exercise kernel (solution, stub, mutants) compiles for a T4 without a
GPU; the GPU checkers run in the GPU suite."""
import json

import pytest

from helpers import checks, exercises, kernels
from test_kernels import COMPILED

# exercise -> [(the wrong answer, text in the solution, what replaces it, words the likely cause must contain)]
MUTANTS = {
    "01_pagerank_step": [
        ("dangling mass dropped", "(damping * dangling_mass + 1.0 - damping) / n", "(1.0 - damping) / n",
         "dangling mass lost"),
        ("teleport not divided by n", "(damping * dangling_mass + 1.0 - damping) / n",
         "damping * dangling_mass / n + 1.0 - damping", "not summing to 1"),
        ("out-degree of the target", "weights=contrib[sources]",
         "weights=ranks[sources] / np.maximum(graph.out_degree[targets], 1)", "not summing to 1"),
    ],
    "02_transpose": [
        ("bincount without minlength", "np.bincount(out_targets, minlength=num_vertices)",
         "np.bincount(out_targets)", "row bounds"),
        ("no leading 0 in the offsets", "np.concatenate([[0], np.cumsum(np.bincount(out_targets, "
         "minlength=num_vertices))])", "np.cumsum(np.bincount(out_targets, minlength=num_vertices))", "row bounds"),
        ("unstable sort by target", 'np.argsort(out_targets, kind="stable")', "np.argsort(out_targets)",
         "wrong order"),
        ("targets instead of sources", "return in_offsets, sources[order]", "return in_offsets, out_targets[order]",
         "the edges' sources"),
    ],
    "03_power_iteration": [
        ("residual scaled by N", "change = np.abs(new - ranks).sum()", "change = np.abs(new - ranks).mean()",
         "scaled by N"),
        ("max-norm residual", "change = np.abs(new - ranks).sum()", "change = np.abs(new - ranks).max()",
         "max of the change"),
        ("dangling mass dropped", "(damping * ranks[graph.dangling].sum() + 1.0 - damping) / n",
         "(1.0 - damping) / n", "dangling mass lost"),
    ],
    "33_top_k": [
        ("reversed ascending sort", 'np.argsort(-np.asarray(ranks), kind="stable")',
         'np.argsort(np.asarray(ranks), kind="stable")[::-1]', "ties broken the wrong way"),
        ("argpartition, unordered", 'order = np.argsort(-np.asarray(ranks), kind="stable")\n    return order[:k]',
         "return np.argpartition(-np.asarray(ranks), min(k, len(ranks)) - 1)[:k]", "wrong"),
    ],
    "10_pull_grid_stride": [
        ("no grid-stride step", "v += blockDim.x * gridDim.x", "v += n", "never written"),
        ("off-by-one row bound", "k < in_offsets[v + 1]", "k <= in_offsets[v + 1]", "row bounds"),
        ("v <= n", "v < n;", "v <= n;", "past the end"),
    ],
    "11_push_rank": [
        ("missing atomicAdd", "atomicAdd(&pulled[out_targets[k]], share);", "pulled[out_targets[k]] += share;",
         "race"),
        ("off-by-one row bound", "k < out_offsets[u + 1]", "k <= out_offsets[u + 1]", "row bounds"),
    ],
    "12_contributions_split": [
        ("no dangling guard", "contrib[u] = degree > 0 ? rank[u] / degree : 0.0f;", "contrib[u] = rank[u] / degree;",
         "out-degree 0"),
        ("dangling contributions never written", "contrib[u] = degree > 0 ? rank[u] / degree : 0.0f;",
         "if (degree > 0) contrib[u] = rank[u] / degree;", "never written"),
        ("u > n", "if (u >= n) return;", "if (u > n) return;", "past the end"),
    ],
    "13_pull_warp_rank": [
        ("shuffle tree from offset 8", "int offset = 16;", "int offset = 8;", "not all combined"),
        ("lane stride 1", "k += 32", "k += 1", "not all combined"),
    ],
    "14_pull_list": [
        ("shuffle with the wrong width", "for (int offset = width / 2; offset > 0; offset /= 2) {\n"
         "        sum += __shfl_down_sync(0xffffffffu, sum, offset, width);",
         "for (int offset = 16; offset > 0; offset /= 2) {\n        sum += __shfl_down_sync(0xffffffffu, sum, offset);",
         "neighbouring group"),
        ("lane numbered within the warp", "int lane = threadIdx.x % width;", "int lane = threadIdx.x % 32;",
         "lane = threadIdx.x % width"),
        ("index instead of the listed vertex", "vertices[i] : -1", "i : -1", "wrong vertex"),
    ],
    "20_l1_change": [
        ("missing atomicAdd", "atomicAdd(total, partial[0]);", "*total += partial[0];", "race"),
        ("residual scaled by N", "atomicAdd(total, partial[0]);", "atomicAdd(total, partial[0] / n);", "scaled by N"),
        ("no absolute value", "fabsf(new_rank[i] - old_rank[i])", "(new_rank[i] - old_rank[i])", "fabsf"),
    ],
    "21_fused_update": [
        ("dangling mass dropped", "(d * dangling_mass + (1.0f - d)) / n", "(1.0f - d) / n", "dangling mass lost"),
        ("teleport not divided by n", "(d * dangling_mass + (1.0f - d)) / n", "d * dangling_mass / n + (1.0f - d)",
         "not summing to 1"),
        ("no dangling guard", "degree > 0 ? r / degree : 0.0f", "r / degree", "out-degree 0"),
    ],
}


# what a checker says about the untouched student version (an empty kernel, or a raise in Python)
STUB_CAUSES = {"11_push_rank": "nothing was added", "20_l1_change": "nothing was added"}


def exercise_cell(notebook: dict, mark: str) -> str:
    """The one code cell holding the exercise: the solution region's cell, or the student's TODO cell."""
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code" and mark in "".join(c["source"])]
    assert len(cells) == 1, f"one code cell holds the exercise ({mark})"
    return "".join(cells[0]["source"])


def load(slug: str):
    """(solution cell, student cell, checker name, needs a GPU) of an exercise."""
    solution = json.loads((exercises.EXERCISES / f"{slug}_solution.ipynb").read_text())
    student = json.loads((exercises.EXERCISES / f"{slug}.ipynb").read_text())
    meta = solution["metadata"]["course"]
    return (exercise_cell(solution, "BEGIN SOLUTION"), exercise_cell(student, "TODO"), meta["exercise"]["checker"],
            meta["needs_gpu"])


def defined(cell: str):
    """What an exercise cell defines: the kernel source, or the one function written in it."""
    namespace = {}
    exec(compile(cell, "<exercise>", "exec"), namespace)
    if "KERNEL" in namespace:
        return namespace["KERNEL"]
    functions = [v for v in namespace.values()
                 if callable(v) and getattr(getattr(v, "__code__", None), "co_filename", "") == "<exercise>"]
    assert len(functions) == 1
    return functions[0]


def mutant(cell: str, old: str, new: str) -> str:
    assert old in cell, f"the mutation no longer applies: {old!r} is not in the solution"
    return cell.replace(old, new)


def cases(gpu: bool):
    """(exercise, checker, cell, expected cause or None for the solution, which version) for every check."""
    found = []
    for slug, wrongs in MUTANTS.items():
        solution, student, checker, needs_gpu = load(slug)
        if needs_gpu != gpu:
            continue
        found.append(pytest.param(slug, checker, solution, None, "solution", id=f"{slug}-solution"))
        stub_cause = STUB_CAUSES.get(slug, "never written") if gpu else checks.NOT_WRITTEN_YET
        found.append(pytest.param(slug, checker, student, stub_cause, "student stub", id=f"{slug}-student stub"))
        for what, old, new, cause in wrongs:
            found.append(pytest.param(slug, checker, mutant(solution, old, new), cause, what, id=f"{slug}-{what}"))
    return found


# --- generated student versions ---------------------------------------------------------------------

def test_student_versions_are_in_step_with_their_solutions():
    assert exercises.out_of_step() == []


def test_every_planned_exercise_has_a_solution_and_mutants():
    slugs = {p.name[: -len(exercises.SUFFIX)] for p in exercises.solutions()}
    assert slugs == set(MUTANTS)
    assert {s[:2] for s in slugs} == {"01", "02", "03", "10", "11", "12", "13", "14", "20", "21", "33"}
    assert all(len(wrongs) >= 2 for wrongs in MUTANTS.values())


def test_student_versions_carry_no_outputs_and_no_solution():
    for solution in exercises.solutions():
        student = json.loads(exercises.student_path(solution).read_text())
        code = [c for c in student["cells"] if c["cell_type"] == "code"]
        assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)
        text = "".join("".join(c["source"]) for c in student["cells"])
        assert "BEGIN SOLUTION" not in text and "This is the solution notebook" not in text
        assert "TODO" in text


def test_stub_replaces_regions_with_hints():
    source = "def f(x):\n    # BEGIN SOLUTION hint: double it\n    return 2 * x\n    # END SOLUTION\n"
    assert exercises.stub(source) == "def f(x):\n    # TODO: double it\n    raise NotImplementedError('double it')\n"
    cuda = "__global__ void k() {\n    // BEGIN SOLUTION hint: nothing\n    int a = 1;\n    // END SOLUTION\n}"
    assert exercises.stub(cuda) == "__global__ void k() {\n    // TODO: nothing\n}"
    with pytest.raises(ValueError, match="never closed"):
        exercises.stub("# BEGIN SOLUTION\nx = 1\n")
    with pytest.raises(ValueError, match="without BEGIN"):
        exercises.stub("x = 1\n# END SOLUTION\n")


def test_an_edited_solution_puts_its_student_version_out_of_step(tmp_path, monkeypatch):
    for solution in exercises.solutions()[:1]:
        copy = tmp_path / solution.name
        notebook = json.loads(solution.read_text())
        copy.write_text(json.dumps(notebook))
        exercises.student_path(copy).write_text(exercises.dumps(exercises.student_notebook(notebook)))
        monkeypatch.setattr(exercises, "EXERCISES", tmp_path)
        assert exercises.out_of_step() == []
        notebook["cells"][0]["source"] = ["# changed\n"]
        copy.write_text(json.dumps(notebook))
        assert "out of step" in " ".join(exercises.out_of_step())


# --- checkers, both ways ----------------------------------------------------------------------------

def run_checker(checker, cell):
    return getattr(checks, checker)(defined(cell), quiet=True)


@pytest.mark.parametrize("slug, checker, cell, cause, what", cases(gpu=False))
def test_cpu_checker(slug, checker, cell, cause, what):
    report = run_checker(checker, cell)
    if cause is None:
        assert report.ok, str(report)
        assert len(report.passed) >= 8
    else:
        assert not report.ok, f"{slug}: the checker passed a wrong answer\n{report}"
        assert any(cause in c for c in report.causes()), str(report)
        first = report.failures[0]
        assert first.case and first.detail


@pytest.mark.parametrize("slug, checker, cell, cause, what", cases(gpu=True))
def test_gpu_exercise_kernel_compiles_for_a_t4(slug, checker, cell, cause, what):
    code = defined(cell)
    ptx = kernels.nvrtc_compile(code, name=f"{slug}.cu")
    assert f".entry {checker}(" in ptx
    COMPILED.append(f"exercise {slug} ({what})")


@pytest.mark.gpu
@pytest.mark.parametrize("slug, checker, cell, cause, what", cases(gpu=True))
def test_gpu_checker(slug, checker, cell, cause, what):
    report = run_checker(checker, cell)
    if cause is None:
        assert report.ok, str(report)
    else:
        assert not report.ok, f"{slug}: the checker passed a wrong answer\n{report}"
        assert any(cause in c for c in report.causes()), str(report)


def test_a_checker_reports_an_error_instead_of_raising():
    def broken(graph, ranks, damping):
        return ranks[graph.num_vertices + 5]
    report = checks.pagerank_step(broken, quiet=True)
    assert not report.ok and "IndexError" in report.failures[0].detail
    assert "FAILED pagerank_step" in str(report) and f"seed={report.seed}" in str(report)


def test_a_seed_repeats_the_same_cases():
    def solution(graph, ranks, damping):
        return defined(load("01_pagerank_step")[0])(graph, ranks, damping)
    assert checks.pagerank_step(solution, seed=7, quiet=True).passed == \
        checks.pagerank_step(solution, seed=7, quiet=True).passed


def test_a_gpu_checker_without_a_gpu_says_what_to_do():
    from helpers import gpu
    if gpu.gpu_status().available:
        pytest.skip("this machine has a GPU: the GPU checkers run instead")
    with pytest.raises(gpu.NoGPUError, match="needs a CUDA GPU"):
        checks.pull_grid_stride(defined(load("10_pull_grid_stride")[0]), quiet=True)
