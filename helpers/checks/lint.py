"""Reading a student's CUDA source for hazards that give the right numbers today and can break on another
GPU, driver or compiler (``checks.flow`` tells which values differ between threads):

- warp-synchronous hazards, undefined since Volta's independent thread scheduling: a shuffle whose mask
  leaves out lanes that reach it, a shuffle after some lanes returned (or left a loop's round by a break
  or continue, or jumped ahead by goto) or inside code that only some lanes run (an if, a loop, a branch of
  ?:, the right side of && or ||), ``__activemask()`` used as a mask, the steps of a shared-memory
  reduction with no ``__syncwarp()``/``__syncthreads()`` between them;
- block hazards: a ``__syncthreads()`` that part of the block may not reach (after an early return, inside
  ``if (threadIdx.x < stride)``), a block-scoped atomic (``atomicAdd_block``) on memory other blocks update,
  a shared array with fewer elements than the block's threads that every thread indexes by threadIdx.x;
- the task's rule where an exercise prescribes how lanes share a row (``lane_stride``, ``checks.strides``):
  lane l takes in-links l, l + 32, ... (or + width), not a contiguous chunk.

Comments are removed and macros expanded first, then each function body is parsed into statements; a
helper that shuffles or waits, directly or through another helper, counts as a shuffle or a barrier.
Blind spots: conditions the data-flow pass cannot see through (a helper is taken at its mask argument's
word), a race within one step of a shared-memory reduction, loops that run the same number of times in
every lane although their counter differs between lanes, strides the reader cannot evaluate, cooperative
groups' member calls (tile.shfl_down(), cg::reduce), a goto backwards (it then says nothing).
"""
from __future__ import annotations

from dataclasses import dataclass

from helpers.checks.cuda import (
    Function, Node, functions, match, number, parse_expression, statement_expressions, walk)
from helpers.checks.flow import U, Uniformity, constants_of
from helpers.checks.strides import assignments, lane_strides

COLLECTIVES = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__syncwarp",
               "__ballot_sync", "__all_sync", "__any_sync", "__match_any_sync", "__match_all_sync"}
BARRIERS = {"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"}
SYNCS = BARRIERS | {"__syncwarp"}
THREAD_X = ("member", ("id", "threadIdx"), "x")
BLOCK_ATOMICS = {f"atomic{op}_block" for op in ("Add", "Sub", "Exch", "Min", "Max", "Inc", "Dec", "CAS",
                                                 "And", "Or", "Xor")}
ACTIVEMASK = ("__activemask() used as a mask: it reports which lanes happen to run together at that "
              "moment, not which lanes must take part, so after any divergence lanes that reach the "
              "shuffle a moment later are left out and what is read from them is undefined; use 0xffffffff "
              "with every lane reaching the shuffle (or a mask from __ballot_sync taken before the branch)")
PARTIAL = ("the mask {mask} leaves out lanes that reach this {call} too: a lane outside the mask that "
           "executes it, or whose value is read, is undefined behaviour")
AFTER_RETURN = ("a {call} after some lanes of the warp may have {left} (line {line}): lanes that "
                "{left} do not take part, yet the mask names them, and the values read from them are "
                "undefined; let every lane reach the {call} (guard the work, not the shuffle)")
LEFT = {"return": ("returned", "returning"), "break": ("left the loop (break)", "breaking out"),
        "continue": ("skipped the rest of this round of the loop (continue)", "skipping ahead"),
        "goto": ("jumped past it (goto)", "jumping")}
DIVERGENT = ("a {call} inside code that only some lanes of the warp run (the condition on line {line} "
             "differs between lanes): the mask names lanes that never arrive; move the {call} out of the "
             "branch or loop so that every lane executes it")
NO_SYNC = ("steps of a shared-memory reduction with no __syncwarp() or __syncthreads() between them (also "
           "on line {line}): since Volta the lanes of a warp are not in lockstep, so a lane can read a "
           "partial sum before another lane has written it (volatile does not order them)")
UB = (" — undefined behaviour since Volta's independent thread scheduling: it usually gives the right "
      "numbers on today's GPUs, and can break on another GPU, driver or compiler")
