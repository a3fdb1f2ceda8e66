"""The lane stride an exercise prescribes, read from a kernel's source for ``checks.lint``: in the loops that
read a row (``in_sources``), lane l takes elements l, l + stride, ... (the stride a number, a constant,
``warpSize`` or a parameter such as ``width``); a stride it cannot evaluate is not judged.
"""
from __future__ import annotations

from helpers.checks.cuda import Function, Node, number, parse_expression, statement_expressions, walk
from helpers.checks.flow import constants_of

LANE_STRIDE = ("the lanes do not stride the in-links by {stride} as the exercise prescribes (this loop "
               "steps by {got}): lane l must take in-links l, l + {stride}, ..., so that the lanes of a "
               "warp read consecutive in_sources together (one coalesced load); contiguous chunks per "
               "lane, or any other split, can give the right sums but scatter every load")


def _loop_step(node: Node) -> tuple[str, object] | None:
    """(variable, stride expression) of a loop's increment: ``k += s``, ``k = k + s``, ``++k``, ``k++``;
    for a while loop, the increment among its body's statements of a variable its condition reads."""
    candidates = [parse_expression(node.step)] if node.step else []
    if not node.step and node.body and node.body[0] is not None:
        body = node.body[0].body if node.body[0].kind == "block" else [node.body[0]]
        in_condition = {sub[1] for sub in walk(parse_expression(node.toks)) if sub[0] == "id"}
        candidates = [e for item in body if item.kind == "simple" for e in statement_expressions(item)
                      if any(sub[0] in ("assign", "unary") for sub in walk(e))
                      and {sub[1] for sub in walk(e) if sub[0] == "id"} & in_condition]
    for expression in candidates:
        if expression[0] == "assign" and expression[2][0] == "id":
            name, value = expression[2][1], expression[3]
            if expression[1] == "+=":
                return name, value
            if expression[1] == "=" and value[0] == "bin" and value[1] == "+":
                if value[2] == ("id", name):
                    return name, value[3]
                if value[3] == ("id", name):
                    return name, value[2]
        if expression[0] == "unary" and expression[1] == "++" and expression[2][0] == "id":
            return expression[2][1], ("num", "1")
    return None


def _stride(node, constants: dict[str, int], aliases: dict[str, object]) -> str | None:
    """The stride as the lint compares it: a number ('32'), a name ('width'), or None if it cannot tell."""
    for _ in range(4):
        if node[0] == "id" and node[1] in aliases:
            node = aliases[node[1]]
    value = number(node)
    if value is None and node[0] == "id":
        value = constants.get(node[1], 32 if node[1] == "warpSize" else None)
        if value is None:
            return node[1]
    return None if value is None else str(value)


def assignments(node: Node, found: dict[str, list]) -> dict[str, list]:
    """Every variable assigned anywhere in ``node``, with the expressions assigned to it."""
    if node is None:
        return found
    items = statement_expressions(node) if node.kind == "simple" else []
    if node.kind == "loop" and node.init:
        items += statement_expressions(Node("simple", node.line, node.init, []))
    for expression in items:
        for sub in walk(expression):
            if sub[0] == "assign" and sub[2][0] == "id":
                found.setdefault(sub[2][1], []).append(sub[3])
    for child in node.body:
        assignments(child, found)
    return found


def lane_strides(fn: Function, prescribed: str, row: str) -> list[tuple[int, str]]:
    """(line, cause) of each loop over the array ``row`` whose stride is not ``prescribed``."""
    constants = constants_of(fn)
    everywhere = assignments(fn.body, {})
    aliases = {name: values[0] for name, values in everywhere.items()
               if len(values) == 1 and values[0][0] == "id"}
    hazards: list[tuple[int, str]] = []

    def ids(expression) -> set[str]:
        return {sub[1] for sub in walk(expression) if sub[0] == "id"}

    def reads(node: Node) -> list:
        exprs = statement_expressions(node) if node.kind == "simple" else (
            [parse_expression(node.toks)] if node.kind in ("if", "loop", "return") and node.toks else [])
        return [sub[2] for e in exprs for sub in walk(e) if sub[0] == "index" and sub[1] == ("id", row)]

    def visit(node: Node, loops: list) -> None:
        if node is None:
            return
        for index in reads(node):
            for loop, var, stride in reversed(loops):
                assigned = assignments(loop.body[0], {})
                depends = {var}
                for _ in range(4):
                    depends |= {name for name, values in assigned.items()
                                if any(ids(v) & depends for v in values)}
                if ids(index) & depends:
                    got = _stride(stride, constants, aliases)
                    if got is not None and got != prescribed:
                        cause = LANE_STRIDE.format(stride=prescribed, got=got)
                        hazards.append((loop.line, cause))
                    break
        if node.kind == "loop":
            step = _loop_step(node)
            inner = loops + [(node, step[0], step[1])] if step else loops
            visit(node.body[0], inner)
            return
        for child in node.body:
            visit(child, loops)

    visit(fn.body, [])
    return hazards
