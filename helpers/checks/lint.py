"""Reading a student's CUDA source for warp-synchronous hazards that give the right numbers today and are
undefined behaviour since Volta's independent thread scheduling (they can break on another GPU, driver
or compiler): a shuffle whose mask leaves out lanes that reach it, a shuffle after some lanes returned or
inside code that only some lanes run, ``__activemask()`` used as a mask, and the steps of a shared-memory
reduction with no ``__syncwarp()``/``__syncthreads()`` between them.

Comments are removed first, then each function body is parsed into statements, and a small data-flow
pass tells warp-uniform values (blockIdx, parameters, ``(... + threadIdx.x) / 32``, loads at uniform
indices) from values that differ between the lanes of a warp (``threadIdx.x % 32``, anything derived).
Blind spots: conditions the pass cannot see through (helper functions are taken at their arguments'
word), a race within one step of a shared-memory reduction, loops that run the same number of times in
every lane although their counter differs between lanes.
"""
from __future__ import annotations

from dataclasses import dataclass

from .checks_cuda import (Function, Node, Tok, functions, number, parse_expression,
                          statement_expressions, walk)

U, L, V = 0, 1, 2       # warp-uniform, lane-linear (uniform + threadIdx.x), varying between lanes

COLLECTIVES = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__syncwarp",
               "__ballot_sync", "__all_sync", "__any_sync", "__match_any_sync", "__match_all_sync"}
