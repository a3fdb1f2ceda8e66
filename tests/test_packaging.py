"""Packaging: the licence, environment.yml in step with pyproject.toml, the declared floors pinned in
.ci/floors.txt (CI installs and tests them), no import circle among helpers' modules, and the README's
run-the-course command as the whole truth: in a fresh copy of the course, that command (all but starting
Jupyter) and ``python -m helpers.course execute`` run every CPU lecture and CPU exercise, and leave the
notebooks as they are.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from helpers import course
from helpers.course.tools import execute
from test_course import readme_block

PYPROJECT = tomllib.loads((course.ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
# pip names that conda-forge spells differently, and what only conda needs
PIP_TO_CONDA = {"cupy-cuda12x": "cupy", "nvidia-cuda-nvrtc-cu12": "cuda-nvrtc", "cuda-bindings": "cuda-bindings"}
CONDA_ONLY = {"python", "cuda-version", "pip"}
# the extras environment.yml must cover in full (an environment for running, testing and the GPU lectures)
ENVIRONMENT_EXTRAS = ["gpu", "lectures", "course", "dev"]
# set it to a virtual environment made with the README's run-the-course command to skip building one
COURSE_VENV_VARIABLE = "PAGERANK_COURSE_VENV"


def test_the_licence_is_mit_and_declared_as_an_spdx_expression():
    licence = (course.ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License")
    assert "Copyright (c) 2026 the PageRank on the GPU authors" in licence
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    setuptools = next(Requirement(r) for r in PYPROJECT["build-system"]["requires"]
                      if r.startswith("setuptools"))
    assert not setuptools.specifier.contains("76.9"), "PEP 639 licence fields need setuptools 77 or later"


def project_requirements(extras) -> list[Requirement]:
    """What installing the project with these extras asks for: the base dependencies and the extras', an
    extra that names the project itself (``pagerank-gpu-course[lectures]``) replaced by what it lists."""
    requirements, pending, seen = [Requirement(r) for r in PROJECT["dependencies"]], list(extras), set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for requirement in map(Requirement, PROJECT["optional-dependencies"][extra]):
            if requirement.name == PROJECT["name"]:
                pending += requirement.extras
            else:
                requirements.append(requirement)
    return requirements


def environment_packages() -> tuple[dict[str, str], list[str]]:
    """environment.yml's conda packages (name -> version spec) and its pip lines."""
    conda, pip, in_pip, section = {}, [], False, None
    for line in (course.ROOT / "environment.yml").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].rstrip()
        if re.fullmatch(r"\w+:.*", line):
            section = line.split(":", 1)[0]
        item = re.fullmatch(r"(\s*)- (.+)", line)
        if not item or section != "dependencies":
            continue
        indent, entry = len(item[1]), item[2].strip()
        if entry == "pip:":
            in_pip = True
        elif in_pip and indent > 2:
            pip.append(entry)
        elif indent == 2:
            in_pip = False
            name, spec = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(.*)", entry).groups()
            conda[name] = spec
    return conda, pip


def test_environment_yml_has_every_dependency_of_pyproject_with_the_same_floor():
    conda, pip = environment_packages()
    assert pip == ["-e ."], "environment.yml installs the course with pip, its dependencies with conda"
    for requirement in project_requirements(ENVIRONMENT_EXTRAS):
        name = PIP_TO_CONDA.get(requirement.name, requirement.name)
        assert name in conda, f"environment.yml lacks {name} (pyproject: {requirement})"
        assert SpecifierSet(conda[name]) == requirement.specifier, \
            f"{name}: environment.yml asks for {conda[name]!r}, pyproject for {str(requirement.specifier)!r}"
    every_extra = project_requirements(PROJECT["optional-dependencies"])
    known = {PIP_TO_CONDA.get(r.name, r.name) for r in every_extra} | CONDA_ONLY
    assert set(conda) <= known, f"in environment.yml but not in pyproject.toml: {sorted(set(conda) - known)}"
    python = conda["python"].lstrip("=")
    assert SpecifierSet(PROJECT["requires-python"]).contains(python), \
        f"python={python} is outside requires-python"


