"""Colab's first cell, simulated without network: the first cell runs in a subprocess where a faked
``google.colab`` is importable; ``colab_setup.py`` is downloaded from a loopback server that serves a local
repository's branches the way raw.githubusercontent.com does (the cell's address of that host is swapped for
the server's, nothing else changes) and answers 404 for anything else; the clone comes from that local
repository (two branches: ``main`` and ``pinned``); and ``python -m pip`` finds a fake pip first on the path,
which records the interpreter and arguments it was run with, can fail once as an interrupted install does,
and makes an editable install importable in the next Python the way pip does (a .pth file in a site
folder)."""
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers import course
from helpers.course.tools import sync

pytestmark = pytest.mark.skipif(shutil.which("git") is None,
                                reason="needs git (the Colab set-up clones with it)")

# what a clone needs for the first cell to import helpers from it (the working tree's: uncommitted work too)
COURSE_FILES = ["helpers", "pyproject.toml", "README.md", "LICENSE", "colab_setup.py", "data/README.md"]
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
    """Serves /OWNER/REPO/REF/PATH from the local repository for ``repository``, like
    raw.githubusercontent.com; 404 for any other repository, ref or path. Counts the requests."""

    def __init__(self, repo: Path, repository: str):
        outer = self
        self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.requests.append(self.path)
                parts = self.path.lstrip("/").split("/", 3)
                body = None
                if len(parts) == 4 and "/".join(parts[:2]) == repository:
                    shown = subprocess.run(["git", "show", f"{parts[2]}:{parts[3]}"], cwd=repo,
                                           capture_output=True)
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


FAKE_PIP = """\
import os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_PIP_LOG"], "a") as log:
    log.write(f"{sys.executable} -m pip {' '.join(args)}\\n")
flag = os.environ["FAKE_PIP_FAIL_FLAG"]
if os.path.exists(flag):
    os.remove(flag)
    print("ERROR: the install was interrupted (simulated)")
    sys.exit(1)
target = args[args.index("-e") + 1].split("[")[0]
with open(os.path.join(os.environ["FAKE_SITE"], "course.pth"), "w") as pth:
    pth.write(target + "\\n")
"""


@pytest.fixture
def colab(tmp_path, remote, raw):
    """Run the generated first cell as Colab would, in /content (a temp folder), as often as asked."""
    fake = tmp_path / "fake-colab"
    (fake / "google" / "colab").mkdir(parents=True)
    (fake / "google" / "colab" / "__init__.py").write_text('"""A stand-in for Colab\'s own module."""\n')
    (fake / "pip").mkdir()                          # a regular package: it comes before the real pip
    (fake / "pip" / "__init__.py").write_text('"""A stand-in for pip: it installs nothing."""\n')
    (fake / "pip" / "__main__.py").write_text(FAKE_PIP)
    site_folder = tmp_path / "site-packages"
    site_folder.mkdir()
    # The kernel's Python, as Colab's: no course installed (this machine's own editable install of it, a
    # finder on sys.meta_path, is taken out), and what the fake pip installs found through a site folder.
    (fake / "sitecustomize.py").write_text(
        "import site, sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path\n"
        "                    if 'pagerank_gpu_course' not in getattr(f, '__module__', '')]\n"
        f"site.addsitedir({str(site_folder)!r})\n")
    content = tmp_path / "content"
    content.mkdir()
    pip_log, fail_flag = tmp_path / "pip.log", tmp_path / "fail-next-install"
    wrong_python = tmp_path / "bin"                 # a python3 on PATH that is not the kernel's interpreter
    wrong_python.mkdir()
    (wrong_python / "python3").write_text("#!/bin/sh\necho 'ran python3 from PATH' >&2; exit 3\n")
    (wrong_python / "python3").chmod(0o755)

    class Colab:
        checkout = content / course.CHECKOUT_NAME
        marker = checkout / course.INSTALLED_MARKER

        def installs(self):
            return pip_log.read_text(encoding="utf-8").splitlines() if pip_log.exists() else []

        def fail_next_install(self):
            fail_flag.touch()

        def add_cupy(self, device_error: str):
            """CuPy installed, as on Colab, but without a GPU runtime its driver calls fail."""
            (fake / "cupy").mkdir(exist_ok=True)
            (fake / "cupy" / "__init__.py").write_text(
                "class _Runtime:\n"
                "    @staticmethod\n"
                f"    def getDeviceCount():\n        raise RuntimeError({device_error!r})\n"
                "class cuda:\n    runtime = _Runtime\n")

        def run(self, repository=course.REPOSITORY, branch=course.BRANCH, repo_url=None, raw_url=None):
            cell = tmp_path / "cell.py"
            source = sync.setup_cell_source(repository, branch)
            assert source.count(course.RAW_URL) == 1
            cell.write_text(source.replace(course.RAW_URL, raw_url or raw.url) +
                            "\nimport helpers\nprint('helpers imported from', helpers.__file__)\n")
            env = dict(os.environ, PYTHONPATH=str(fake), PAGERANK_CHECKOUT_PARENT=str(content),
                       PAGERANK_REPO_URL=repo_url or remote.as_uri(),
                       PAGERANK_DATA_DIR=str(tmp_path / "data"), FAKE_PIP_LOG=str(pip_log),
                       FAKE_PIP_FAIL_FLAG=str(fail_flag), FAKE_SITE=str(site_folder),
                       PATH=f"{wrong_python}{os.pathsep}{os.environ['PATH']}")
            which = subprocess.run([sys.executable, "-c", "import pip; print(pip.__file__)"], env=env,
                                   capture_output=True, text=True, cwd=tmp_path)
            assert which.stdout.strip() == str(fake / "pip" / "__init__.py"), "the real pip would install"
            code = "import google.colab\nexec(compile(open('cell.py').read(), 'setup cell', 'exec'))"
            result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                                    text=True, timeout=300)
            result.output = result.stdout + result.stderr
            return result

    return Colab()


