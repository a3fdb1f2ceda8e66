"""Which values of a CUDA function differ between the threads that run it: a small data-flow pass over the
statements ``checks.cuda`` parses. At warp scope it tells warp-uniform values (blockIdx, parameters,
``(... + threadIdx.x) / 32``, loads at uniform indices) from lane-linear ones (uniform + threadIdx.x) and
from values that differ between the lanes of a warp (``threadIdx.x % 32``, anything derived); at block
scope every use of threadIdx differs. It is flow-insensitive (every assignment counts everywhere) and
follows control dependences (a variable assigned under a varying condition varies). A ``__shared__``
scalar holds one value for the whole block (read after the barrier that follows its write), so it is
uniform at both scopes whoever writes it.
"""
from __future__ import annotations

from helpers.checks.cuda import Function, Node, Tok, number, parse_expression, statement_expressions, walk

U, L, V = 0, 1, 2       # uniform, lane-linear (uniform + threadIdx.x), varying
UNIFORM_CALLS = {"__ballot_sync", "__all_sync", "__any_sync"}
VARYING_CALLS = {"__activemask", "clock", "clock64", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
                 "__shfl_xor_sync", "__match_any_sync", "atomicAdd", "atomicSub", "atomicMax", "atomicMin",
                 "atomicExch", "atomicCAS", "atomicInc", "atomicDec", "atomicAnd", "atomicOr", "atomicXor"}


class Uniformity:
    """Which variables of a function hold the same value in every lane of a warp (``scope='warp'``) or in
    every thread of a block (``scope='block'``), found by iterating over every assignment until nothing
    changes (flow-insensitive, control dependences included)."""

    def __init__(self, function: Function, constants: dict[str, int], scope: str = "warp"):
        self.block = scope == "block"
        self.state = {p: U for p in function.params}
        self.params = set(function.params)
        self.shared = shared_scalars(function.body)
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
            return self.state.get(node[1], U) if node[1] not in ("threadIdx",) else (V if self.block else L)
        if kind == "member":
            base = node[1]
            if base[0] == "id" and base[1] == "threadIdx":
                return V if self.block else (L if node[2] == "x" else U)
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
            return max(self._flat(self.of(part)) for part in node[1:4])
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
        through = target[0] in ("index", "unary") or (target[0] == "member" and target[1][0] != "id")
        while target[0] in ("index", "member", "unary", "cast"):
            target = target[1] if target[0] in ("index", "member", "cast") else target[2]
        if through and target[0] == "id" and target[1] in self.params:
            return                  # a store through a pointer parameter leaves the pointer as it was
        if target[0] == "id" and target[1] not in self.shared:
            name = target[1]
            if value is not None:
                self.assigned.setdefault(name, [])
                if value not in self.assigned[name]:
                    self.assigned[name].append(value)
            self.state[name] = max(self.state.get(name, U), state)

    def _expression(self, node, control: int) -> None:
        for sub in walk(node):
            if sub[0] == "assign":
                state = (self.of(sub[3]) if sub[1] == "="
                         else max(self.of(sub[2]), self._flat(self.of(sub[3]))))
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
            found = (statement_expressions(node) if node.kind == "simple"
                     else [parse_expression(node.toks[1:])])
            for expression in found:
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

    def varies(self, node) -> bool:
        """Whether the expression ``node`` can differ between the threads (of a warp, or of a block)."""
        return self._flat(self.of(node)) != U


def shared_scalars(body: Node) -> set[str]:
    """Names declared ``__shared__`` that are not arrays (``__shared__ bool last;``)."""
    found: set[str] = set()

    def visit(node):
        if node is None:
            return
        if node.kind == "simple" and any(t.text == "__shared__" for t in node.toks):
            texts = [t.text for t in node.toks]
            for expression in statement_expressions(node):
                name = expression[1] if expression[0] == "decl" else expression[2][1]
                at = texts.index(name) if name in texts else -1
                if at >= 0 and (at + 1 >= len(texts) or texts[at + 1] != "["):
                    found.add(name)
        for child in node.body:
            visit(child)

    visit(body)
    return found


def constants_of(function: Function) -> dict[str, int]:
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