BARRIER_DIVERGENT = ("a {call} inside code that only part of the block runs (the condition on line {line} "
                     "differs between the threads of a block): every thread of the block must reach each "
                     "barrier, or the block can hang or go on before the others have written; move the "
                     "barrier out of the branch or loop (guard the work, not the barrier)")
BARRIER_AFTER_RETURN = ("a {call} after some threads of the block may have {left} (line {line}): every "
                        "thread of the block must reach each barrier; instead of {leaving}, let those "
                        "threads take part with a neutral value (0 past n) and skip only the work")
BLOCK_UB = (" — undefined behaviour: it may give the right numbers on one GPU and hang or read partial "
            "values on another")
BLOCK_ATOMIC = ("{call} on {target}, which other blocks update too: a _block atomic is atomic only among "
                "the threads of one block, so updates from two blocks to one element can be lost (a race "
                "that the usual launches may not show); use {plain}")
SMALL_SHARED = ("the shared array {name} has {size} elements, yet every thread of the block reaches "
                "{name}[{index}] and the checker launches {block} threads per block: threads {size} to "
                "{last} read or write past its end — into another shared variable, or outside the block's "
                "shared memory (a fault); give it one element per thread ({block}), or guard the access")


@dataclass(frozen=True)
class Hazard:
    """A hazard the lint found: its line, the line's text and the cause."""
    line: int          # line in the student's source
    text: str          # that line
    cause: str         # what is wrong and why it matters


def lint(code: str, function: str | None = None, lane_stride: str | None = None,
         row: str = "in_sources", block: int | None = None) -> list[Hazard]:
    """Hazards in ``code`` (see the module's docstring), each with its line and cause; [] when none is found
    or the source cannot be read (then the compiler will say what is wrong). ``lane_stride`` ('32',
    'width') is the stride the exercise prescribes for the loops that read the array ``row``; ``block``
    the most threads per block the checker launches (a shared array smaller than that is named)."""
    try:
        found, _ = functions(code)
    except (ValueError, IndexError, RecursionError):
        return []
    lines = code.split("\n")
    collective_helpers = _helpers(found, COLLECTIVES)
    barrier_helpers = set(_helpers(found, BARRIERS))
    hazards: list[Hazard] = []
    for fn in found:
        if function is not None and fn.kernel and fn.name != function:
            continue
        try:
            hazards += _warp_hazards(fn, collective_helpers, lines)
            hazards += _block_hazards(fn, barrier_helpers, lines, block)
            hazards += _shared_steps(fn, lines)
            if lane_stride and fn.kernel:
                found_here = lane_strides(fn, lane_stride, row)
                hazards += [_hazard(lines, line, cause) for line, cause in found_here]
        except (ValueError, IndexError, RecursionError):
            continue
    unique, seen = [], set()
    for hazard in hazards:
        if (hazard.line, hazard.cause) not in seen:
            seen.add((hazard.line, hazard.cause))
            unique.append(hazard)
    return unique


def _helpers(found: list[Function], names: set[str]) -> dict[str, int | None]:
    """The __device__ functions that call one of ``names``, or such a helper (a helper of a helper), each
    with the position of the parameter it passes as every such call's mask (None: not one parameter)."""
    helpers: dict[str, int | None] = {}
    for _ in range(len(found)):
        for fn in found:
            if not fn.kernel and fn.name not in helpers and _has(fn.body, names | set(helpers)):
                helpers[fn.name] = _mask_parameter(fn, names)
    return helpers


def _mask_parameter(fn: Function, names: set[str]) -> int | None:
    """The position of ``fn``'s parameter that is the mask of every call of ``names`` in it, if one is."""
    masks: set = set()

    def visit(node: Node) -> None:
        if node is None:
            return
        toks = node.toks + (node.init or []) + (node.step or [])
        for i, tok in enumerate(toks[:-2]):
            if tok.text in names and toks[i + 1].text == "(":
                masks.add(toks[i + 2].text if toks[i + 3:i + 4] and toks[i + 3].text in ",)" else None)
        for child in node.body:
            visit(child)

    visit(fn.body)
    mask = masks.pop() if len(masks) == 1 else None
    return fn.params.index(mask) if mask in fn.params else None


