"""Test-wide switches.

- The lectures run at the test scale ($PAGERANK_SCALE=test, unless it is set): smaller graphs and fewer
  trials, every cell and every check.
- Tests run in parallel (pytest-xdist, ``-n auto`` in pyproject.toml), a notebook's cells in order on one
  worker; an item whose result depends on timings (a test marked ``timing``, a cell of a notebook whose
  metadata says ``course.times``) runs alone: it holds the run's lock exclusively, every other item holds
  it shared. Other notebooks print timings but check none: they run beside other tests.
- GPU tests and GPU notebooks are skipped, with a short reason, where there is no GPU, and the run ends with
  each skip reason once, counted, and one line on the kernels NVRTC compiled (``-v`` lists them).
- Lecture 30 downloads from a loopback server that serves a generated web-Google-sized SNAP file, checked
  against that file's own structure statistics (announced in the run) instead of SNAP's published ones,
  and named as what it is wherever a lecture prints the graph's name.
"""
import contextlib
import fcntl
import json
import os
import re
import shutil
import tempfile
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

from helpers import course
from helpers.measure import gpu

_mirror = {}
NVRTC_PROPERTY = "nvrtc"      # a test that compiled a source with NVRTC records it under this name
LOCK_VARIABLE = "PAGERANK_TEST_LOCK"    # the folder of this run's lock, for its xdist workers


@pytest.fixture
def nvrtc_compiled(request):
    """``nvrtc_compiled(name)``: this test compiled ``name`` with NVRTC (the run's last lines count them)."""
    return lambda name: request.node.user_properties.append((NVRTC_PROPERTY, name))


def pytest_configure(config):
    os.environ.setdefault(course.SCALE_VARIABLE, "test")      # notebooks' kernels inherit it
    if not hasattr(config, "workerinput"):                    # the controller, or a run without workers
        os.environ[LOCK_VARIABLE] = tempfile.mkdtemp(prefix="pagerank-tests-")


class MachineLock:
    """One lock for the whole test run, across xdist's workers: ``alone()`` holds it exclusively, ``beside()``
    shared. A gate taken first gives a waiting exclusive holder priority over new shared ones."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.gate = open(folder / "gate", "a+")
        self.lock = open(folder / "lock", "a+")

    def close(self):
        self.gate.close()
        self.lock.close()

    @contextlib.contextmanager
    def alone(self):
        fcntl.flock(self.gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self.lock, fcntl.LOCK_UN)
        finally:
            fcntl.flock(self.gate, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def beside(self):
        fcntl.flock(self.gate, fcntl.LOCK_EX)
        fcntl.flock(self.lock, fcntl.LOCK_SH)
        fcntl.flock(self.gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self.lock, fcntl.LOCK_UN)


def pytest_unconfigure(config):
    if machine_lock.cache_info().currsize:
        machine_lock().close()
    if not hasattr(config, "workerinput") and os.environ.get(LOCK_VARIABLE):
        shutil.rmtree(os.environ.pop(LOCK_VARIABLE), ignore_errors=True)


@lru_cache(maxsize=None)
def machine_lock() -> MachineLock:
    """The lock this run's processes share: the controller makes it, its xdist workers inherit its folder. A
    pytest run started from a test (a nested run) makes its own: sharing the outer run's would deadlock."""
    return MachineLock(Path(os.environ[LOCK_VARIABLE]))


@lru_cache(maxsize=None)
def _notebook_times(path: str) -> bool:
    return course.times(Path(path))


def runs_alone(item, phase: str) -> bool:
    """Whether this phase of an item must run alone: a timing test (all of it), or a cell of a notebook
    whose checks depend on timings (its run; a notebook's first setup starts its kernel, which need not)."""
    if str(item.path).endswith(".ipynb"):
        return phase == "call" and _notebook_times(str(item.path))
    return item.get_closest_marker("timing") is not None


def held(item, phase: str):
    """The lock as this phase of the item holds it."""
    return machine_lock().alone() if runs_alone(item, phase) else machine_lock().beside()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    mirror_settings(item)
    with held(item, "setup"):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with held(item, "call"):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    with held(item, "teardown"):
        yield


def pytest_sessionstart(session):
    """Before any worker starts, on a GPU machine: build the web-Google stand-in once into the data cache,
    where exercise 31's checker loads it (its notebooks would otherwise each generate it)."""
    config = session.config
    if hasattr(config, "workerinput") or not gpu.has_gpu() or not any(
            "notebooks" in Path(str(a)).resolve().parts or Path(str(a)).resolve() == course.ROOT
            for a in config.args):
        return
    from helpers.data import datasets

    try:
        datasets.standin("web-Google", progress=False, verbose=False)
    except Exception:                 # no cache to keep it in: each lecture makes its own, as a student's would
        pass


