"""The helpers' layers: every import (function-level ones too) points down a floor, and no modules import
each other in a circle. docs/conventions.md draws the floors."""
import ast
from pathlib import Path

import pytest

HELPERS = Path(__file__).resolve().parent.parent / "helpers"
# bottom up; folders on one floor may not import each other
FLOORS = [{"core"}, {"data", "measure"}, {"kernels"}, {"driver"}, {"checks", "lectures", "multigpu"},
          {"bench", "course"}]
FLOOR = {folder: i for i, floor in enumerate(FLOORS) for folder in floor}


def module_name(path: Path) -> str:
    parts = path.relative_to(HELPERS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """helpers' modules -> the helpers modules each imports, from the source: every import statement,
    those inside functions too, relative ones resolved; ``from P import name`` counts as importing P.name
    where that is a module, else P."""
    modules = {module_name(p): p for p in HELPERS.rglob("*.py")}
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                for alias in node.names:
                    targets.append(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
            for target in targets:
                while target and target not in modules:      # helpers.measure.gpu.x -> helpers.measure.gpu
                    target = target.rpartition(".")[0]
                if target and target != name and target != "helpers":
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle per group of modules that import one another (Tarjan's strongly connected components)."""
    index, low, stack, on_stack, groups, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    found = []
    for group in groups:                            # a concrete circle through the group, to name it
        path, members = [group[0]], set(group)
        while True:
            nxt = sorted(graph[path[-1]] & members)
            step = next((n for n in nxt if n == group[0] and len(path) > 1), None)
            if step:
                break
            nxt = [n for n in nxt if n not in path] or nxt
            path.append(nxt[0])
            if path[-1] == group[0] or len(path) > len(group) + 1:
                break
        found.append(path + [group[0]] if path[-1] != group[0] else path)
    return found


def test_the_import_graph_sees_function_level_and_relative_imports():
    graph = import_graph()
    assert {"helpers.measure.gpu", "helpers.measure.cpu", "helpers.data.settings"} <= graph["helpers.course"]
    wanted = {"helpers.course", "helpers.course.tools.students", "helpers.course.tools.files"}
    assert wanted <= graph["helpers.course.tools.sync"]
    assert "helpers.course.tools.sync" in graph["helpers.course.__main__"]     # imported inside main()
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_helpers_modules_form_no_import_circle():
    found = cycles(import_graph())
    assert not found, "import circles: " + "; ".join(" -> ".join(c) for c in found)


def test_the_course_runtime_imports_no_tooling_and_is_in_no_circle():
    graph = import_graph()
    reachable, pending = set(), ["helpers.course"]
    while pending:
        for nxt in graph[pending.pop()] - reachable:
            reachable.add(nxt)
            pending.append(nxt)
    tooling = {f"helpers.course.tools.{name}" for name in ("sync", "execute", "students")} | {"helpers.course.__main__"}
    assert not reachable & tooling, f"the runtime reaches {sorted(reachable & tooling)}"
    mine = [c for c in cycles(graph) if any(m.startswith(("helpers.course", "helpers.core.cli")) for m in c)]
    assert not mine, mine


def folder(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Imports from one folder into another that is not on a lower floor."""
    return [f"{a} imports {b}: {folder(b)}/ is not below {folder(a)}/" for a, targets in sorted(graph.items())
            for b in sorted(targets) if folder(a) != folder(b) and FLOOR[folder(b)] >= FLOOR[folder(a)]]


def test_every_module_is_in_a_layer_folder():
    folders = {p.name for p in HELPERS.iterdir() if (p / "__init__.py").exists()}
    assert folders == set(FLOOR)
    loose = sorted(p.name for p in HELPERS.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"modules outside a layer folder: {loose}"


def test_imports_point_down():
    assert upward(import_graph()) == []


@pytest.mark.parametrize("a, b, expected", [
    ("helpers.core.graph", "helpers.driver.device", "driver/ is not below core/"),              # upward
    ("helpers.lectures.l10_hubs", "helpers.multigpu.worker", "multigpu/ is not below lectures/"),  # sideways
])
def test_a_planted_upward_import_fails(a, b, expected):
    graph = import_graph()
    graph[a] = graph[a] | {b}
    assert [v for v in upward(graph) if expected in v]


def test_a_planted_circle_fails():
    graph = import_graph()
    graph["helpers.driver.device"] = graph["helpers.driver.device"] | {"helpers.driver.iteration"}
    assert ["helpers.driver.device", "helpers.driver.iteration", "helpers.driver.device"] in cycles(graph)
