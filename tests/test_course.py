"""The course's runtime and its tooling: badges and first cells in step with REPOSITORY and BRANCH, Colab's
GPU request, the README (short, its quick start first, its links resolving), the course's command and its
help, the shared help formatter, and one skipped-test line per reason."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import pytest


def with_root_on_path() -> str:
    """$PYTHONPATH with the checkout first (what is already there, e.g. a GPU machine's extra wheels, kept)."""
    return os.pathsep.join(filter(None, [str(course.ROOT), os.environ.get("PYTHONPATH")]))

from conftest import gpu_skip_reason
from helpers.core import cli
from helpers import course
from helpers.course.tools import execute, students, sync
from helpers.data import settings

README = (course.ROOT / "README.md").read_text(encoding="utf-8")
COLAB_LINK = re.compile(r"https://colab\.research\.google\.com/github/([^/]+/[^/]+)/blob/([^/]+)/([^)\s]+)")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_badge_points_at_an_existing_notebook_of_this_repository():
    links = COLAB_LINK.findall(README)
    assert links, "the README has no Open-in-Colab badges"
    for repository, branch, path in links:
        assert repository == course.REPOSITORY and branch == course.BRANCH
        assert (course.ROOT / path).is_file(), f"badge points at a missing notebook: {path}"


def test_every_lecture_has_a_badge_and_the_tables_are_in_step():
    linked = {path for _, _, path in COLAB_LINK.findall(README)}
    for notebook in course.lecture_notebooks():
        assert notebook.relative_to(course.ROOT).as_posix() in linked
    assert sync.lecture_table() in README and sync.exercise_table() in README, "run: helpers.course sync"
    assert sync.synced_readme(README) == README, "run: python -m helpers.course sync"


def test_the_readme_keeps_a_place_for_the_kernel_table():
    start, end = sync.markers("kernels")
    assert README.index(start) < README.index(end)
    assert README.split(start, 1)[1].split(end, 1)[0].strip() == sync.kernel_table().strip()
    without = README.replace(end, "")
    with pytest.raises(ValueError, match="lacks the markers"):
        sync.synced_readme(without)


def test_every_notebook_starts_with_the_current_setup_cell():
    assert f"REPOSITORY, BRANCH = {course.REPOSITORY!r}, {course.BRANCH!r}" in sync.setup_cell_source()
    for notebook in course.lecture_notebooks() + course.exercise_notebooks():
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        cells = [c for c in cells if c["cell_type"] == "code"]
        assert "".join(cells[0]["source"]) == sync.setup_cell_source(), f"{notebook.name}: run sync"


def test_the_first_cell_is_short_enough_to_read():
    lines = sync.setup_cell_source().splitlines()
    assert len(lines) <= 10, f"the first cell has {len(lines)} lines"
    assert max(map(len, lines)) < 100, max(lines, key=len)
    assert sync.is_setup_cell(sync.setup_cell_source()) and not sync.is_setup_cell("import helpers")
    compile(sync.setup_cell_source(), "the first cell", "exec")


def test_only_the_notebooks_that_need_a_gpu_ask_colab_for_one():
    notebooks = course.lecture_notebooks() + course.exercise_notebooks()
    assert len(notebooks) >= 30 and {course.needs_gpu(p) for p in notebooks} == {True, False}
    for notebook in notebooks:
        metadata = json.loads(notebook.read_text(encoding="utf-8"))["metadata"]
        asks = (metadata.get("accelerator"), metadata.get("colab", {}).get("gpuType"))
        wanted = ("GPU", "T4") if metadata["course"]["needs_gpu"] else (None, None)
        assert asks == wanted, f"{notebook.relative_to(course.ROOT)}: {asks}"
        assert metadata == sync.colab_metadata(metadata), f"{notebook.name}: run helpers.course sync"


def test_sync_writes_the_colab_metadata_from_needs_gpu():
    cpu = sync.colab_metadata({"accelerator": "GPU", "colab": {"gpuType": "T4", "provenance": []},
                               "course": {"needs_gpu": False}})
    assert cpu == {"course": {"needs_gpu": False}}
    gpu = sync.colab_metadata({"colab": {"provenance": []}, "course": {"needs_gpu": True}})
    assert gpu == {"colab": {"provenance": [], "gpuType": "T4"}, "course": {"needs_gpu": True},
                   "accelerator": "GPU"}
    assert sync.colab_metadata(gpu) == gpu and sync.colab_metadata(cpu) == cpu


def test_sync_is_idempotent_and_touches_only_the_setup_cell_and_the_metadata(tmp_path):
    source = course.lecture_notebooks()[0]
    notebook = json.loads(source.read_text(encoding="utf-8"))
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    # an earlier form of the cell, as the notebooks had it before this one: sync still finds and replaces it
    old_marker = "# Course setup (written by `python -m helpers.course sync`; edit helpers/course.py)\n"
    code[0]["source"] = [old_marker, "print('an old setup cell')"]
    notebook["metadata"]["accelerator"] = "GPU"
    stale = tmp_path / source.name
    stale.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert sync.sync_notebook(stale) is True
    assert json.loads(stale.read_text(encoding="utf-8")) == json.loads(source.read_text(encoding="utf-8"))
    assert sync.sync_notebook(stale) is False
    assert [p.name for p in tmp_path.iterdir()] == [source.name], "a temporary file was left behind"
    code[0]["source"] = ["print('not a setup cell')"]
    stale.write_text(json.dumps(notebook))
    before = stale.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="not the course setup cell"):
        sync.sync_notebook(stale)
    assert stale.read_text(encoding="utf-8") == before


