"""The catalog (helpers/kernels/catalog.py) is the one registry: it names every .cu file, every driver variant,
every kernel a lecture shows and every exercise with its notebook, checker and kernel, and everything it
names exists."""
import json
import re

from test_kernels import inline_kernels

from helpers import checks, course, kernels
from helpers.checks import cpu, gpu_fused, gpu_half, gpu_pull, gpu_update, iteration, library, reorder
from helpers.driver import VARIANTS     # imports no CuPy
from helpers.kernels.catalog import CATALOG, EXERCISES, WITHOUT_KERNEL

LECTURES = {path.name[:2]: path for path in course.lecture_notebooks()}
EXERCISE_FOLDER = course.NOTEBOOKS / "exercises"


def test_the_catalog_names_every_kernel_file_and_its_lecture():
    assert sorted(CATALOG) == kernels.names()
    for entry in CATALOG.values():
        assert entry.lecture in LECTURES, f"{entry.file}: no lecture {entry.lecture}"
        header = rf"^// {entry.file}: lecture {entry.lecture}\."
        assert re.search(header, kernels.canonical(entry.file), re.MULTILINE), entry.file


def test_the_catalog_names_every_driver_variant_with_exactly_its_kernels():
    named = {name for entry in CATALOG.values() for name in entry.variants}
    assert named | set(WITHOUT_KERNEL) == set(VARIANTS) and not named & set(WITHOUT_KERNEL)
    for name, variant in VARIANTS.items():
        files = {entry.file for entry in CATALOG.values() if name in entry.variants}
        assert files == set(variant.kernels), f"{name} launches {variant.kernels}; the catalog says {files}"


def test_every_kernel_a_lecture_shows_is_in_the_catalog_under_a_lecture_that_names_it():
    shown = {}
    for notebook, code in inline_kernels():
        file = re.search(r"^//\s*(\w+):", code.strip(), re.MULTILINE).group(1)
        shown.setdefault(file, set()).add(notebook)
    assert shown and set(shown) <= set(CATALOG), sorted(set(shown) - set(CATALOG))
    for file, notebooks in shown.items():
        home = LECTURES[CATALOG[file].lecture]
        assert home.name in notebooks or file in home.read_text(encoding="utf-8"), \
            f"{file} is shown in {sorted(notebooks)}; its catalog lecture {home.name} neither shows nor names it"
    for notebook in {name for names in shown.values() for name in names}:
        assert any(LECTURES[e.lecture].name == notebook for e in CATALOG.values()), notebook


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
    exported = {name for module in (cpu, gpu_fused, gpu_half, gpu_pull, gpu_update, iteration, library, reorder)
                for name in module.__all__}
    assert exported == {e.checker for e in EXERCISES.values()}     # no checker the catalog does not name
