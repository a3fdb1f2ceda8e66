"""Test-wide switches: GPU tests and GPU notebooks are skipped, with a short reason, where there is no GPU,
and the run ends with each skip reason once, counted; lecture 30 downloads from a loopback server that
serves a generated web-Google-sized SNAP file, checked against that file's own structure statistics
(announced in the run) instead of SNAP's published ones, and named as what it is wherever a lecture prints
the graph's name."""
import json
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

from helpers import course, gpu

_mirror = {}


def _start_web_google_mirror():
    """Serve a generated file with web-Google's counts and sparse ids; point the data settings at it. The
    generated graph is not SNAP's, so its statistics, and the name a loaded graph carries (never
    "web-Google"), go to a file that $PAGERANK_DATA_STATISTICS names."""
    from helpers import datasets
    from helpers.generators import rmat_graph
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


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """The mirror's settings are in force for lecture 30's kernel alone: every other lecture loads what a
    student's machine would (its cache or the announced stand-in), never the mirror's generated file."""
    if not _mirror or not str(item.path).endswith(".ipynb"):
        return
    for key, value in _mirror["settings"].items():
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


def pytest_collection_modifyitems(config, items):
    if "PAGERANK_DATA_URL" not in os.environ and any(item.path.name.startswith("30_") for item in items):
        _start_web_google_mirror()
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
    compiled = getattr(sys.modules.get("test_kernels"), "COMPILED", None)   # only where those tests ran
    if compiled:
        from helpers.kernels import T4_ARCH, nvrtc_version

        terminalreporter.write_line(f"NVRTC {nvrtc_version()} compiled for {T4_ARCH} (T4, sm_75), "
                                    f"{len(compiled)} sources: {', '.join(compiled)}")
