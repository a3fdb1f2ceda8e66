"""The catalog (helpers/kernels/catalog.py) is the one registry: it names every kernel file, every driver
variant, every lecture that shows a kernel and every exercise with its notebook, checker and kernel."""
import json
import re

from helpers import checks, course, kernels
from helpers.driver import VARIANTS     # imports no CuPy
from helpers.kernels.catalog import CATALOG, EXERCISES

LECTURES = {p.name[:2] for p in course.lecture_notebooks()}
EXERCISE_FOLDER = course.NOTEBOOKS / "exercises"


def test_every_kernel_file_once_each_headed_by_its_lecture():
    assert sorted(CATALOG) == kernels.names()
    for entry in CATALOG.values():
        assert entry.lecture in LECTURES, entry.file
        assert re.match(rf"// {entry.file}: lecture {entry.lecture}\.", kernels.canonical(entry.file)), entry.file


def test_every_variant_with_a_kernel_is_catalogued_under_its_kernel_files():
    catalogued = {v for e in CATALOG.values() for v in e.variants}
    assert catalogued == {n for n, v in VARIANTS.items() if v.kernels}     # the rest: CuPy or the libraries
    for entry in CATALOG.values():
        for name in entry.variants:
            assert entry.file in VARIANTS[name].kernels or not VARIANTS[name].kernels, (entry.file, name)


def test_every_exercise_notebook_is_catalogued_and_named_by_one_slug():
    solutions = sorted(p.name for p in EXERCISE_FOLDER.glob("*_solution.ipynb"))
    assert solutions == sorted(f"{e.notebook}_solution.ipynb" for e in EXERCISES.values())
    for number, e in EXERCISES.items():
        assert (EXERCISE_FOLDER / f"{e.notebook}.ipynb").is_file(), e.notebook        # the student version
        meta = json.loads((EXERCISE_FOLDER / f"{e.notebook}_solution.ipynb").read_text(encoding="utf-8"))
        assert meta["metadata"]["course"]["exercise"] == {"checker": e.checker, "lecture": number}
        assert number in LECTURES and callable(getattr(checks, e.checker)), e.checker
        assert e.practises is None or e.practises in CATALOG, e.practises


def test_a_kernel_exercise_has_the_student_write_the_kernel_its_slug_names():
    for e in EXERCISES.values():
        if e.inputs:
            solution = (EXERCISE_FOLDER / f"{e.notebook}_solution.ipynb").read_text(encoding="utf-8")
            assert f'__global__ void {e.kernel}(' in solution, e.notebook
            assert checks.KERNELS[e.checker] is e
    assert set(checks.KERNELS) == {e.checker for e in EXERCISES.values() if e.inputs}