def _has(node: Node, names: set[str]) -> bool:
    if node is None:
        return False
    toks = node.toks + (node.init or []) + (node.step or [])
    return any(t.text in names for t in toks) or any(_has(c, names) for c in node.body)


def _hazard(lines: list[str], line: int, cause: str) -> Hazard:
    return Hazard(line, lines[line - 1].strip() if 0 < line <= len(lines) else "", cause)


def _sites(node, uni: Uniformity, conditional: bool = False):
    """The calls and indexed reads or writes of an expression, each with whether only some threads may
    evaluate it: in a branch of ?: or on the right of && or || whose left side differs between threads."""
    if node[0] == "cond":
        yield from _sites(node[1], uni, conditional)
        for part in node[2:4]:
            yield from _sites(part, uni, conditional or uni.varies(node[1]))
        return
    if node[0] == "bin" and node[1] in ("&&", "||"):
        yield from _sites(node[2], uni, conditional)
        yield from _sites(node[3], uni, conditional or uni.varies(node[2]))
        return
    if node[0] in ("call", "index"):
        yield node, conditional
    for child in node[1:]:
        for item in (child if isinstance(child, list) else [child]):
            if isinstance(item, tuple):
                yield from _sites(item, uni, conditional)


def _switch(node: Node) -> bool:
    then = node.body[0]
    return node.kind == "if" and then is not None and then.kind == "block" and any(
        c.kind == "label" and c.toks[0].text in ("case", "default") for c in then.body)


def _walk(fn: Function, uni: Uniformity, site) -> None:
    """Call ``site(node, line, divergent, left)`` for every call and indexed access in the function:
    ``divergent`` is the line of the innermost condition (if, loop, ?:, && or ||) that differs between
    threads (None where all run), ``left`` the (line, how) of the returns, breaks, continues and forward
    gotos taken by some threads only, before this point, whose threads have not come back at it."""
    left: list[tuple[int, str, str | None]] = []
    labels: set[str] = set()

    def sites(expression, line: int, divergent: int | None) -> None:
        for node, conditional in _sites(expression, uni):
            site(node, line, line if divergent is None and conditional else divergent, left)

    def visit(node: Node, divergent: int | None, in_switch: bool = False) -> None:
        if node is None:
            return
        if node.kind == "block":
            for item in node.body:
                visit(item, divergent, in_switch)
        elif node.kind == "simple":
            for expression in statement_expressions(node):
                sites(expression, node.line, divergent)
        elif node.kind == "label":
            labels.add(node.toks[0].text)
            left[:] = [entry for entry in left if entry[2] != node.toks[0].text]
        elif node.kind in ("return", "jump"):
            how = node.toks[0].text
            if how == "return":
                sites(parse_expression(node.toks[1:]), node.line, divergent)
            target = node.toks[1].text if how == "goto" and len(node.toks) > 1 else None
            if divergent is not None and not (how == "break" and in_switch) and target not in labels:
                left.append((node.line, how, target))
        elif node.kind == "if":
            sites(parse_expression(node.toks), node.line, divergent)
            inner = divergent if divergent is not None or uni.condition(node.toks) == U else node.line
            for child in node.body:
                visit(child, inner, in_switch or _switch(node))
        elif node.kind == "loop":
            for expression in statement_expressions(Node("simple", node.line, node.init or [], [])):
                sites(expression, node.line, divergent)
            inner = divergent if divergent is not None or uni.condition(node.toks) == U else node.line
            sites(parse_expression(node.toks), node.line, inner)
            before = len(left)
            visit(node.body[0], inner)
            left[before:] = [entry for entry in left[before:] if entry[1] not in ("break", "continue")]
            sites(parse_expression(node.step or []), node.line, inner)

    visit(fn.body, None)


# --- warp-synchronous calls ------------------------------------------------------------------------