def install(checkout, extras=None):
    """What the fake pip records for the set-up's install: the kernel's own interpreter, never python3; the
    gpu extra only where CuPy is missing (Colab's own CuPy is kept)."""
    import importlib.util

    if extras is None:
        extras = "lectures" if importlib.util.find_spec("cupy") else "gpu,lectures"
    return f"{sys.executable} -m pip install -q -e {checkout}[{extras}]"


def test_the_first_cell_clones_the_pinned_branch_installs_and_imports_from_the_clone(colab, remote, raw):
    first = colab.run(branch="pinned")
    assert first.returncode == 0, first.output
    checkout = colab.checkout
    assert git("rev-parse", "HEAD", cwd=checkout) == git("rev-parse", "pinned", cwd=remote)
    assert (checkout / "PINNED").is_file(), "cloned the default branch, not the pinned one"
    assert f"helpers imported from {checkout / 'helpers' / '__init__.py'}" in first.stdout
    assert colab.installs() == [install(checkout)]     # the gpu extra only without CuPy
    assert "ran python3 from PATH" not in first.output
    assert colab.marker.read_text(encoding="utf-8").split() == ["pinned", git("rev-parse", "pinned", cwd=remote)]
    assert f"/{course.REPOSITORY}/pinned/colab_setup.py" in raw.requests
    assert first.stdout.splitlines()[-6].startswith("Python "), "the report follows the set-up"

    fetched = len(raw.requests)
    again = colab.run(branch="pinned")                 # a new kernel: helpers is installed (editable)
    assert again.returncode == 0, again.output
    assert len(raw.requests) == fetched and len(colab.installs()) == 1, "set up twice"
    assert f"helpers imported from {checkout / 'helpers' / '__init__.py'}" in again.stdout


def test_the_default_pin_clones_main(colab, remote):
    result = colab.run(branch="main")
    assert result.returncode == 0, result.output
    assert git("rev-parse", "HEAD", cwd=colab.checkout) == git("rev-parse", "main", cwd=remote)
    assert not (colab.checkout / "PINNED").exists()


def last_error(result) -> str:
    return result.stderr.strip().splitlines()[-1]


def test_without_internet_the_student_is_told_to_check_it_and_run_again(colab):
    result = colab.run(raw_url="http://127.0.0.1:9")       # nothing listens there: the connection is refused
    assert result.returncode != 0
    assert last_error(result) == \
        "RuntimeError: this runtime has no internet: check it and run the cell again"
    assert "REPOSITORY" not in result.stderr and "During handling" not in result.stderr
    assert not colab.checkout.exists() and colab.installs() == []


def test_a_clone_without_internet_says_so_too(colab):
    result = colab.run(repo_url="http://127.0.0.1:9/pagerank-on-the-gpu.git")
    assert result.returncode != 0
    assert last_error(result).endswith("this runtime has no internet: check it and run the cell again")
    assert "helpers/course/__init__.py" not in result.stderr and colab.installs() == []


