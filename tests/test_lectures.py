"""The lectures as a reader meets them: committed outputs clean, launch patterns shown inline equal to the
helpers' code, closing prompts and exercise links, the reports named consistently; and, on a GPU, that a
wrong edit to an inline kernel makes the lecture's own verification fail (the kernel shown is the one run)."""
import inspect
import json
import re
import textwrap

import pytest

from helpers import course, kernels
from helpers.course.tools import students as exercises

LECTURES = course.lecture_notebooks()
NOTEBOOKS = LECTURES + sorted((course.NOTEBOOKS / "exercises").glob("*.ipynb"))
MACHINE_PATH = re.compile(r"(?<![\w.])(/work/|/home/|/root/|/tmp/|/content/|/opt/|/usr/lib|site-packages|[A-Z]:\\)")
WARNING = re.compile(r"\b\w*Warning\b|IOStream\.flush timed out|Traceback \(most recent call last\)")
SHOWN = re.compile(r"r'''\n?(//.*?)'''", re.DOTALL)   # a kernel source shown in a cell
SAME_AS = re.compile(r"^# same as helpers\.([\w.]+)\.(\w+)", re.MULTILINE)
REPORTS = ("six-versions report", "scalar/vector report", "Palakkad report", "Thrust report")


def cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def output_texts(cell):
    for output in cell.get("outputs", []):
        if output["output_type"] == "stream":
            yield output["name"], "".join(output["text"])
        elif output["output_type"] in ("execute_result", "display_data"):
            for mime, data in output.get("data", {}).items():
                if mime.startswith("text/"):
                    yield mime, "".join(data)
        elif output["output_type"] == "error":
            yield "error", f"{output['ename']}: {output['evalue']}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_outputs_carry_no_machine_paths_warnings_escapes_or_stale_bars(path):
    for index, cell in enumerate(cells(path)):
        for kind, text in output_texts(cell):
            where = f"{path.name}, cell {index} ({kind})"
            assert kind != "error", f"{where}: a committed error: {text[:200]}"
            assert "\x1b[" not in text, f"{where}: ANSI escape sequences"
            found = MACHINE_PATH.search(text)
            assert not found, f"{where}: a path of the machine that ran it: ...{text[max(0, found.start() - 40):found.end() + 40]}..."
            found = WARNING.search(text)
            assert not found, f"{where}: a warning in the output: ...{text[max(0, found.start() - 60):found.end() + 60]}..."
            for bar in re.findall(r"(\d+)%\|[^\r\n]*\|", text.split("\r")[-1]):   # the bar as it was left
                assert bar == "100", f"{where}: a progress bar left at {bar}%"


def test_launch_patterns_shown_in_lectures_are_the_helpers_own_code():
    found = 0
    for path in LECTURES:
        for cell in cells(path):
            source = "".join(cell["source"])
            for module, name in SAME_AS.findall(source):
                helper = getattr(__import__(f"helpers.{module}", fromlist=[name]), name)
                expected = textwrap.dedent(inspect.getsource(helper)).strip()
                assert expected in source, (f"{path.name}: the cell says it shows helpers.{module}.{name}, "
                                            "but its code differs from the helper's: copy it again")
                found += 1
    assert found >= 3, "lectures 14, 21 and 40 show the binned launch, the graph capture and the 16-bit launch"


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.name)
def test_every_lecture_ends_with_prompts_and_its_exercise(path):
    markdown = [c for c in cells(path) if c["cell_type"] == "markdown"]
    closing = "".join(markdown[-1]["source"]) if markdown else ""
    assert re.search(r"^#+ Try this", closing, re.MULTILINE), f"{path.name}: the last cell is not a 'Try this' cell"
    prompts = re.findall(r"^\s*(?:\d+\.|[-*]) ", closing.split("Try this", 1)[1], re.MULTILINE)
    assert 2 <= len(prompts) <= 4, f"{path.name}: {len(prompts)} prompts, not 2 to 4"
    for solution in exercises.solutions():
        meta = json.loads(solution.read_text(encoding="utf-8"))["metadata"]["course"]["exercise"]
        if meta["lecture"] == path.name[:2]:
            student = exercises.student_path(solution).name
            assert f"exercises/{student}" in closing, f"{path.name}: no link to its exercise {student}"