def _mask(node, constants: dict[str, int], assigned: dict[str, list]) -> tuple[str, int | None]:
    """('full' | 'partial' | 'active' | 'computed', value) of a collective's mask argument."""
    value = number(node)
    if value is None and node[0] == "id":
        value = constants.get(node[1])
        sources = assigned.get(node[1], [])
        if value is None and any(v[0] == "call" and v[1] == "__activemask" for v in sources):
            return "active", None
    if node[0] == "call" and node[1] == "__activemask":
        return "active", None
    if value is None:
        return "computed", None
    return ("full" if value & 0xFFFFFFFF == 0xFFFFFFFF else "partial"), value & 0xFFFFFFFF


def _warp_hazards(fn: Function, helpers: dict[str, int | None], lines: list[str]) -> list[Hazard]:
    constants = constants_of(fn)
    uni = Uniformity(fn, constants)
    hazards: list[Hazard] = []

    def site(call, line: int, divergent: int | None, left: list) -> None:
        if call[0] != "call" or (call[1] not in COLLECTIVES and call[1] not in helpers):
            return
        name, at = call[1], 0 if call[1] in COLLECTIVES else helpers[call[1]]
        shown = "__syncwarp()" if name == "__syncwarp" else (f"{name}()" if name in COLLECTIVES else
                                                               f"call of {name}() (it shuffles)")
        if at is not None and at < len(call[2]):
            kind, value = _mask(call[2][at], constants, uni.assigned)
        else:
            kind, value = "full", 0xFFFFFFFF          # __syncwarp() without a mask, a helper's own mask
        if kind == "active":
            hazards.append(_hazard(lines, line, ACTIVEMASK + UB))
        elif kind == "partial" and divergent is None and not left:
            hazards.append(_hazard(lines, line, PARTIAL.format(mask=f"0x{value:08x}", call=shown) + UB))
        elif kind == "full" and divergent is not None:
            hazards.append(_hazard(lines, line, DIVERGENT.format(call=shown, line=divergent) + UB))
        elif kind == "full" and left:
            cause = AFTER_RETURN.format(call=shown, line=left[0][0], left=LEFT[left[0][1]][0])
            hazards.append(_hazard(lines, line, cause + UB))

    _walk(fn, uni, site)
    return hazards


# --- block barriers and block-scoped atomics -------------------------------------------------------

def _block_hazards(fn: Function, helpers: set[str], lines: list[str], block: int | None) -> list[Hazard]:
    uni = Uniformity(fn, constants_of(fn), scope="block")
    shared = shared_names(fn)
    small, aliases = (small_shared(fn, block) if block else {}), _thread_aliases(fn)
    hazards: list[Hazard] = []

    def site(call, line: int, divergent: int | None, left: list) -> None:
        if call[0] == "index":
            name = call[1][1] if call[1][0] == "id" else None
            index = call[2][1] if call[2][0] == "cast" else call[2]
            by_thread = index == THREAD_X or (index[0] == "id" and index[1] in aliases)
            if name in small and divergent is None and not left and by_thread:
                shown = "threadIdx.x" if index == THREAD_X else index[1]
                hazards.append(_hazard(lines, line, SMALL_SHARED.format(
                    name=name, size=small[name], index=shown, block=block, last=block - 1)))
            return
        name = call[1]
        if name in BARRIERS or name in helpers:
            shown = f"{name}()" if name in BARRIERS else f"call of {name}() (it waits at a __syncthreads())"
            if divergent is not None:
                cause = BARRIER_DIVERGENT.format(call=shown, line=divergent)
                hazards.append(_hazard(lines, line, cause + BLOCK_UB))
            elif left:
                how, leaving = LEFT[left[0][1]]
                cause = BARRIER_AFTER_RETURN.format(call=shown, line=left[0][0], left=how, leaving=leaving)
                hazards.append(_hazard(lines, line, cause + BLOCK_UB))
        elif name in BLOCK_ATOMICS and call[2]:
            ids = [sub[1] for sub in walk(call[2][0]) if sub[0] == "id"]  # source order: the array first
            if not set(ids) & shared and "blockIdx" not in ids:
                target = next((i for i in ids if i in fn.params), None) or "global memory"
                plain = name[:-len("_block")] + "()"
                cause = BLOCK_ATOMIC.format(call=f"{name}()", target=target, plain=plain)
                hazards.append(_hazard(lines, line, cause))

    _walk(fn, uni, site)
    return hazards