def test_everything_is_in_step_and_check_says_so():
    assert sync.out_of_step() == []
    result = run_course("check", cwd=course.ROOT)
    assert result.returncode == 0 and "everything is in step" in result.stdout, result.stdout + result.stderr


def test_check_names_a_student_version_out_of_step(tmp_path, monkeypatch):
    solution = students.solutions()[0]
    copy = tmp_path / solution.name
    notebook = json.loads(solution.read_text(encoding="utf-8"))
    copy.write_text(json.dumps(notebook))
    students.student_path(copy).write_text(students.dumps(students.student_notebook(notebook)),
                                           encoding="utf-8")
    monkeypatch.setattr(students, "EXERCISES", tmp_path)
    assert students.out_of_step() == []
    notebook["cells"][0]["source"] = ["# changed\n"]
    copy.write_text(json.dumps(notebook))
    assert students.out_of_step() == [f"{students.student_path(copy).name}: out of step with {copy.name} "
                                      "(run python -m helpers.course sync)"]


# --- the README -----------------------------------------------------------------------------------------

def readme_block(marker: str) -> str:
    """The code block that follows a marker comment in the README."""
    assert f"<!-- {marker}" in README, f"the README has no '<!-- {marker}' marker"
    return README.split(f"<!-- {marker}", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0].strip()


def reading_words(markdown: str) -> list[str]:
    """The words a reader reads: no HTML comments, link targets or image addresses, no table rules."""
    text = re.sub(r"<!--.*?-->", " ", markdown, flags=re.S)
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return [word for word in text.split() if re.search(r"\w", word)]


def test_the_readme_is_short_and_starts_with_the_quick_start():
    words = reading_words(README)
    assert len(words) <= 1200, f"the README has {len(words)} words"
    lines = README.splitlines()
    assert lines.index("## Quick start") < 12, "the quick start is not on the first screen"
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    for words in ("lecture 00 in Colab", "<!-- course command", "<!-- test command"):
        assert words in quick
    assert README.index("## Quick start") < README.index("## Lectures") < README.index("## Exercises")