def test_the_course_extra_brings_what_the_lectures_import_and_no_widgets():
    course_names = {r.name for r in project_requirements(["course"])}
    assert {"numpy", "scipy", "matplotlib", "pandas", "tqdm", "requests", "networkx", "numba",
            "jupyterlab", "ipykernel"} <= course_names
    assert "cupy-cuda12x" not in course_names and "ipywidgets" not in course_names
    assert f"{PROJECT['name']}[lectures]" in PROJECT["optional-dependencies"]["dev"], \
        "the tests run every lecture: dev needs what the lectures import"


# --- the declared floors, tested ------------------------------------------------------------------------

FLOORS = course.ROOT / ".ci" / "floors.txt"


def floor_constraints() -> dict[str, str]:
    """.ci/floors.txt: package name -> its pin (``==1.26.*``)."""
    pins = {}
    for line in FLOORS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            requirement = Requirement(line)
            pins[requirement.name] = str(requirement.specifier)
    return pins


def test_every_declared_floor_is_pinned_for_the_floors_run():
    """CI installs [dev] under .ci/floors.txt: each floor of what that installs is pinned to its series."""
    pins = floor_constraints()
    wanted = {}
    for requirement in project_requirements(["dev"]):
        floors = [s.version for s in requirement.specifier if s.operator == ">="]
        assert floors, f"{requirement}: no floor (>=) declared"
        release = (Version(floors[0]).release + (0,))[:2]          # 8 -> 8.0: the floor's first series
        wanted[requirement.name] = f"=={release[0]}.{release[1]}.*"
        for extra in requirement.extras:           # dask[distributed]: distributed is released with dask
            wanted[extra] = wanted[requirement.name]
    assert pins == wanted, f"{FLOORS.relative_to(course.ROOT)} differs from pyproject.toml's floors"
    assert Version(pins["numpy"][2:-2]).major == 1, "the floors run tests NumPy 1, the main run NumPy 2"


def test_the_floors_run_uses_the_oldest_python_allowed():
    oldest = min(s.version for s in SpecifierSet(PROJECT["requires-python"]) if s.operator == ">=")
    assert f"python{oldest}" in (course.ROOT / ".ci" / "run").read_text(encoding="utf-8")


def copy_of_the_course(target: Path) -> Path:
    """The course as a fresh clone has it: the files git tracks (and new ones it does not ignore)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=course.ROOT, capture_output=True, text=True)
    assert listed.returncode == 0, f"needs the course as a git checkout: {listed.stderr}"
    for name in filter(None, listed.stdout.split("\0")):
        source = course.ROOT / name
        if source.is_file():                     # a file deleted in the working tree is not copied
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def fingerprint(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def shell(command: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=cwd, env=env,
                            capture_output=True, text=True)
    print(f"+ {command}\n{result.stdout[-6000:]}{result.stderr[-6000:]}")
    return result


def package_index_reachable(timeout: float = 5.0) -> bool:
    """Whether pip's index answers (CI reaches PyPI; a GPU machine without network does not)."""
    import socket
    import urllib.parse

    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple")
    if index.startswith("file:"):
        return True
    host = urllib.parse.urlsplit(index)
    try:
        socket.create_connection((host.hostname, host.port or 443), timeout=timeout).close()
        return True
    except OSError:
        return False


