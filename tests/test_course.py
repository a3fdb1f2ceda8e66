import json
import os
import re
import subprocess
import sys

import pytest

from helpers import course

README = (course.ROOT / "README.md").read_text()
COLAB_LINK = re.compile(r"https://colab\.research\.google\.com/github/([^/]+/[^/]+)/blob/([^/]+)/([^)\s]+)")


def test_every_badge_points_at_an_existing_notebook_of_this_repository():
    links = COLAB_LINK.findall(README)
    assert links, "the README has no Open-in-Colab badges"
    for repository, branch, path in links:
        assert repository == course.REPOSITORY and branch == course.BRANCH
        assert (course.ROOT / path).is_file(), f"badge points at a missing notebook: {path}"


def test_every_lecture_has_a_badge_and_the_table_is_in_step():
    linked = {path for _, _, path in COLAB_LINK.findall(README)}
    for notebook in course.lecture_notebooks():
        assert notebook.relative_to(course.ROOT).as_posix() in linked
    assert course.lecture_table() in README, "run: python -m helpers.course sync"


def test_every_notebook_starts_with_the_current_setup_cell():
    assert f"REPOSITORY, BRANCH = {course.REPOSITORY!r}, {course.BRANCH!r}" in course.setup_cell_source()
    for notebook in course.lecture_notebooks() + course.exercise_notebooks():
        cells = [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
        assert "".join(cells[0]["source"]) == course.setup_cell_source(), f"{notebook.name}: run sync"


def test_only_the_notebooks_that_need_a_gpu_ask_colab_for_one():
    notebooks = course.lecture_notebooks() + course.exercise_notebooks()
    assert len(notebooks) >= 30 and {course.needs_gpu(p) for p in notebooks} == {True, False}
    for notebook in notebooks:
        metadata = json.loads(notebook.read_text())["metadata"]
        asks = (metadata.get("accelerator"), metadata.get("colab", {}).get("gpuType"))
        wanted = ("GPU", "T4") if metadata["course"]["needs_gpu"] else (None, None)
        assert asks == wanted, f"{notebook.relative_to(course.ROOT)}: {asks}, needs_gpu {metadata['course']['needs_gpu']}"
        assert metadata == course.colab_metadata(metadata), f"{notebook.name}: run python -m helpers.course sync"


def test_sync_writes_the_colab_metadata_from_needs_gpu():
    cpu = course.colab_metadata({"accelerator": "GPU", "colab": {"gpuType": "T4", "provenance": []},
                                 "course": {"needs_gpu": False}})
    assert cpu == {"course": {"needs_gpu": False}}
    gpu = course.colab_metadata({"colab": {"provenance": []}, "course": {"needs_gpu": True}})
    assert gpu == {"colab": {"provenance": [], "gpuType": "T4"}, "course": {"needs_gpu": True}, "accelerator": "GPU"}
    assert course.colab_metadata(gpu) == gpu and course.colab_metadata(cpu) == cpu


def test_sync_is_idempotent_and_touches_only_the_setup_cell_and_the_metadata(tmp_path, monkeypatch):
    source = course.lecture_notebooks()[0]
    notebook = json.loads(source.read_text())
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    code[0]["source"] = [course.SETUP_MARKER + "\nprint('an old setup cell')"]
    notebook["metadata"]["accelerator"] = "GPU"
    stale = tmp_path / source.name
    stale.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    assert course.sync_notebook(stale) is True
    synced = json.loads(stale.read_text())
    assert synced == json.loads(source.read_text())
    assert course.sync_notebook(stale) is False
    code[0]["source"] = ["print('not a setup cell')"]
    stale.write_text(json.dumps(notebook))
    with pytest.raises(ValueError, match="not the course setup cell"):
        course.sync_notebook(stale)


def readme_block(marker: str) -> str:
    """The code block that follows a marker comment in the README."""
    assert f"<!-- {marker}" in README, f"the README has no '<!-- {marker}' marker"
    return README.split(f"<!-- {marker}", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0].strip()


def test_the_readme_test_command_is_what_ci_runs_and_lists_skip_reasons():
    ci = (course.ROOT / ".ci" / "run").read_text()
    assert "test command" in ci
    block = readme_block("test command")
    assert block.endswith("python -m pytest") and 'pip install -e ".[dev]"' in block
    import tomllib
    addopts = tomllib.loads((course.ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "-rs" in addopts.split(), "skipped tests must show their reasons"


def test_helpers_import_without_cupy():
    code = ("import sys; sys.modules['cupy'] = None\n"
            "import helpers, helpers.graph, helpers.generators, helpers.reference, helpers.gpu, helpers.course\n"
            "from helpers import gpu\n"
            "status = gpu.gpu_status(); assert not status.available, status\n"
            "assert 'CuPy is not installed' in status.description and 'T4 GPU' in status.description\n"
            "try:\n    gpu.require_gpu()\nexcept gpu.NoGPUError as e:\n    print('refused:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=course.ROOT)
    assert out.returncode == 0, out.stderr
    assert "refused: This needs a CUDA GPU" in out.stdout


def test_importing_helpers_does_not_import_cupy():
    code = ("import sys, helpers, helpers.graph, helpers.generators, helpers.reference, helpers.gpu, "
            "helpers.course, helpers.checks, helpers.exercises; print('cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=course.ROOT)
    assert out.stdout.strip() == "False", out.stderr


def test_data_dir_follows_the_one_setting(tmp_path, monkeypatch):
    monkeypatch.setenv(course.DATA_DIR_VARIABLE, str(tmp_path / "elsewhere"))
    assert course.data_dir() == tmp_path / "elsewhere" and (tmp_path / "elsewhere").is_dir()


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
    return subprocess.run([sys.executable, "-m", "helpers.course", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=dict(os.environ, PYTHONPATH=str(course.ROOT)), timeout=600)


def test_execute_writes_to_a_folder_and_leaves_the_notebooks_as_they_are(tmp_path):
    first = notebook(tmp_path / "nb" / "first.ipynb", "import os\nprint(os.getcwd())")
    second = notebook(tmp_path / "nb" / "second.ipynb", "print(6 * 7)")
    gpu_only = notebook(tmp_path / "nb" / "gpu.ipynb", "raise SystemExit('must not run')", needs_gpu=True)
    before = {p: p.read_bytes() for p in (first, second, gpu_only)}
    result = run_course("execute", "--cpu-only", first, second, gpu_only, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "executed-notebooks"
    assert f"executed copies go to {out}" in result.stdout
    assert "ran first.ipynb" in result.stdout and "ran second.ipynb" in result.stdout
    assert "skipped gpu.ipynb: needs a CUDA GPU" in result.stdout and "(--cpu-only)" in result.stdout
    assert "ran 2, skipped 1, failed 0" in result.stdout
    assert {p: p.read_bytes() for p in before} == before, "execute changed a notebook without --in-place"
    printed = ["".join(json.loads((out / n).read_text())["cells"][0]["outputs"][0]["text"])
               for n in ("first.ipynb", "second.ipynb")]
    assert printed == [f"{first.parent}\n", "42\n"], "not run, or not in the notebook's own folder"
    assert not (out / "gpu.ipynb").exists()
    assert "[IPKernelApp] WARNING" not in result.stderr, "the kernel warned (TCP without encryption?)"


@pytest.mark.skipif(os.name != "posix", reason="local sockets are a POSIX feature here")
def test_kernels_use_local_sockets_unless_their_path_would_be_too_long():
    short = course._kernel_config("/tmp/course-kernel-x").KernelManager
    assert short.transport == "ipc" and short.ip == "/tmp/course-kernel-x/kernel"
    assert "transport" not in course._kernel_config("/" + "x" * 120).KernelManager


def test_execute_reports_a_failing_notebook_and_writes_its_error_to_the_copy(tmp_path):
    broken = notebook(tmp_path / "broken.ipynb", "print('before')", "1 / 0")
    before = broken.read_bytes()
    result = run_course("execute", broken, "--out", tmp_path / "runs", cwd=tmp_path)
    assert result.returncode == 1
    assert "FAILED broken.ipynb" in result.stdout and "ZeroDivisionError" in result.stdout
    assert "ran 0, skipped 0, failed 1: broken.ipynb" in result.stdout
    assert "ZeroDivisionError" in (tmp_path / "runs" / "broken.ipynb").read_text()
    assert broken.read_bytes() == before


def test_execute_in_place_only_when_asked(tmp_path):
    target = notebook(tmp_path / "nb.ipynb", "print('in place')")
    refused = run_course("execute", target, "--out", tmp_path, cwd=tmp_path)
    assert refused.returncode == 2 and "would overwrite" in refused.stderr and "--in-place" in refused.stderr
    assert run_course("execute", target, "--in-place", cwd=tmp_path).returncode == 0
    assert "".join(json.loads(target.read_text())["cells"][0]["outputs"][0]["text"]) == "in place\n"
    assert not (tmp_path / "executed-notebooks").exists()


@pytest.mark.parametrize("args, message", [
    (["execute", "missing.ipynb"], "not a notebook: missing.ipynb"),
    (["execute", "pyproject.toml"], "not a notebook: pyproject.toml"),
    (["execute", "--out", "x", "--in-place"], "not allowed with argument"),
    (["sync", "--cpu-only"], "sync takes no notebooks and no execute options"),
])
def test_execute_refuses_bad_arguments(args, message):
    result = run_course(*args, cwd=course.ROOT)
    assert result.returncode == 2 and message in result.stderr


def test_every_option_of_the_course_command_has_help_with_its_default():
    parser = course.build_parser()
    shown = {}
    for action in parser._actions:
        if action.dest == "help":
            continue
        assert action.help, f"{action.dest} has no help"
        shown[action.dest] = action.help % dict(vars(action), prog=parser.prog)   # as --help prints it
        if action.option_strings:
            assert "(default: " in shown[action.dest], f"{action.option_strings[0]}: no default in its help"
    assert "(default: executed-notebooks/ in the current directory)" in shown["out"]
    assert "(default: 1200)" in shown["timeout"]
