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


def test_every_lecture_starts_with_the_current_setup_cell():
    for notebook in course.lecture_notebooks():
        cells = [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
        assert "".join(cells[0]["source"]) == course.setup_cell_source(), f"{notebook.name}: run sync"
        assert course.REPOSITORY in course.setup_cell_source()


def test_the_readme_test_command_is_what_ci_runs():
    ci = (course.ROOT / ".ci" / "run").read_text()
    assert "<!-- test command" in README and "test command" in ci
    block = README.split("<!-- test command", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0].strip()
    assert block.endswith("python -m pytest") and 'pip install -e ".[dev]"' in block


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


def _committed_checkout() -> bool:
    probe = subprocess.run(["git", "-C", str(course.ROOT), "cat-file", "-e", "HEAD:helpers/graph.py"],
                           capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _committed_checkout(), reason="needs the course as a git checkout with its history")
def test_colab_setup_fetches_once_and_installs_helpers(tmp_path):
    env = dict(os.environ, PAGERANK_REPO_URL=str(course.ROOT), PAGERANK_CHECKOUT_PARENT=str(tmp_path),
               PAGERANK_PIP="echo would-run pip")
    script = str(course.ROOT / "colab_setup.sh")
    first = subprocess.run(["bash", script, course.REPOSITORY, "checkout"], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "checkout" / "helpers" / "graph.py").is_file()
    assert f"would-run pip install -q -e {tmp_path / 'checkout'}" in first.stdout
    assert "GPU:" in first.stdout
    second = subprocess.run(["bash", script, course.REPOSITORY, "checkout"], env=env, capture_output=True, text=True)
    assert "course already fetched" in second.stdout
    missing = subprocess.run(["bash", script], env=env, capture_output=True, text=True)
    assert missing.returncode != 0 and "usage" in missing.stderr