@pytest.mark.slow
def test_the_readme_course_command_runs_every_cpu_lecture_and_exercise(tmp_path):
    """The closing check of the README's promise, from [course] alone (not [dev]): slow, a few minutes."""
    steps = readme_block("course command").split(" && ")
    assert steps[-1].startswith("jupyter lab"), "the run-the-course command ends by starting Jupyter"
    install = " && ".join(steps[:-1])
    assert 'pip install -e ".[course]"' in install and ".[dev]" not in install

    copy = copy_of_the_course(tmp_path / "course")
    before = fingerprint(copy / "notebooks")
    # a fresh shell: not inside the test suite's own virtual environment
    outer_bin = os.path.join(os.environ["VIRTUAL_ENV"], "bin") if "VIRTUAL_ENV" in os.environ else None
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != outer_bin)
    env["PAGERANK_DATA_DIR"] = str(tmp_path / "data")         # a fresh cache, never the user's
    # offline unless a mirror is set (the suite's loopback one): lecture 30 then announces its stand-in
    env.setdefault("PAGERANK_DATA_URL", "http://127.0.0.1:9/unreachable/")
    reused = os.environ.get(COURSE_VENV_VARIABLE)
    if not reused and not package_index_reachable():
        pytest.skip("the run-the-course command installs from the package index, which this machine cannot "
                    f"reach (set {COURSE_VENV_VARIABLE} to a virtual environment made with it)")
    if reused:                                     # local iteration: the copy's code, a venv made before
        activate = f". {Path(reused) / 'bin' / 'activate'} && export PYTHONPATH={copy}"
    else:
        built = shell(install, copy, env)
        assert built.returncode == 0, f"the README's run-the-course command failed:\n{built.stderr[-4000:]}"
        activate = ". .venv/bin/activate"

    only_course = shell(f"{activate} && python -c 'import networkx, numba, pandas, nbclient, ipykernel' && "
                        "! python -c 'import pytest' 2>/dev/null && ! python -c 'import nbval' 2>/dev/null",
                        copy, env)
    assert only_course.returncode == 0, "the course's environment lacks a lecture's import or has [dev]"

    out = tmp_path / "executed"
    result = shell(f"{activate} && python -m helpers.course execute --exercises --cpu-only "
                   f"--allow-failed-checks --out {out}", copy, env)
    notebooks = course.lecture_notebooks() + course.exercise_notebooks()
    cpu = [execute.notebook_name(p) for p in notebooks if not course.needs_gpu(p)]
    gpu = [execute.notebook_name(p) for p in notebooks if course.needs_gpu(p)]
    assert result.returncode == 0, f"a CPU notebook failed:\n{result.stdout[-6000:]}"
    assert f"executed copies go to {out}" in result.stdout
    for name in cpu:
        assert f"ran {name} in " in result.stdout, f"{name} did not run"
        executed = json.loads((out / name).read_text(encoding="utf-8"))
        code = [c for c in executed["cells"] if c["cell_type"] == "code"]
        assert all(c["execution_count"] for c in code), f"{name}: a cell did not run"
        errors = [o for c in code for o in c["outputs"] if o["output_type"] == "error"]
        assert not errors, f"{name}: an error"
    for name in gpu:
        assert f"skipped {name}: needs a CUDA GPU" in result.stdout
    students = [name for name in cpu if "exercises" in name.parts and "solution" not in name.name]
    assert f"ran {len(cpu)}, skipped {len(gpu)}, failed 0; checks failed in {len(students)}: " \
           f"{', '.join(map(str, students))} (allowed: --allow-failed-checks)" in result.stdout, \
        "every untouched student version fails its check, and every solution passes"
    assert len(cpu) >= 9 and {"00_setup.ipynb", "03_cpu_baselines.ipynb", "30_snap_web_google.ipynb",
                              "exercises/33_top_k_solution.ipynb"} <= {n.as_posix() for n in cpu}
    assert fingerprint(copy / "notebooks") == before, "executing changed or added files under notebooks/"


def test_committed_logs_hold_no_carriage_return_lines():
    """A progress bar redrawn with carriage returns is noise in a committed log: each log keeps plain lines."""
    for log in (course.ROOT / "benchmarks").rglob("*.log"):
        assert b"\r" not in log.read_bytes(), f"{log.relative_to(course.ROOT)} holds carriage returns"