def _start_web_google_mirror():
    """Serve a generated file with web-Google's counts and sparse ids; point the data settings at it. The
    generated graph is not SNAP's, so its statistics, and the name a loaded graph carries (never
    "web-Google"), go to a file that $PAGERANK_DATA_STATISTICS names."""
    from helpers.data import datasets
    from helpers.core.generators import rmat_graph
    from snapserver import SnapServer, snap_file

    folder = Path(tempfile.mkdtemp(prefix="pagerank-mirror-"))
    ds = datasets.DATASETS["web-Google"]
    name = (f"generated R-MAT graph from the test mirror ({ds.vertices:,} vertices, "
            f"{ds.listed_edges:,} edges)")
    graph = rmat_graph(ds.vertices, ds.listed_edges, seed=2002, name=name)
    server = SnapServer()
    server.serve(ds.filename, snap_file(graph, folder / ds.filename, id_space=916_428).read_bytes())
    statistics = folder / "statistics.json"
    entry = {**datasets.statistics_of(graph, undirected=not ds.directed), datasets.DISPLAY_NAME: name}
    statistics.write_text(json.dumps({ds.name: entry}))
    settings = {datasets.STATISTICS_VARIABLE: str(statistics), datasets.BASE_URL_VARIABLE: server.url,
                "PAGERANK_DATA_DIR": str(folder / "data")}     # never the user's own cache
    _mirror.update(server=server, folder=folder, settings=settings)


def mirror_settings(item):
    """The mirror's settings are in force for lecture 30's kernel alone (the mirror starts with its first
    cell, on the worker that runs it): every other lecture loads what a student's machine would (its cache
    or the announced stand-in), never the mirror's generated file."""
    if not str(item.path).endswith(".ipynb"):
        return
    if item.path.name.startswith("30_") and not _mirror and "PAGERANK_DATA_URL" not in os.environ:
        _start_web_google_mirror()
    for key, value in _mirror.get("settings", {}).items():
        if item.path.name.startswith("30_"):
            os.environ[key] = value
        else:
            os.environ.pop(key, None)


def gpu_skip_reason(description: str) -> str:
    """The one short reason a GPU test is skipped: "needs a CUDA GPU (none: CuPy is not installed)". The
    advice for students (Colab's runtime menu, the gpu extra) is the notebooks' report, not every test's."""
    detail = re.search(r"\(Detail: (.*)\)\s*$", description)
    why = detail.group(1) if detail else description
    why = re.split(r", so |\.\s*$", why.strip(), maxsplit=1)[0].strip()
    return f"needs a CUDA GPU (none: {why})"


def skip_summary(reasons) -> list[str]:
    """One line per skip reason, most frequent first, with how many tests it skipped."""
    counts = Counter(reasons)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [f"SKIPPED [{n}] {reason}" for reason, n in ordered]


def skip_reason(report) -> str:
    """The reason pytest recorded for a skipped test report."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


@lru_cache(maxsize=None)
def _notebook_needs_gpu(path: str) -> bool:
    return course.needs_gpu(Path(path))       # once per notebook, not once per cell


def pytest_xdist_make_scheduler(config, log):
    """With ``--dist loadgroup`` (pyproject.toml): each notebook's cells go to one worker, in order (they
    share its kernel); every other test is a unit of its own. xdist's own grouping (``xdist_group`` marks)
    renames node ids in a way that pytest 9.2 does not see, so the grouping is done here, by file."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class NotebooksTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return file if file.endswith(".ipynb") else nodeid

    return NotebooksTogether(config, log)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` first (after the notebooks, which the scheduler sends first), so that none of
    them is what the run waits for at its end; where there is no GPU, GPU tests and GPU notebooks are
    skipped with one short reason."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)       # stable: else as collected
    status = gpu.gpu_status()
    if status.available:
        return
    skip = pytest.mark.skip(reason=gpu_skip_reason(status.description))
    for item in items:
        path = str(item.path)
        if "gpu" in item.keywords or (path.endswith(".ipynb") and _notebook_needs_gpu(path)):
            item.add_marker(skip)


def pytest_sessionfinish(session):
    if _mirror:
        _mirror["server"].close()
        shutil.rmtree(_mirror["folder"], ignore_errors=True)


def pytest_terminal_summary(terminalreporter):
    skipped = terminalreporter.stats.get("skipped", [])
    if skipped and "s" not in terminalreporter.reportchars:      # -rs lists them file by file instead
        terminalreporter.section("skipped tests, by reason", sep="-")
        for line in skip_summary(skip_reason(report) for report in skipped):
            terminalreporter.write_line(line)
    compiled = [value for report in terminalreporter.stats.get("passed", [])
                for name, value in report.user_properties if name == NVRTC_PROPERTY]
    if compiled:
        from helpers.kernels import T4_ARCH, nvrtc_version

        verbose = terminalreporter.config.get_verbosity() > 0
        terminalreporter.write_line(f"NVRTC {nvrtc_version()} compiled {len(compiled)} sources for {T4_ARCH} "
                                    f"(a T4, sm_75){':' if verbose else '; -v lists them'}")
        if verbose:
            for name in sorted(compiled):
                terminalreporter.write_line(f"  {name}")