def small_shared(fn: Function, block: int) -> dict[str, int]:
    """The shared arrays of one dimension whose size, a constant, is below ``block``, with their sizes."""
    constants, found = constants_of(fn), {}

    def visit(node: Node) -> None:
        if node is None:
            return
        toks = node.toks
        if node.kind == "simple" and any(t.text == "__shared__" for t in toks):
            for i, tok in enumerate(toks[:-1]):
                if tok.kind == "id" and toks[i + 1].text == "[" and toks[i - 1].text != "]":
                    close = match(toks, i + 1)
                    size = _constant(parse_expression(toks[i + 2:close]), constants)
                    if close + 1 < len(toks) and toks[close + 1].text == "[":
                        continue                               # two dimensions: not looked at
                    if size is not None and 0 < size < block:
                        found[tok.text] = size
        for child in node.body:
            visit(child)

    visit(fn.body)
    return found


def _constant(node, constants: dict[str, int]) -> int | None:
    """The value of an integer expression of literals and constants (THREADS / 2), or None."""
    value = number(node) if node[0] != "id" else constants.get(node[1])
    if value is None and node[0] == "cast":
        return _constant(node[1], constants)
    if value is None and node[0] == "bin" and node[1] in ("+", "-", "*", "/", "<<", ">>"):
        a, b = _constant(node[2], constants), _constant(node[3], constants)
        if a is None or b is None or (node[1] == "/" and b == 0) or (node[1] in ("<<", ">>") and b < 0):
            return None
        return {"+": a + b, "-": a - b, "*": a * b, "/": a // b if b else 0, "<<": a << min(b, 64),
                ">>": a >> b}[node[1]]
    return value


def _thread_aliases(fn: Function) -> set[str]:
    """Variables assigned once, from threadIdx.x (int t = threadIdx.x;)."""
    values = assignments(fn.body, {})
    return {name for name, found in values.items() if len(found) == 1 and
            (found[0][1] if found[0][0] == "cast" else found[0]) == THREAD_X}


# --- shared-memory reduction steps -----------------------------------------------------------------

def shared_names(fn: Function) -> set[str]:
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
    return bool(_step_arrays(node, shared, uni))


def _step_arrays(node: Node, shared: set[str], uni: Uniformity) -> set[str]:
    """The shared arrays a step (see ``_is_step``) writes and reads; empty when the node is no step. Two
    steps with no array in common (two sums reduced side by side) need no barrier between them."""
    if node is None:
        return set()
    if node.kind == "if" and node.body[1] is None:
        return _step_arrays(node.body[0], shared, uni)
    if node.kind == "block":
        if len(node.body) == 1:
            return _step_arrays(node.body[0], shared, uni)
        parts = [_step_arrays(child, shared, uni) for child in node.body]
        return set().union(*parts) if parts and all(parts) else set()
    if node.kind != "simple":
        return set()
    found: set[str] = set()
    for expression in statement_expressions(node):
        for sub in walk(expression):
            if sub[0] == "assign" and sub[2][0] == "index" and _root(sub[2]) in shared \
                    and uni.of(sub[2][2]) != U:
                target = repr(sub[2][2])
                reads = [r for r in walk(sub[3]) if r[0] == "index" and _root(r) in shared]
                if any(repr(r[2]) != target for r in reads) or (sub[1] != "=" and reads):
                    found |= {_root(sub[2])} | {_root(r) for r in reads}
    return found


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
    shared = shared_names(fn)
    if not shared:
        return []
    uni = Uniformity(fn, constants_of(fn))
    hazards: list[Hazard] = []

    def flag(line: int, other: int) -> None:
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        hazards.append(Hazard(line, text, NO_SYNC.format(line=other) + UB))

    def sequence(items: list[Node]) -> None:
        pending: list[tuple[int, set[str]]] = []          # steps since the last barrier, with their arrays
        for item in items:
            arrays = _step_arrays(item, shared, uni)
            if arrays:
                earlier = [line for line, touched in pending if touched & arrays]
                if earlier:
                    flag(item.line, earlier[-1])
                pending.append((item.line, arrays))
            elif _has_sync(item):
                pending = []
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
