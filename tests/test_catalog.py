"""The kernel catalog is the one registry: it names every .cu file, every driver variant, every kernel a
lecture shows and every GPU exercise with its checker, and everything it names exists."""
import json
import re

from test_kernels import inline_kernels

from helpers import checks, course, kernels
from helpers.course.tools import students
from helpers.driver import VARIANTS
from helpers.kernels.catalog import CATALOG, WITHOUT_KERNEL

LECTURES = {path.name[:2]: path for path in course.lecture_notebooks()}


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


def test_the_catalog_names_every_gpu_exercise_with_its_checker():
    exercises = {e.exercise: e for e in CATALOG.values() if e.exercise}
    gpu = {}
    for solution in students.solutions():
        metadata = json.loads(solution.read_text(encoding="utf-8"))["metadata"]["course"]
        if metadata["needs_gpu"]:
            gpu[students.student_path(solution).stem] = metadata["exercise"]["checker"]
    assert gpu and set(gpu) == set(exercises), f"GPU exercises {sorted(gpu)}, catalog {sorted(exercises)}"
    for name, checker in gpu.items():
        assert exercises[name].checker == checker, name
        assert callable(getattr(checks, checker, None)), f"helpers.checks.{checker} does not exist"