SYNCS = {"__syncthreads", "__syncwarp", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"}
UNIFORM_CALLS = {"__ballot_sync", "__all_sync", "__any_sync"}
VARYING_CALLS = {"__activemask", "clock", "clock64", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
                 "__shfl_xor_sync", "__match_any_sync", "atomicAdd", "atomicSub", "atomicMax", "atomicMin",
                 "atomicExch", "atomicCAS", "atomicInc", "atomicDec", "atomicAnd", "atomicOr", "atomicXor"}
ACTIVEMASK = ("__activemask() used as a mask: it reports which lanes happen to run together at that moment, "
              "not which lanes must take part, so after any divergence lanes that reach the shuffle a moment "
              "later are left out and what is read from them is undefined; use 0xffffffff with every lane "
              "reaching the shuffle (or a mask from __ballot_sync taken before the branch)")
PARTIAL = ("the mask {mask} leaves out lanes that reach this {call} too: a lane outside the mask that executes "
           "it, or whose value is read, is undefined behaviour")
AFTER_RETURN = ("a {call} after some lanes of the warp may have returned (line {line}): lanes that returned do "
                "not take part, yet the mask names them, and the values read from them are undefined; let every "
                "lane reach the {call} (guard the work, not the shuffle)")
DIVERGENT = ("a {call} inside code that only some lanes of the warp run (the condition on line {line} differs "
             "between lanes): the mask names lanes that never arrive; move the {call} out of the branch or loop "
             "so that every lane executes it")
NO_SYNC = ("steps of a shared-memory reduction with no __syncwarp() or __syncthreads() between them (also on "
           "line {line}): since Volta the lanes of a warp are not in lockstep, so a lane can read a partial sum "
           "before another lane has written it (volatile does not order them)")
UB = (" — undefined behaviour since Volta's independent thread scheduling: it usually gives the right numbers "
      "on today's GPUs, and can break on another GPU, driver or compiler")


@dataclass(frozen=True)
class Hazard:
    line: int          # line in the student's source
    text: str          # that line
    cause: str         # what is wrong and why it matters


# --- uniformity ------------------------------------------------------------------------------------

class Uniformity:
    """Which variables of a function hold the same value in every lane of a warp, found by iterating
    over every assignment until nothing changes (flow-insensitive, control dependences included)."""

    def __init__(self, function: Function, constants: dict[str, int]):
        self.state = {p: U for p in function.params}
        self.constants = dict(constants)
        self.assigned: dict[str, list] = {}
        self.body = function.body
        for _ in range(12):
            before = dict(self.state)
            self._visit(self.body, U)
            if before == self.state:
                break

    def of(self, node) -> int:
        kind = node[0]
        if kind == "num":
            return U
        if kind == "id":
            return self.state.get(node[1], U) if node[1] not in ("threadIdx",) else L
        if kind == "member":
            base = node[1]
            if base[0] == "id" and base[1] == "threadIdx":
                return L if node[2] == "x" else U
            if base[0] == "id" and base[1] in ("blockIdx", "blockDim", "gridDim"):
                return U
            return self._flat(self.of(base))
        if kind == "call":
            name = node[1]
            if name in UNIFORM_CALLS:
                return U
            if name in VARYING_CALLS:
                return V
            return max([self._flat(self.of(a)) for a in node[2]], default=U)
        if kind == "index":
            index = self.of(node[2])
            return V if index != U else self._flat(self.of(node[1]))
        if kind == "cast":
            return self.of(node[1])
        if kind == "unary":
            inner = self.of(node[2])
            return inner if node[1] in ("+", "++", "--") and inner == L else self._flat(inner)
        if kind == "cond":
            return max(self._flat(self.of(node[1])), self._flat(self.of(node[2])), self._flat(self.of(node[3])))
        if kind == "assign":
            return self.of(node[3])
        if kind == "bin":
            op, a, b = node[1], self.of(node[2]), self.of(node[3])
            if V in (a, b):
                return V
            if op in ("+", "-") and {a, b} == {U, L} and not (op == "-" and b == L):
                return L
            if op in ("<", ">=", "<=", ">") and {a, b} == {U, L}:        # threadIdx.x < 32: whole warps
                bound = self._value(node[3] if b == U else node[2])
                edge = 0 if (op in ("<", ">=")) == (b == U) else 31
                return U if bound is not None and bound % 32 == edge else V
            if op in ("/", ">>") and a == L and b == U:
                divisor = self._value(node[3])
                if divisor is not None and ((op == "/" and divisor % 32 == 0 and divisor > 0) or
                                            (op == ">>" and divisor >= 5)):
                    return U
                if op == "/" and node[3][0] == "id" and node[3][1] == "warpSize":
                    return U
                return V
            return U if a == b == U else V
        return U

    @staticmethod
    def _flat(state: int) -> int:
        return V if state == L else state

    def _value(self, node) -> int | None:
        value = number(node)
        if value is None and node[0] == "id":
            value = self.constants.get(node[1])
        return value

    def _assign(self, target, state: int, value=None) -> None:
        while target[0] in ("index", "member", "unary", "cast"):
            target = target[1] if target[0] in ("index", "member", "cast") else target[2]
        if target[0] == "id":
            name = target[1]
            if value is not None:
                self.assigned.setdefault(name, [])
                if value not in self.assigned[name]:
                    self.assigned[name].append(value)
            self.state[name] = max(self.state.get(name, U), state)

    def _expression(self, node, control: int) -> None:
        for sub in walk(node):
            if sub[0] == "assign":
                state = self.of(sub[3]) if sub[1] == "=" else max(self.of(sub[2]), self._flat(self.of(sub[3])))
                if sub[1] != "=" and state == L:
                    state = V
                self._assign(sub[2], max(state, control), sub[3] if sub[1] == "=" else None)
            elif sub[0] == "decl":
                self.state.setdefault(sub[1], U)
            elif sub[0] == "unary" and sub[1] in ("++", "--"):
                self._assign(sub[2], max(self._flat(self.of(sub[2])), control))

    def _visit(self, node: Node, control: int) -> None:
        if node is None:
            return
        if node.kind == "block":
            for item in node.body:
                self._visit(item, control)
        elif node.kind in ("simple", "return"):
            for expression in statement_expressions(node) if node.kind == "simple" else [parse_expression(node.toks[1:])]:
                self._expression(expression, control)
        elif node.kind == "if":
            inner = max(control, self._flat(self.of(parse_expression(node.toks))))
            for child in node.body:
                self._visit(child, inner)
        elif node.kind == "loop":
            self._visit_init_declaration(node, control)
            inner = max(control, self._flat(self.of(parse_expression(node.toks))))
            self._expression(parse_expression(node.step or []), inner)
            self._visit(node.body[0], inner)

    def _visit_init_declaration(self, node: Node, control: int) -> None:
        if node.init:
            for expression in statement_expressions(Node("simple", node.line, node.init, [])):
                self._expression(expression, control)

    def condition(self, toks: list[Tok]) -> int:
        return self._flat(self.of(parse_expression(toks)))


def _constants(function: Function) -> dict[str, int]:
    """Variables assigned exactly once, from an integer literal (const int W = 32; unsigned FULL = ~0u)."""
    values: dict[str, list] = {}

    def visit(node):
        if node is None:
            return
        if node.kind == "simple":
            for e in statement_expressions(node):
                for sub in walk(e):
                    if sub[0] == "assign" and sub[2][0] == "id":
                        values.setdefault(sub[2][1], []).append(number(sub[3]) if sub[1] == "=" else None)
        for child in node.body:
            visit(child)

    visit(function.body)
    return {name: found[0] for name, found in values.items() if len(found) == 1 and found[0] is not None}


# --- the rules -------------------------------------------------------------------------------------

def _mask(node, constants: dict[str, int], assigned: dict[str, list]) -> tuple[str, int | None]:
    """('full' | 'partial' | 'active' | 'computed', value) of a collective's mask argument."""
    value = number(node)
    if value is None and node[0] == "id":
        value = constants.get(node[1])
        if value is None and any(v[0] == "call" and v[1] == "__activemask" for v in assigned.get(node[1], [])):
            return "active", None
    if node[0] == "call" and node[1] == "__activemask":
        return "active", None
    if value is None:
        return "computed", None
    return ("full" if value & 0xFFFFFFFF == 0xFFFFFFFF else "partial"), value & 0xFFFFFFFF


def _calls(expression):
    return [sub for sub in walk(expression) if sub[0] == "call"]


def lint(code: str, function: str | None = None) -> list[Hazard]:
    """Warp-synchronous hazards in ``code``, each with its line and cause; [] when none is found or the
    source cannot be read (then the compiler will say what is wrong)."""
    try:
        found, _ = functions(code)
    except (ValueError, IndexError, RecursionError):
        return []
    lines = code.split("\n")
    collective_helpers = {f.name for f in found if not f.kernel and _has_collective(f.body)}
    hazards: list[Hazard] = []
    for fn in found:
        if function is not None and fn.kernel and fn.name != function:
            continue
        try:
            hazards += _lint_function(fn, collective_helpers, lines)
        except (ValueError, IndexError, RecursionError):
            continue
    unique, seen = [], set()
    for hazard in hazards:
        if (hazard.line, hazard.cause) not in seen:
            seen.add((hazard.line, hazard.cause))
            unique.append(hazard)
    return unique


def _has_collective(node: Node) -> bool:
    if node is None:
        return False
    toks = node.toks + (node.init or []) + (node.step or [])
    return any(t.text in COLLECTIVES for t in toks) or any(_has_collective(c) for c in node.body)


def _lint_function(fn: Function, helpers: set[str], lines: list[str]) -> list[Hazard]:
    constants = _constants(fn)
    uni = Uniformity(fn, constants)
    hazards: list[Hazard] = []
    returns: list[int] = []            # lines of returns that only some lanes of a warp take

    def hazard(line: int, cause: str) -> None:
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        hazards.append(Hazard(line, text, cause + UB))

    def sites(expression, line: int, divergent: int | None) -> None:
        for call in _calls(expression):
            name = call[1]
            if name not in COLLECTIVES and name not in helpers:
                continue
            shown = "__syncwarp()" if name == "__syncwarp" else (f"{name}()" if name in COLLECTIVES else
                                                                   f"call of {name}() (it shuffles)")
            if name in COLLECTIVES and call[2]:
                kind, value = _mask(call[2][0], constants, uni.assigned)
            elif name in COLLECTIVES:
                kind, value = "full", 0xFFFFFFFF          # __syncwarp() without a mask
            else:
                kind, value = "full", None
            if kind == "active":
                hazard(line, ACTIVEMASK)
                continue
            if kind == "computed":
                continue
            if kind == "partial" and divergent is None and not returns:
                hazard(line, PARTIAL.format(mask=f"0x{value:08x}", call=shown))
            if kind == "full" and divergent is not None:
                hazard(line, DIVERGENT.format(call=shown, line=divergent))
            elif kind == "full" and returns:
                hazard(line, AFTER_RETURN.format(call=shown, line=returns[0]))

    def visit(node: Node, divergent: int | None) -> None:
        if node is None:
            return
        if node.kind == "block":
            for item in node.body:
                visit(item, divergent)
        elif node.kind == "simple":
            for expression in statement_expressions(node):
                sites(expression, node.line, divergent)
        elif node.kind == "return":
            sites(parse_expression(node.toks[1:]), node.line, divergent)
            if divergent is not None:
                returns.append(node.line)
        elif node.kind == "if":
            sites(parse_expression(node.toks), node.line, divergent)
            inner = divergent if divergent is not None or uni.condition(node.toks) == U else node.line
            for child in node.body:
                visit(child, inner)
        elif node.kind == "loop":
            for expression in statement_expressions(Node("simple", node.line, node.init or [], [])):
                sites(expression, node.line, divergent)
            inner = divergent if divergent is not None or uni.condition(node.toks) == U else node.line
            sites(parse_expression(node.toks), node.line, inner)
            visit(node.body[0], inner)
            sites(parse_expression(node.step or []), node.line, inner)

    visit(fn.body, None)
    hazards += _shared_steps(fn, lines)
    return hazards


# --- shared-memory reduction steps -----------------------------------------------------------------

def _shared_names(fn: Function) -> set[str]:
    """Arrays declared __shared__ and pointers set from them."""
    names: set[str] = set()

    def visit(node):
        if node is None:
            return
        if node.kind == "simple" and any(t.text == "__shared__" for t in node.toks):
            names.update(e[1] if e[0] == "decl" else e[2][1] for e in statement_expressions(node)
                         if e[0] == "decl" or (e[0] == "assign" and e[2][0] == "id"))
        for child in node.body:
            visit(child)

    visit(fn.body)
    for _ in range(3):                                   # aliases: volatile float* s = partial;
        def alias(node):
            if node is None:
                return
            if node.kind == "simple":
                for e in statement_expressions(node):
                    if e[0] == "assign" and e[2][0] == "id":
                        roots = {s[1] for s in walk(e[3]) if s[0] == "id"}
                        if roots & names and e[3][0] in ("id", "unary", "bin", "cast"):
                            names.add(e[2][1])
            for child in node.body:
                alias(child)
        alias(fn.body)
    return names


def _is_step(node: Node, shared: set[str], uni: Uniformity) -> bool:
    """A statement by which each thread writes its own element of a shared array from another element of
    it (a thread writing one fixed element, as a serial sum by thread 0 does, is no step)."""
    if node is None:
        return False
    if node.kind == "if" and node.body[1] is None:
        return _is_step(node.body[0], shared, uni)
    if node.kind == "block" and len(node.body) == 1:
        return _is_step(node.body[0], shared, uni)
    if node.kind != "simple":
        return False
    for expression in statement_expressions(node):
        for sub in walk(expression):
            if sub[0] == "assign" and sub[2][0] == "index" and _root(sub[2]) in shared and uni.of(sub[2][2]) != U:
                target = repr(sub[2][2])
                reads = [r for r in walk(sub[3]) if r[0] == "index" and _root(r) in shared]
                if any(repr(r[2]) != target for r in reads) or (sub[1] != "=" and reads):
                    return True
    return False


def _root(node) -> str | None:
    while node[0] in ("index", "member", "cast"):
        node = node[1]
    return node[1] if node[0] == "id" else None


def _has_sync(node: Node) -> bool:
    if node is None:
        return False
    toks = node.toks + (node.init or []) + (node.step or [])
    if any(t.text in SYNCS for t in toks) or any(toks[i].text == "." and toks[i + 1].text == "sync"
                                                 for i in range(len(toks) - 1)):
        return True
    return any(_has_sync(c) for c in node.body)


def _shared_steps(fn: Function, lines: list[str]) -> list[Hazard]:
    shared = _shared_names(fn)
    if not shared:
        return []
    uni = Uniformity(fn, _constants(fn))
    hazards: list[Hazard] = []

    def flag(line: int, other: int) -> None:
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        hazards.append(Hazard(line, text, NO_SYNC.format(line=other) + UB))

    def sequence(items: list[Node]) -> None:
        last = None
        for item in items:
            if _is_step(item, shared, uni):
                if last is not None:
                    flag(item.line, last)
                last = item.line
            elif _has_sync(item):
                last = None
            visit(item)

    def visit(node: Node) -> None:
        if node is None:
            return
        if node.kind == "block":
            sequence(node.body)
        elif node.kind == "if":
            for child in node.body:
                if child is not None and child.kind == "block":
                    sequence(child.body)
                else:
                    visit(child)
        elif node.kind == "loop":
            body = node.body[0]
            steps = _steps_in(body, shared, uni)
            if steps and not _has_sync(body):
                flag(steps[0], node.line)
            visit(body)

    visit(fn.body)
    return hazards


def _steps_in(node: Node, shared: set[str], uni: Uniformity) -> list[int]:
    if node is None:
        return []
    if _is_step(node, shared, uni):
        return [node.line]
    return [line for child in node.body for line in _steps_in(child, shared, uni)]
