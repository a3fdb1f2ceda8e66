"""Colab's first cell, simulated without network: the generated setup-cell source runs in a subprocess where a
faked ``google.colab`` is importable, ``colab_setup.sh`` is downloaded from a loopback server that serves a
local repository's branches the way raw.githubusercontent.com does (and answers 404 for anything else), the
clone comes from that local repository (two branches: ``main`` and ``pinned``), and pip is a script that
records its arguments and can fail once, as an interrupted install does."""
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers import course

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git (the Colab set-up clones with it)")

# what a clone needs for the first cell to import helpers from it (the working tree's, so uncommitted work counts)
COURSE_FILES = ["helpers", "pyproject.toml", "README.md", "LICENSE", "colab_setup.sh", "data/README.md"]
DRIVER_ERROR = "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version"


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    """A local repository standing in for the course on GitHub: ``main``, and ``pinned`` one commit ahead."""
    repo = tmp_path_factory.mktemp("remote") / "course"
    for name in COURSE_FILES:
        source, target = course.ROOT / name, repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target)
    identity = ["-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git(*identity, "commit", "-q", "-m", "the course", cwd=repo)
    git("checkout", "-q", "-b", "pinned", cwd=repo)
    (repo / "PINNED").write_text("the pinned branch\n")
    git("add", "PINNED", cwd=repo)
    git(*identity, "commit", "-q", "-m", "one commit more", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    return repo


class RawServer:
    """Serves /OWNER/REPO/REF/PATH from the local repository for ``repository``, like raw.githubusercontent.com;
    404 for any other repository, ref or path. Counts the requests."""

    def __init__(self, repo: Path, repository: str):
        outer = self
        self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.requests.append(self.path)
                parts = self.path.lstrip("/").split("/", 3)
                body = None
                if len(parts) == 4 and "/".join(parts[:2]) == repository:
                    shown = subprocess.run(["git", "show", f"{parts[2]}:{parts[3]}"], cwd=repo, capture_output=True)
                    body = shown.stdout if shown.returncode == 0 else None
                self.send_response(200 if body is not None else 404)
                self.end_headers()
                self.wfile.write(body if body is not None else b"404: Not Found")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def raw(remote):
    server = RawServer(remote, course.REPOSITORY)
    yield server
    server.close()


@pytest.fixture
def colab(tmp_path, remote, raw):
    """Run the generated first cell as Colab would, in /content (a temp folder), as often as asked."""
    fake = tmp_path / "fake-colab"
    (fake / "google" / "colab").mkdir(parents=True)
    (fake / "google" / "colab" / "__init__.py").write_text('"""A stand-in for Colab\'s own module."""\n')
    content = tmp_path / "content"
    content.mkdir()
    pip_log = tmp_path / "pip.log"
    fake_pip = tmp_path / "pip"
    fake_pip.write_text('#!/bin/sh\n'
                        f'echo "$*" >> "{pip_log}"\n'
                        f'if [ -e "{tmp_path / "fail-next-install"}" ]; then\n'
                        f'  rm "{tmp_path / "fail-next-install"}"\n'
                        '  echo "ERROR: the install was interrupted (simulated)" >&2; exit 1\n'
                        'fi\n')
    fake_pip.chmod(0o755)

    class Colab:
        checkout = content / course.CHECKOUT_NAME
        marker = checkout / course.INSTALLED_MARKER

        def installs(self):
            return pip_log.read_text().splitlines() if pip_log.exists() else []

        def fail_next_install(self):
            (tmp_path / "fail-next-install").touch()

        def add_cupy(self, device_error: str):
            """CuPy installed, as on Colab, but without a GPU runtime its driver calls fail."""
            (fake / "cupy").mkdir(exist_ok=True)
            (fake / "cupy" / "__init__.py").write_text(
                "class _Runtime:\n"
                "    @staticmethod\n"
                f"    def getDeviceCount():\n        raise RuntimeError({device_error!r})\n"
                "class cuda:\n    runtime = _Runtime\n")

        def run(self, repository=course.REPOSITORY, branch=course.BRANCH, repo_url=None):
            cell = tmp_path / "cell.py"
            cell.write_text(course.setup_cell_source(repository, branch) +
                            "\nimport helpers\nprint('helpers imported from', helpers.__file__)\n")
            env = dict(os.environ, PYTHONPATH=str(fake), PAGERANK_RAW_URL=raw.url, PAGERANK_PIP=str(fake_pip),
                       PAGERANK_CHECKOUT_PARENT=str(content), PAGERANK_REPO_URL=repo_url or remote.as_uri(),
                       PAGERANK_DATA_DIR=str(tmp_path / "data"))
            code = "import google.colab\nexec(compile(open('cell.py').read(), 'setup cell', 'exec'))"
            result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                                    text=True, timeout=300)
            result.output = result.stdout + result.stderr
            return result

    return Colab()


def test_the_first_cell_clones_the_pinned_branch_installs_and_imports_helpers_from_the_clone(colab, remote, raw):
    first = colab.run(branch="pinned")
    assert first.returncode == 0, first.output
    checkout = colab.checkout
    assert git("rev-parse", "HEAD", cwd=checkout) == git("rev-parse", "pinned", cwd=remote)
    assert (checkout / "PINNED").is_file(), "cloned the default branch, not the pinned one"
    assert f"helpers imported from {checkout / 'helpers' / '__init__.py'}" in first.stdout
    assert colab.installs() == [f"install -q -e {checkout}[gpu,lectures]"]     # no CuPy here: the gpu extra too
    assert colab.marker.read_text().split() == ["pinned", git("rev-parse", "pinned", cwd=remote)]
    assert f"/{course.REPOSITORY}/pinned/colab_setup.sh" in raw.requests

    fetched = len(raw.requests)
    again = colab.run(branch="pinned")
    assert again.returncode == 0, again.output
    assert len(raw.requests) == fetched and len(colab.installs()) == 1, "set up twice"
    assert f"helpers imported from {checkout / 'helpers' / '__init__.py'}" in again.stdout


def test_the_default_pin_clones_main(colab, remote):
    result = colab.run(branch="main")
    assert result.returncode == 0, result.output
    assert git("rev-parse", "HEAD", cwd=colab.checkout) == git("rev-parse", "main", cwd=remote)
    assert not (colab.checkout / "PINNED").exists()


def test_a_wrong_repository_fails_loudly_naming_it_and_what_to_change(colab, raw):
    result = colab.run(repository="someone/not-the-course")
    assert result.returncode != 0
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("RuntimeError: Could not download the course's set-up script")
    assert f"{raw.url}/someone/not-the-course/main/colab_setup.sh" in error and "HTTP Error 404" in error
    for words in ("someone/not-the-course", "REPOSITORY and BRANCH in helpers/course.py",
                  "python -m helpers.course sync"):
        assert words in error
    assert "No module named" not in result.output
    assert not colab.checkout.exists() and colab.installs() == []


def test_a_branch_that_does_not_exist_is_named(colab, raw):
    result = colab.run(branch="no-such-branch")
    assert result.returncode != 0
    assert "/no-such-branch/colab_setup.sh (HTTP Error 404" in result.stderr
    assert "branch or tag no-such-branch" in result.stderr


def test_a_failed_clone_stops_the_cell_with_what_to_change(colab, tmp_path):
    result = colab.run(repo_url=(tmp_path / "nowhere").as_uri())
    assert result.returncode != 0
    assert f"colab_setup.sh: could not clone {(tmp_path / 'nowhere').as_uri()} at 'main'" in result.output
    assert "set REPOSITORY and BRANCH in helpers/course.py" in result.output
    assert result.stderr.strip().splitlines()[-1].startswith("RuntimeError: The course set-up did not finish")
    assert "No module named" not in result.output and colab.installs() == []


def test_an_interrupted_install_is_retried_on_the_next_run(colab):
    colab.fail_next_install()
    first = colab.run()
    assert first.returncode != 0
    assert "the install was interrupted (simulated)" in first.output
    assert "installing the course into this runtime failed" in first.output
    assert "Run this cell again to retry" in first.stderr
    assert colab.checkout.is_dir() and not colab.marker.exists()

    (colab.checkout / "kept").write_text("proof that the clone is reused")
    second = colab.run()
    assert second.returncode == 0, second.output
    assert "its install did not finish: installing again" in second.stdout
    assert (colab.checkout / "kept").exists(), "a complete clone was fetched again"
    assert len(colab.installs()) == 2 and colab.marker.is_file()


@pytest.mark.parametrize("damage", ["a file missing", "no commit", "another branch"])
def test_a_partial_or_different_clone_is_fetched_again(colab, remote, damage):
    colab.fail_next_install()
    assert colab.run().returncode != 0
    if damage == "a file missing":
        (colab.checkout / "helpers" / "graph.py").unlink()
    elif damage == "no commit":               # a clone interrupted before its first commit arrived
        shutil.rmtree(colab.checkout)
        git("init", "-q", str(colab.checkout), cwd=colab.checkout.parent)
    result = colab.run(branch="pinned" if damage == "another branch" else "main")
    assert result.returncode == 0, result.output
    assert "unfinished fetch of the course (or another version of it): fetching it again" in result.stdout
    assert (colab.checkout / "helpers" / "graph.py").is_file()
    wanted = "pinned" if damage == "another branch" else "main"
    assert git("rev-parse", "HEAD", cwd=colab.checkout) == git("rev-parse", wanted, cwd=remote)


def test_without_a_gpu_the_message_leads_with_what_to_do(colab):
    colab.add_cupy(DRIVER_ERROR)          # Colab's CPU runtime: CuPy is there, the driver is not
    result = colab.run()
    assert result.returncode == 0, result.output
    assert "CuPy is already installed: keeping it" in result.stdout
    assert colab.installs() == [f"install -q -e {colab.checkout}[lectures]"]
    line = next(line for line in result.stdout.splitlines() if line.startswith("GPU:"))
    assert line.startswith("GPU: none. On Colab: Runtime > Change runtime type > T4 GPU, then run the notebook again.")
    assert line.index("T4 GPU") < line.index("cudaErrorInsufficientDriver")


def test_colab_setup_sh_needs_a_repository():
    missing = subprocess.run(["bash", str(course.ROOT / "colab_setup.sh")], capture_output=True, text=True)
    assert missing.returncode != 0 and "usage: colab_setup.sh OWNER/REPO" in missing.stderr