def test_the_readme_links_into_docs_and_every_relative_link_resolves():
    pages = sorted((course.ROOT / "docs").glob("*.md"))
    assert {p.name for p in pages} >= {"reports.md", "testing.md", "bench.md", "conventions.md"}
    for page in pages:
        assert f"](docs/{page.name})" in README, f"the README does not link docs/{page.name}"
    for document in [course.ROOT / "README.md", *pages]:
        for target in MARKDOWN_LINK.findall(document.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (document.parent / target.split("#", 1)[0]).resolve()
            assert path.exists(), f"{document.name} links to {target}, which does not exist"


def test_the_readme_test_command_is_what_ci_runs():
    ci = (course.ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "test command" in ci and "floors.txt" in ci
    block = readme_block("test command")
    assert block.endswith("python -m pytest") and 'pip install -e ".[dev]"' in block


@pytest.mark.parametrize("marker", ["test command", "course command"])
def test_the_readme_commands_upgrade_pip_before_installing_the_course(marker):
    """A venv's own pip may be old: pip 23 backtracks for many minutes through old releases on a Python the
    course does not support, where a current pip refuses it at once, naming requires-python."""
    steps = readme_block(marker).split(" && ")
    upgrade = steps.index("pip install -q -U pip")
    assert upgrade < next(i for i, step in enumerate(steps) if step.startswith("pip install -e"))


# --- imports --------------------------------------------------------------------------------------------

def test_helpers_import_without_cupy():
    code = ("import sys; sys.modules['cupy'] = None\n"
            "import helpers, helpers.core.graph, helpers.core.generators, helpers.core.reference, helpers.measure.gpu\n"
            "import helpers.course\n"
            "from helpers.measure import gpu\n"
            "status = gpu.gpu_status(); assert not status.available, status\n"
            "assert 'CuPy is not installed' in status.description and 'T4 GPU' in status.description\n"
            "try:\n    gpu.require_gpu()\nexcept gpu.NoGPUError as e:\n    print('refused:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=course.ROOT)
    assert out.returncode == 0, out.stderr
    assert "refused: This needs a CUDA GPU" in out.stdout


def test_the_runtime_imports_no_tooling_and_no_cupy():
    code = ("import sys, helpers.course, helpers.data.datasets\n"
            "print(sorted(m for m in sys.modules if m.startswith(('helpers.course.', 'nbclient', 'nbformat',"
            " 'cupy', 'traitlets'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=course.ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", "a lecture's import of helpers.course pulls in: " + out.stdout
    code = ("import sys, helpers, helpers.course.tools.sync, helpers.course.tools.execute, helpers.course.__main__, "
            "helpers.checks; print('cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=course.ROOT)
    assert out.stdout.strip() == "False", out.stderr


def test_data_dir_follows_the_one_setting(tmp_path, monkeypatch):
    monkeypatch.setenv(settings.DATA_DIR_VARIABLE, str(tmp_path / "elsewhere"))
    assert settings.data_dir() == tmp_path / "elsewhere" and (tmp_path / "elsewhere").is_dir()


# --- the course's command -------------------------------------------------------------------------------

def notebook(path, *cells, needs_gpu=False):
    """A small notebook on disk: the given code cells, Colab-free."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata.update(kernelspec={"name": "python3", "display_name": "Python 3", "language": "python"},
                       course={"needs_gpu": needs_gpu})
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def run_course(*args, cwd):
    return subprocess.run([sys.executable, "-m", "helpers.course", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=dict(os.environ, PYTHONPATH=with_root_on_path()), timeout=600)


def test_execute_writes_to_a_folder_and_leaves_the_notebooks_as_they_are(tmp_path):
    first = notebook(tmp_path / "nb" / "first.ipynb", "import os\nprint(os.getcwd())")
    second = notebook(tmp_path / "nb" / "second.ipynb", "print(6 * 7)")
    gpu_only = notebook(tmp_path / "nb" / "gpu.ipynb", "raise SystemExit('must not run')", needs_gpu=True)
    before = {p: p.read_bytes() for p in (first, second, gpu_only)}
    result = run_course("execute", first, "--cpu-only", second, gpu_only, cwd=tmp_path)   # options anywhere
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "executed-notebooks"
    assert f"executed copies go to {out}" in result.stdout
    assert "ran first.ipynb" in result.stdout and "ran second.ipynb" in result.stdout
    assert "skipped gpu.ipynb: needs a CUDA GPU" in result.stdout and "(--cpu-only)" in result.stdout
    assert "ran 2, skipped 1, failed 0" in result.stdout
    assert {p: p.read_bytes() for p in before} == before, "execute changed a notebook without --in-place"
    printed = ["".join(json.loads((out / n).read_text(encoding="utf-8"))["cells"][0]["outputs"][0]["text"])
               for n in ("first.ipynb", "second.ipynb")]
    assert printed == [f"{first.parent}\n", "42\n"], "not run, or not in the notebook's own folder"
    assert not (out / "gpu.ipynb").exists()
    assert "[IPKernelApp] WARNING" not in result.stderr, "the kernel warned (TCP without encryption?)"


@pytest.mark.skipif(os.name != "posix", reason="local sockets are a POSIX feature here")
def test_kernels_use_local_sockets_unless_their_path_would_be_too_long():
    short = execute.kernel_config("/tmp/course-kernel-x").KernelManager
    assert short.transport == "ipc" and short.ip == "/tmp/course-kernel-x/kernel"
    assert "transport" not in execute.kernel_config("/" + "x" * 120).KernelManager


def test_execute_reports_a_failing_notebook_and_writes_its_error_to_the_copy(tmp_path):
    broken = notebook(tmp_path / "broken.ipynb", "print('before')", "1 / 0")
    before = broken.read_bytes()
    result = run_course("execute", broken, "--out", tmp_path / "runs", cwd=tmp_path)
    assert result.returncode == 1
    assert "FAILED broken.ipynb" in result.stdout and "ZeroDivisionError" in result.stdout
    assert "ran 0, skipped 0, failed 1: broken.ipynb" in result.stdout
    assert "ZeroDivisionError" in (tmp_path / "runs" / "broken.ipynb").read_text(encoding="utf-8")
    assert broken.read_bytes() == before


def test_execute_counts_a_failed_exercise_check_as_a_failure_unless_allowed(tmp_path):
    wrong = notebook(tmp_path / "wrong.ipynb", "from helpers import checks",
                     "report = checks.check_top_k(lambda ranks, k: list(range(k)))")
    right = notebook(tmp_path / "right.ipynb", "import numpy as np\nfrom helpers import checks",
                     "report = checks.check_top_k(lambda ranks, k: np.argsort(-np.asarray(ranks), "
                     "kind='stable')[:k])")
    result = run_course("execute", wrong, right, "--out", tmp_path / "runs", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "ran wrong.ipynb in " in result.stdout and "its check FAILED (top_k;" in result.stdout
    assert "ran 2, skipped 0, failed 0; checks failed in 1: wrong.ipynb\n" in result.stdout
    allowed = run_course("execute", wrong, "--out", tmp_path / "runs", "--allow-failed-checks", cwd=tmp_path)
    assert allowed.returncode == 0 and "(allowed: --allow-failed-checks)" in allowed.stdout


def test_execute_in_place_only_when_asked(tmp_path):
    target = notebook(tmp_path / "nb.ipynb", "print('in place')")
    refused = run_course("execute", target, "--out", tmp_path, cwd=tmp_path)
    assert refused.returncode == 2 and "would overwrite" in refused.stderr and "--in-place" in refused.stderr
    assert refused.stderr.startswith("usage: python -m helpers.course execute")
    assert run_course("execute", target, "--in-place", cwd=tmp_path).returncode == 0
    outputs = json.loads(target.read_text(encoding="utf-8"))["cells"][0]["outputs"]
    assert "".join(outputs[0]["text"]) == "in place\n"
    assert not (tmp_path / "executed-notebooks").exists()


@pytest.mark.parametrize("args, message", [
    (["execute", "missing.ipynb"], "not a notebook: missing.ipynb"),
    (["execute", "pyproject.toml"], "not a notebook: pyproject.toml"),
    (["execute", "--out", "x", "--in-place"], "not allowed with argument"),
    (["sync", "--cpu-only"], "unrecognized arguments: --cpu-only"),
    (["report", "00_setup.ipynb"], "unrecognized arguments: 00_setup.ipynb"),
    (["exercises"], "invalid choice: 'exercises' (choose from 'execute', 'refresh', 'sync', 'check', "
                   "'report')"),
    (["refresh", "missing.ipynb"], "not a notebook: missing.ipynb"),
])
def test_the_course_command_refuses_bad_arguments(args, message):
    result = run_course(*args, cwd=course.ROOT)
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_the_course_command_alone_lists_its_commands():
    result = run_course(cwd=course.ROOT)
    assert result.returncode == 2 and "the following arguments are required" not in result.stderr
    assert result.stderr.startswith("usage: python -m helpers.course [-h] COMMAND ...")
    for command in ("execute", "refresh", "sync", "check", "report"):
        assert re.search(rf"^\s+{command}\s+\w", result.stderr, re.MULTILINE), f"{command} is not listed"


def test_the_scale_is_one_setting_student_unless_the_tests_say_test(monkeypatch):
    monkeypatch.delenv(course.SCALE_VARIABLE, raising=False)
    assert course.scale().name == "student" and course.scale().pick(student=1, test=2) == 1
    for value, name in ((" Test ", "test"), ("", "student"), ("student", "student")):
        monkeypatch.setenv(course.SCALE_VARIABLE, value)
        assert course.scale().name == name
    monkeypatch.setenv(course.SCALE_VARIABLE, "test")
    assert course.scale().test and course.scale().pick(student=1, test=2) == 2
    assert str(course.scale()).startswith("test ($PAGERANK_SCALE=test")
    monkeypatch.setenv(course.SCALE_VARIABLE, "tiny")
    with pytest.raises(course.SettingError, match="PAGERANK_SCALE='tiny': use 'student'"):
        course.scale()


def test_every_lecture_reads_the_scale_once_in_its_imports_cell():
    """One visible place per lecture: the cell that imports helpers reads the setting; no other cell does."""
    for path in course.lecture_notebooks():
        cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
        reading = [i for i, c in enumerate(cells) if "course.scale()" in "".join(c["source"])]
        assert len(reading) <= 1, f"{path.name} reads the scale in {len(reading)} cells"
        if reading:
            assert "from helpers import" in "".join(cells[reading[0]]["source"]), path.name


def test_refresh_without_a_gpu_says_so_and_changes_nothing(tmp_path):
    from helpers.measure import gpu

    if gpu.has_gpu():
        pytest.skip("this machine has a GPU: refresh would run the lectures")
    target = notebook(tmp_path / "nb.ipynb", "print('x')", needs_gpu=True)
    before = target.read_bytes()
    result = run_course("refresh", target, cwd=tmp_path)
    assert result.returncode == 2 and result.stdout.startswith("refresh runs the lectures on a GPU: none")
    assert target.read_bytes() == before


@pytest.mark.gpu
def test_refresh_runs_each_notebook_at_the_student_scale_in_place_and_names_the_slowest_cells(tmp_path):
    target = notebook(tmp_path / "nb.ipynb", "import os\nprint(os.environ['PAGERANK_SCALE'])", needs_gpu=True)
    result = run_course("refresh", target, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[1/1] nb.ipynb ..." in result.stdout and "on a T4, by the model" in result.stdout
    assert "1 refreshed, 0 failed" in result.stdout and "slowest cells: nb.ipynb cell 0 " in result.stdout
    printed = json.loads(target.read_text(encoding="utf-8"))["cells"][0]["outputs"][0]["text"]
    assert "".join(printed) == "student\n"


def test_report_prints_python_cpu_gpu_and_the_data_directory(tmp_path):
    env = dict(os.environ, PYTHONPATH=with_root_on_path(), PAGERANK_DATA_DIR=str(tmp_path / "data"))
    result = subprocess.run([sys.executable, "-m", "helpers.course", "report"], capture_output=True,
                            text=True, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == ["Python", "CPU:", "GPU:", "scale:", "data"]
    assert lines[4] == "data directory: $PAGERANK_DATA_DIR/" and str(tmp_path) not in result.stdout


def shown_help(parser: argparse.ArgumentParser) -> str:
    """What --help prints, its lines joined (so a phrase broken across lines is found)."""
    return " ".join(parser.format_help().split())


@pytest.mark.parametrize("command", ["execute", "refresh", "sync", "check", "report"])
def test_every_subcommand_has_help_and_no_noise_in_it(command):
    result = run_course(command, "--help", cwd=course.ROOT)
    assert result.returncode == 0 and result.stdout.startswith(f"usage: python -m helpers.course {command}")
    assert "(default: None)" not in result.stdout and "(default: False)" not in result.stdout
    assert "(default: [" not in result.stdout
    if command == "execute":
        shown = " ".join(result.stdout.split())
        for option, words in [("NOTEBOOK", "the notebooks to run (default: every lecture"),
                              ("--exercises", "also run every exercise notebook"),
                              ("--cpu-only", "skip the notebooks that need a GPU"),
                              ("--out DIR", "the folder the executed copies go to, laid out as notebooks/ "
                                            "is (default: executed-notebooks/ in the current directory)"),
                              ("--in-place", "overwrite the notebooks themselves"),
                              ("--timeout SECONDS", "the longest one cell may run (default: 1200)"),
                              ("--allow-failed-checks", "an exercise check that fails does not fail the run")]:
            assert f"{option} {words}" in shown, f"{option}: {shown}"


def test_the_shared_help_formatter_shows_only_real_defaults():
    parser = argparse.ArgumentParser(prog="demo", formatter_class=cli.HelpFormatter)
    parser.add_argument("--size", type=int, help="how many")
    parser.add_argument("--orders", nargs="+", default=["given", "degree groups"], help="vertex orders")
    parser.add_argument("--fast", action="store_true", help="go fast")
    parser.add_argument("--trials", type=int, default=7, help="timing trials")
    parser.add_argument("--names", nargs="*", default=[], help="names")
    parser.add_argument("--variant", help="which one (default: all that fit)")
    parser.add_argument("--ratio", type=float, default=0.5, help="at most 50%% of the memory")
    shown = shown_help(parser)
    for line in ("--size SIZE how many --orders",
                 "--orders ORDERS [ORDERS ...] vertex orders (default: given 'degree groups')",
                 "--fast go fast --trials", "--trials TRIALS timing trials (default: 7)",
                 "--names [NAMES ...] names --variant",
                 "--variant VARIANT which one (default: all that fit) --ratio",
                 "--ratio RATIO at most 50% of the memory (default: 0.5)"):
        assert line in shown, f"{line!r} not in {shown!r}"
    assert "None" not in shown and "False" not in shown and "[" + "'" not in shown


def test_an_unknown_name_is_answered_with_the_known_ones():
    assert cli.choices_error("variant", ["bogus"], ["pull_thread", "pull_warp"]) == \
        "unknown variant 'bogus'; known variants: pull_thread, pull_warp"
    assert cli.choices_error("order", ["a", "b"], ("given",)) == \
        "unknown orders 'a', 'b'; known orders: given"


# --- quiet runs: one skipped-test line per reason -------------------------------------------------------

def test_a_test_run_names_each_skip_reason_once_with_a_count(tmp_path):
    """In a project of its own with this conftest: three tests skipped for one reason in two files, one for
    another, and GPU-marked tests (skipped where there is no GPU, with the short reason)."""
    shutil.copy(course.ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: needs a GPU\n")
    (tmp_path / "test_a.py").write_text(
        "import pytest\n"
        "def test_one():\n    pytest.skip('no frobnicator here')\n"
        "@pytest.mark.skipif(True, reason='no frobnicator here')\ndef test_two():\n    pass\n"
        "@pytest.mark.gpu\ndef test_gpu_a():\n    pass\n")
    (tmp_path / "test_b.py").write_text(
        "import pytest\n"
        "def test_three():\n    pytest.skip('no frobnicator here')\n"
        "def test_four():\n    pytest.skip('another reason')\n"
        "@pytest.mark.gpu\ndef test_gpu_b():\n    pass\n"
        "def test_runs():\n    pass\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(tmp_path)],
                            capture_output=True, text=True, cwd=tmp_path,
                            env=dict(os.environ, PYTHONPATH=with_root_on_path()), timeout=300)
    lines = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    from helpers.measure import gpu

    expected = ["SKIPPED [3] no frobnicator here", "SKIPPED [1] another reason"]
    if not gpu.gpu_status().available:
        gpu_line = next(line for line in lines if "needs a CUDA GPU" in line)
        assert gpu_line == f"SKIPPED [2] {gpu_skip_reason(gpu.gpu_status().description)}", gpu_line
        assert "Runtime > Change runtime type" not in result.stdout, "the students' advice in every skip"
        lines.remove(gpu_line)
    assert sorted(lines) == sorted(expected), result.stdout
    with_rs = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs",
                              str(tmp_path)], capture_output=True, text=True, cwd=tmp_path,
                             env=dict(os.environ, PYTHONPATH=with_root_on_path()), timeout=300)
    assert "skipped tests, by reason" not in with_rs.stdout and "SKIPPED [" in with_rs.stdout


def test_the_gpu_skip_reason_is_short_and_the_advice_stays_in_the_report():
    from helpers.measure.gpu import NO_GPU_ADVICE

    def described(detail):
        return f"none. {NO_GPU_ADVICE} (Detail: {detail})"

    assert gpu_skip_reason(described("CuPy is not installed, so every GPU lecture is skipped.")) == \
        "needs a CUDA GPU (none: CuPy is not installed)"
    assert gpu_skip_reason(described("no CUDA device is visible.")) == \
        "needs a CUDA GPU (none: no CUDA device is visible)"
    detail = "CuPy cannot reach a CUDA device: cudaErrorNoDevice: no CUDA-capable device"
    assert gpu_skip_reason(described(detail)) == f"needs a CUDA GPU (none: {detail})"
