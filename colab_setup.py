"""Colab set-up for "PageRank on the GPU": fetch the course at the branch or tag a notebook was synced from,
install it into the kernel's own Python, and import it from there.

A notebook's first cell downloads this file from its REPOSITORY at its BRANCH and runs it with ``exec``
(REPOSITORY and BRANCH are the cell's own), until helpers can be imported. By hand, or to try a fork:

    python colab_setup.py OWNER/REPO [BRANCH]

It clones into /content/pagerank-on-the-gpu and installs with ``python -m pip`` of the running kernel,
keeping Colab's own CuPy (the gpu extra only where CuPy is missing) and never installing Jupyter. The last
step writes .course-installed into the clone; while that marker is missing, a run keeps a complete clone at
the right commit (and only installs again) and fetches anything else afresh. Every failure raises
RuntimeError with what to do: no internet, a wrong repository or branch (the maintainers' fix), a failed
install. Test hooks: PAGERANK_CHECKOUT_PARENT (instead of /content), PAGERANK_REPO_URL (what to clone).
"""


def course_setup(repository: str, branch: str) -> str:
    """Fetch ``repository`` at ``branch``, install it, put it on sys.path; returns the checkout's path."""
    import importlib.util
    import os
    import shutil
    import subprocess
    import sys

    parent = os.environ.get("PAGERANK_CHECKOUT_PARENT", "/content")
    target = os.path.join(parent, "pagerank-on-the-gpu")
    url = os.environ.get("PAGERANK_REPO_URL", f"https://github.com/{repository}")
    marker = os.path.join(target, ".course-installed")
    maintainers = (f"Is {repository} the course's public GitHub repository, with a branch or tag {branch}? "
                   "If not (maintainers): set REPOSITORY and BRANCH in helpers/course/__init__.py, run "
                   "python -m helpers.course sync, push, and open the notebook from its new badge.")

    def run(command: list[str], cwd: str | None = None) -> tuple[int, list[str]]:
        """Run a command, print its output as it comes (a notebook shows print, not the child's stdout)."""
        env = dict(os.environ, GIT_TERMINAL_PROMPT="0")       # a missing repository must not ask for a login
        with subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) as child:
            lines = []
            for line in child.stdout:
                print(line, end="")
                lines.append(line.strip())
        return child.returncode, lines

    def git(*args: str) -> str | None:
        done = subprocess.run(["git", "-C", target, *args], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else None

    def complete_at_branch() -> bool:
        """A complete clone whose checked-out files are those of ``branch``'s commit."""
        head = git("rev-parse", "-q", "--verify", "HEAD^{commit}")
        want = (git("rev-parse", "-q", "--verify", f"refs/remotes/origin/{branch}^{{commit}}")
                or git("rev-parse", "-q", "--verify", f"refs/tags/{branch}^{{commit}}"))
        return head is not None and head == want and git("diff", "--quiet", "HEAD", "--") is not None

    if os.path.isfile(marker):
        print(f"the course is already set up in {target}")
    else:
        if os.path.exists(target) and complete_at_branch():
            print(f"the course was fetched into {target} before, but its install did not finish: "
                  "installing again")
        else:
            if os.path.exists(target):
                print(f"{target} holds an unfinished fetch of the course (or another version of it): "
                      "fetching again")
                shutil.rmtree(target)
            print(f"fetching {repository} at {branch} from {url} into {target}")
            status, output = run(["git", "clone", "-q", "--depth", "1", "--branch", branch, url, target])
            if status:
                said = " ".join(output).lower()
                offline = ("could not resolve host", "unable to access", "failed to connect", "timed out",
                           "network is unreachable")
                if any(words in said for words in offline):
                    raise RuntimeError(f"could not reach {url}: this runtime has no internet: check it and "
                                       "run the cell again")
                if any(words in said for words in ("not found", "does not exist", "not a git repository",
                                                   "does not appear to be a git repository")):
                    raise RuntimeError(f"could not clone {url} at '{branch}'. {maintainers}")
                raise RuntimeError(f"could not clone {url} at '{branch}' (git's messages above say why): "
                                   "run the cell again to retry")
        extras = "lectures" if importlib.util.find_spec("cupy") else "gpu,lectures"
        print("CuPy is already installed: keeping it" if extras == "lectures" else
              "CuPy is missing: installing the gpu extra (CuPy for CUDA 12) as well")
        command = [sys.executable, "-m", "pip", "install", "-q", "-e", f"{target}[{extras}]"]
        print(f"installing helpers and what the lectures import (pip {' '.join(command[4:])})")
        status, output = run(command)
        if status:
            errors = [line for line in output if line.startswith("ERROR")]
            raise RuntimeError("installing the course into this runtime failed"
                               + (f" ({errors[-1]})" if errors else " (pip's messages above say why)")
                               + ". Run this cell again to retry; if it fails the same way, restart the "
                               "runtime (Runtime > Restart session) and run it again.")
        with open(marker, "w") as file:
            file.write(f"{branch} {git('rev-parse', 'HEAD')}\n")
        print(f"the course is set up in {target}: {repository} at {branch} "
              f"(commit {git('rev-parse', '--short', 'HEAD')})")
    if target not in sys.path:
        sys.path.insert(0, target)
    return target


def run_in_notebook(namespace: dict) -> None:
    """What the first cell's ``exec`` runs: the set-up for the cell's REPOSITORY and BRANCH. Every failure
    is a RuntimeError that says what to do (an OSError would read, to the cell, as no internet)."""
    try:
        course_setup(namespace["REPOSITORY"], namespace["BRANCH"])
    except OSError as error:
        raise RuntimeError(f"the course set-up failed: {error}. Run the cell again to retry.") from None


if "REPOSITORY" in globals() and "BRANCH" in globals():     # run by a notebook's first cell
    run_in_notebook(globals())
    del course_setup, run_in_notebook
elif __name__ == "__main__":
    import sys

    if not 2 <= len(sys.argv) <= 3 or sys.argv[1].startswith("-"):
        sys.exit("usage: python colab_setup.py OWNER/REPO [BRANCH]")
    try:
        print(course_setup(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else "main"))
    except RuntimeError as error:
        sys.exit(f"colab_setup.py: {error}")