# checks that depend on a timing: a verdict's word or a median asserted, or a claim on measured growth
VERDICT_CHECKED = re.compile(r"^\s*assert\b.*(\.word\b|median_ms|verdict)", re.MULTILINE)
TIMING_CHECKED = {"03_cpu_baselines.ipynb",        # growth exponent, rate change and share, all measured
                  "50_beyond_one_gpu.ipynb",       # a verdict on two timings (with two GPUs)
                  "31_beat_the_library.ipynb", "31_beat_the_library_solution.ipynb"}   # the race


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_notebook_whose_checks_depend_on_timings_declares_it_so_the_tests_run_it_alone(path):
    """course.times marks a notebook whose checks (asserts, an exercise's verdict) depend on timings: the
    tests run its cells with nothing else on the machine (conftest.py). The others print timings but check
    none; the tests run them beside other tests."""
    code = "".join("".join(c["source"]) for c in cells(path) if c["cell_type"] == "code")
    if path.name in TIMING_CHECKED or VERDICT_CHECKED.search(code):
        assert course.times(path), f"{path.name}: a check depends on timings: set course.times to true"


def test_the_reports_are_introduced_and_named_consistently():
    readme = (course.ROOT / "README.md").read_text(encoding="utf-8")
    setup = "".join("".join(c["source"]) for c in cells(course.NOTEBOOKS / "00_setup.ipynb"))
    for name in REPORTS:
        assert name in readme and name in setup, f"README and lecture 00 introduce the {name}"
    for path in NOTEBOOKS:
        text = "".join("".join(c["source"]) for c in cells(path))
        assert not re.search(r"\bseeds? 00\d\b", text), f"{path.name} still says 'seed 00x'"


# --- on a GPU: the kernel shown is the kernel verified ----------------------------------------------

MUTATIONS = [   # (lecture, kernel file, correct text, wrong text)
    ("10_first_gpu_kernel.ipynb", "pull_thread", "k < in_offsets[v + 1]", "k <= in_offsets[v + 1]"),
    ("12_contributions_and_layout.ipynb", "pull_contrib", "k < in_offsets[v + 1]", "k <= in_offsets[v + 1]"),
    ("13_warps_and_shared_memory.ipynb", "pull_warp", "offset = 16", "offset = 8"),
    ("21_fusion_and_graphs.ipynb", "fused", "dangling += degree == 0 ? r : 0.0f;", ""),
]


@pytest.mark.gpu
@pytest.mark.parametrize("lecture, name, good, bad", MUTATIONS, ids=[m[0][:2] for m in MUTATIONS])
def test_a_wrong_edit_to_an_inline_kernel_fails_its_own_lecture(lecture, name, good, bad, tmp_path):
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    assert good in kernels.canonical(name)
    notebook = nbformat.read(course.NOTEBOOKS / lecture, as_version=4)
    edited = 0
    canonical = kernels.canonical(name)
    for cell in notebook.cells:                # the whole file in one cell, or the part that holds `good`
        shown = SHOWN.findall(cell.source) if cell.cell_type == "code" else []
        if any(good in text and text.strip() in canonical for text in shown):
            cell.source = cell.source.replace(good, bad)
            edited += 1
    assert edited, f"{lecture} shows no inline copy of {name}.cu"
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(course.NOTEBOOKS)}})
    with pytest.raises(CellExecutionError) as failure:
        client.execute()
    assert re.search(r"VerificationError|AssertionError", str(failure.value)), str(failure.value)[-2000:]