def test_a_wrong_repository_fails_loudly_naming_it_and_what_to_change(colab, raw):
    result = colab.run(repository="someone/not-the-course")
    assert result.returncode != 0
    error = last_error(result)
    assert error.startswith("RuntimeError: HTTP Error 404: Not Found: ")
    assert f"{raw.url}/someone/not-the-course/main/colab_setup.py" in error
    for words in ("REPOSITORY or BRANCH is wrong", "set both in helpers/course/__init__.py",
                  "helpers.course sync", "push"):
        assert words in error
    assert "no internet" not in result.output and "No module named" not in result.output
    assert not colab.checkout.exists() and colab.installs() == []


def test_a_branch_that_does_not_exist_is_named(colab, raw):
    result = colab.run(branch="no-such-branch")
    assert result.returncode != 0
    assert "HTTP Error 404" in result.stderr and "/no-such-branch/colab_setup.py" in result.stderr
    assert "REPOSITORY or BRANCH is wrong" in result.stderr


def test_a_failed_clone_stops_the_cell_with_what_to_change(colab, tmp_path):
    result = colab.run(repo_url=(tmp_path / "nowhere").as_uri())
    assert result.returncode != 0
    error = last_error(result)
    assert error.startswith(f"RuntimeError: could not clone {(tmp_path / 'nowhere').as_uri()} at 'main'")
    assert "set REPOSITORY and BRANCH in helpers/course/__init__.py" in error
    assert "No module named" not in result.output and colab.installs() == []


def test_an_interrupted_install_is_retried_on_the_next_run(colab):
    colab.fail_next_install()
    first = colab.run()
    assert first.returncode != 0
    assert "the install was interrupted (simulated)" in first.stdout
    assert last_error(first) == ("RuntimeError: installing the course into this runtime failed (ERROR: the "
                                 "install was interrupted (simulated)). Run this cell again to retry; if it "
                                 "fails the same way, restart the runtime (Runtime > Restart session) and "
                                 "run it again.")
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
        (colab.checkout / "helpers" / "core" / "graph.py").unlink()
    elif damage == "no commit":               # a clone interrupted before its first commit arrived
        shutil.rmtree(colab.checkout)
        git("init", "-q", str(colab.checkout), cwd=colab.checkout.parent)
    result = colab.run(branch="pinned" if damage == "another branch" else "main")
    assert result.returncode == 0, result.output
    assert "unfinished fetch of the course (or another version of it): fetching again" in result.stdout
    assert (colab.checkout / "helpers" / "core" / "graph.py").is_file()
    wanted = "pinned" if damage == "another branch" else "main"
    assert git("rev-parse", "HEAD", cwd=colab.checkout) == git("rev-parse", wanted, cwd=remote)


def test_without_a_gpu_the_message_leads_with_what_to_do(colab):
    colab.add_cupy(DRIVER_ERROR)          # Colab's CPU runtime: CuPy is there, the driver is not
    result = colab.run()
    assert result.returncode == 0, result.output
    assert "CuPy is already installed: keeping it" in result.stdout
    assert colab.installs() == [install(colab.checkout, "lectures")]
    line = next(line for line in result.stdout.splitlines() if line.startswith("GPU:"))
    assert line.startswith("GPU: none. On Colab: Runtime > Change runtime type > T4 GPU, then run the "
                           "notebook again.")
    assert line.index("T4 GPU") < line.index("cudaErrorInsufficientDriver")


def test_colab_setup_py_run_by_hand_needs_a_repository():
    missing = subprocess.run([sys.executable, str(course.ROOT / "colab_setup.py")], capture_output=True,
                             text=True)
    assert missing.returncode != 0 and "usage: python colab_setup.py OWNER/REPO [BRANCH]" in missing.stderr


def test_colab_setup_sh_runs_colab_setup_py_with_its_arguments(tmp_path):
    """The terminal's entry: ``bash colab_setup.sh`` hands its arguments to colab_setup.py (no network here:
    without arguments it prints the usage; a clone from a folder that does not exist names the fork)."""
    script, env = str(course.ROOT / "colab_setup.sh"), dict(os.environ, PYTHON=sys.executable)
    usage = subprocess.run(["bash", script], capture_output=True, text=True, env=env)
    assert usage.returncode != 0 and "usage: python colab_setup.py OWNER/REPO [BRANCH]" in usage.stderr
    nowhere = (tmp_path / "nowhere").as_uri()
    env.update(PAGERANK_CHECKOUT_PARENT=str(tmp_path), PAGERANK_REPO_URL=nowhere)
    clone = subprocess.run(["bash", script, "someone/fork", "pinned"], capture_output=True, text=True,
                           env=env, cwd=tmp_path, timeout=300)
    assert clone.returncode != 0 and f"fetching someone/fork at pinned from {nowhere}" in clone.stdout
    assert f"could not clone {nowhere} at 'pinned'. Is someone/fork the course's" in clone.stderr
