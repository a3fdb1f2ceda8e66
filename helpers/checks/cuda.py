"""Reading CUDA C++ source without a compiler, for the exercise checkers: comments blanked out (lines kept),
tokens with object-like macros expanded, each function body parsed into statements, and expressions into
small trees (a Pratt parser). It reads what student kernels are made of; anything it cannot follow it
leaves alone (the callers then skip what they wanted to look at).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

TYPE_WORDS = {"const", "volatile", "unsigned", "signed", "int", "long", "short", "float", "double", "char",
              "bool",
              "auto", "size_t", "static", "register", "__shared__", "extern", "uint32_t", "int32_t",
              "int64_t",
              "uint64_t", "float2", "float4", "int2", "int4", "half", "__half", "__restrict__", "constexpr"}


# --- tokens ----------------------------------------------------------------------------------------

def strip_comments(code: str) -> str:
    """The source with every comment replaced by spaces (newlines kept), so offsets and lines still match;
    string and character literals are left alone."""
    out, i, n = list(code), 0, len(code)
    while i < n:
        c = code[i]
        if c in "\"'":
            j = i + 1
            while j < n and code[j] != c and code[j] != "\n":
                j += 2 if code[j] == "\\" else 1
            i = j + 1
        elif code.startswith("//", i):
            j = code.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif code.startswith("/*", i):
            j = code.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out[i:j] = [ch if ch == "\n" else " " for ch in code[i:j]]
            i = j
        else:
            i += 1
    return "".join(out)


_TOKEN = re.compile(r"""
    (?P<num>0[xX][0-9a-fA-F]+[uUlL]*|\d+\.?\d*(?:[eE][-+]?\d+)?[fFuUlL]*
       |\.\d+(?:[eE][-+]?\d+)?[fF]?)
    |(?P<id>[A-Za-z_]\w*)|(?P<str>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
    |(?P<op><<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||\+=|-=|\*=|/=|%=|&=|\|=|\^=|::
       |[-+*/%&|^~!<>=?:;,.()\[\]{}#])
    |(?P<space>\s+)|(?P<other>.)""", re.VERBOSE)


@dataclass(frozen=True)
class Tok:
    text: str
    line: int
    kind: str


def tokens(code: str) -> tuple[list[Tok], dict[str, list[Tok]]]:
    """Tokens of the comment-free source, with #define macros expanded (object-like and function-like, a
    macro's body expanded again, continuation lines joined); returns (tokens, object-like macros). A macro
    that pastes or stringizes (# or ##) is left as it is."""
    macros: dict[str, list[Tok]] = {}
    functional: dict[str, tuple[list[str], list[Tok]]] = {}
    lines, kept, number = code.split("\n"), [], 0
    while number < len(lines):
        text = lines[number]
        number += 1
        directive = re.match(r"\s*#\s*(\w+)(.*)", text)
        if not directive:
            kept.append(text)
            continue
        first, rest = number, directive.group(2)
        kept.append("")
        while rest.endswith("\\") and number < len(lines):          # a continuation line
            rest = rest[:-1] + " " + lines[number]
            number += 1
            kept.append("")
        body = re.match(r"\s*(\w+)(\(([\w\s,]*)\))?(.*)$", rest) if directive.group(1) == "define" else None
        if body is None:
            continue
        name, params, text = body.group(1), body.group(2), body.group(4)
        if params:
            if "#" not in text:
                functional[name] = ([p.strip() for p in body.group(3).split(",") if p.strip()],
                                    _scan(text, first))
        elif not rest.lstrip().startswith(name + "("):   # (a variadic macro is left alone)
            macros[name] = _scan(text, first)
    found = _scan("\n".join(kept), 1)
    for _ in range(8):                                   # macros within macros, a few levels deep
        found, changed = _expand(found, macros, functional)
        if not changed:
            break
    return found, macros


def _expand(toks: list[Tok], macros: dict, functional: dict) -> tuple[list[Tok], bool]:
    """One pass of macro expansion over ``toks``; (tokens, whether anything was expanded)."""
    out, i, changed = [], 0, False
    while i < len(toks):
        tok = toks[i]
        if tok.kind == "id" and tok.text in macros:
            out += [Tok(t.text, tok.line, t.kind) for t in macros[tok.text]]
            i, changed = i + 1, True
        elif tok.kind == "id" and tok.text in functional and i + 1 < len(toks) and toks[i + 1].text == "(":
            params, body = functional[tok.text]
            close = match(toks, i + 1)
            args = split(toks[i + 2:close], ",") if close > i + 2 else []
            given = dict(zip(params, args))
            for t in body:
                out += [Tok(a.text, tok.line, a.kind) for a in given[t.text]] if t.text in given \
                    else [Tok(t.text, tok.line, t.kind)]
            i, changed = close + 1, True
        else:
            out.append(tok)
            i += 1
    return out, changed


def _scan(text: str, line: int) -> list[Tok]:
    found = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind != "space":
            found.append(Tok(match.group(), line, kind))
        line += match.group().count("\n")
    return found


# --- statements ------------------------------------------------------------------------------------

@dataclass
class Node:
    kind: str                  # block, if, loop, return, jump, label, simple
    line: int
    toks: list                 # the condition (if/loop), the statement's tokens, a label's name
    body: list                 # children: block items; [then, else]; [loop body]
    init: list | None = None   # a for loop's init and step tokens
    step: list | None = None


def match(toks: list[Tok], i: int) -> int:
    """Index of the bracket closing the one at i."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    opening, closing, depth = toks[i].text, pairs[toks[i].text], 0
    for j in range(i, len(toks)):
        if toks[j].text == opening:
            depth += 1
        elif toks[j].text == closing:
            depth -= 1
            if depth == 0:
                return j
    raise ValueError(f"line {toks[i].line}: unbalanced {opening}")


def _until_semicolon(toks: list[Tok], i: int) -> int:
    while i < len(toks) and toks[i].text != ";":
        i = match(toks, i) + 1 if toks[i].text in "([{" else i + 1
    return i


def split(toks: list[Tok], separator: str) -> list[list[Tok]]:
    parts, current, i = [], [], 0
    while i < len(toks):
        if toks[i].text in "([{":
            j = match(toks, i)
            current += toks[i:j + 1]
            i = j + 1
            continue
        if toks[i].text == separator:
            parts.append(current)
            current = []
        else:
            current.append(toks[i])
        i += 1
    return parts + [current]


def parse_statement(toks: list[Tok], i: int) -> tuple[Node, int]:
    t = toks[i]
    if t.text == "{":
        end = match(toks, i)
        items, j = [], i + 1
        while j < end:
            node, j = parse_statement(toks, j)
            items.append(node)
        return Node("block", t.line, [], items), end + 1
    if t.text in ("if", "while", "switch") and toks[i + 1].text == "(":
        close = match(toks, i + 1)
        then, j = parse_statement(toks, close + 1)
        other = None
        if t.text == "if" and j < len(toks) and toks[j].text == "else":
            other, j = parse_statement(toks, j + 1)
        kind = "loop" if t.text == "while" else "if"
        return Node(kind, t.line, toks[i + 2:close], [then] if kind == "loop" else [then, other]), j
    if t.text == "for" and toks[i + 1].text == "(":
        close = match(toks, i + 1)
        parts = split(toks[i + 2:close], ";") + [[], []]
        body, j = parse_statement(toks, close + 1)
        return Node("loop", t.line, parts[1], [body], parts[0], parts[2]), j
    if t.text == "do":
        body, j = parse_statement(toks, i + 1)
        close = match(toks, j + 1)                       # while ( ... )
        return Node("loop", t.line, toks[j + 2:close], [body]), close + 2
    if t.text in ("case", "default") or (t.kind == "id" and i + 1 < len(toks) and toks[i + 1].text == ":"):
        j = i
        while toks[j].text != ":":
            j += 1
        return Node("label", t.line, [t], []), j + 1
    end = _until_semicolon(toks, i)
    kind = {"return": "return", "break": "jump", "continue": "jump", "goto": "jump"}.get(t.text, "simple")
    return Node(kind, t.line, toks[i:end], []), end + 1


@dataclass
class Function:
    name: str
    params: list[str]
    body: Node
    kernel: bool


def functions(code: str) -> tuple[list[Function], dict[str, list[Tok]]]:
    """Every __global__ and __device__ function of the source, parsed."""
    toks, macros = tokens(strip_comments(code))
    found, i = [], 0
    while i < len(toks):
        if toks[i].text in ("__global__", "__device__"):
            j = i
            while j < len(toks) and toks[j].text not in ("(", ";", "=", "{"):
                j += 1
                if j + 1 < len(toks) and toks[j].text == "__launch_bounds__" and toks[j + 1].text == "(":
                    j = match(toks, j + 1) + 1               # __launch_bounds__(256) is no name
            if j < len(toks) and toks[j].text == "(" and toks[j - 1].kind == "id":
                close = match(toks, j)
                k = close + 1
                while k < len(toks) and toks[k].text not in ("{", ";"):
                    k += 1
                if k < len(toks) and toks[k].text == "{":
                    params = [p[-1].text for p in split(toks[j + 1:close], ",") if p and p[-1].kind == "id"]
                    body, end = parse_statement(toks, k)
                    found.append(Function(toks[j - 1].text, params, body, toks[i].text == "__global__"))
                    i = end
                    continue
            i = j + 1
            continue
        i += 1
    return found, macros


# --- expressions -----------------------------------------------------------------------------------

_BINARY = {"*": 13, "/": 13, "%": 13, "+": 12, "-": 12, "<<": 11, ">>": 11, "<": 10, "<=": 10, ">": 10,
           ">=": 10,
           "==": 9, "!=": 9, "&": 8, "^": 7, "|": 6, "&&": 5, "||": 4}
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}


class _Parser:
    """Pratt parser for C expressions, to tuples: (num, text), (id, name), (member, base, name),
    (call, name, args), (index, base, index), (unary, op, x), (bin, op, a, b), (cond, c, a, b),
    (assign, op, target, value), (cast, x)."""

    def __init__(self, toks: list[Tok]):
        self.toks, self.i = toks, 0

    def peek(self) -> str:
        return self.toks[self.i].text if self.i < len(self.toks) else ""

    def take(self) -> Tok:
        self.i += 1
        return self.toks[self.i - 1]

    def expression(self, floor: int = 0):
        left = self.unary()
        while True:
            op = self.peek()
            if op in _ASSIGN and floor <= 2:
                self.take()
                left = ("assign", op, left, self.expression(2))
            elif op == "?" and floor <= 3:
                self.take()
                a = self.expression(0)
                if self.peek() == ":":
                    self.take()
                left = ("cond", left, a, self.expression(3))
            elif op in _BINARY and _BINARY[op] >= max(floor, 1):
                self.take()
                left = ("bin", op, left, self.expression(_BINARY[op] + 1))
            elif op == "," and floor == 0:
                self.take()
                left = ("bin", ",", left, self.expression(1))
            else:
                return left

    def unary(self):
        t = self.peek()
        if t in ("-", "+", "!", "~", "*", "&", "++", "--"):
            self.take()
            return ("unary", t, self.unary())
        if t == "sizeof":
            self.take()
            if self.peek() == "(":
                self.i = match(self.toks, self.i) + 1
            else:
                self.unary()
            return ("num", "0")
        if t == "(":
            close = match(self.toks, self.i)
            inside = [tok.text for tok in self.toks[self.i + 1:close]]
            if inside and all(w in TYPE_WORDS or w == "*" for w in inside):     # a cast
                self.i = close + 1
                return ("cast", self.unary())
        return self.postfix(self.primary())

    def primary(self):
        if self.i >= len(self.toks):
            return ("num", "0")
        t = self.take()
        if t.text == "(":
            inner = self.expression(0)
            if self.peek() == ")":
                self.take()
            return inner
        if t.kind == "num":
            return ("num", t.text)
        if t.kind == "id":
            name = t.text
            while self.peek() == "::" and self.i + 1 < len(self.toks):
                self.take()
                name += "::" + self.take().text
            if self.peek() == "<" and name in ("static_cast", "reinterpret_cast", "const_cast"):
                while self.peek() and self.take().text != ">":
                    pass
            elif self.peek() == "<":                    # a template's call: warp_sum<16>(s)
                j = self.i + 1
                while j < len(self.toks) and (self.toks[j].kind in ("id", "num") or self.toks[j].text
                                              in (",", "::", "*")):
                    j += 1
                if j + 1 < len(self.toks) and self.toks[j].text == ">" and self.toks[j + 1].text == "(":
                    self.i = j + 1
            return ("id", name)
        return ("num", "0")     # string literals and anything unexpected

    def postfix(self, node):
        while True:
            t = self.peek()
            if t == "(":
                close = match(self.toks, self.i)
                parts = split(self.toks[self.i + 1:close], ",")
                args = [_Parser(part).expression() for part in parts if part]
                self.i = close + 1
                node = ("call", node[1] if node[0] == "id" else "?", args) if node[0] in ("id", "member") \
                    else ("call", "?", args)
                if node[1] in ("static_cast", "reinterpret_cast", "const_cast") and args:
                    node = ("cast", args[0])
            elif t == "[":
                close = match(self.toks, self.i)
                node = ("index", node, _Parser(self.toks[self.i + 1:close]).expression())
                self.i = close + 1
            elif t in (".", "->"):
                self.take()
                node = ("member", node, self.take().text if self.i < len(self.toks) else "")
            elif t in ("++", "--"):
                self.take()
                node = ("unary", t, node)
            else:
                return node


def parse_expression(toks: list[Tok]):
    return _Parser(toks).expression() if toks else ("num", "0")


def walk(node):
    yield node
    for child in node[1:]:
        if isinstance(child, tuple):
            yield from walk(child)
        elif isinstance(child, list):
            for item in child:
                if isinstance(item, tuple):
                    yield from walk(item)


def number(node) -> int | None:
    if node[0] == "num":
        try:
            return int(node[1].rstrip("uUlL"), 0)
        except ValueError:
            return None
    if node[0] == "unary" and node[1] in ("-", "~") and node[2][0] == "num":
        value = number(node[2])
        return None if value is None else (-value if node[1] == "-" else ~value)
    return None


def statement_expressions(node: Node) -> list:
    """The expressions of a simple statement, declarations included ('int a = x, b;' gives a = x)."""
    toks = node.toks
    if not toks:
        return []
    k = 0
    while k < len(toks) and (toks[k].text in TYPE_WORDS or toks[k].text in ("*", "&")):
        k += 1
    if 0 < k < len(toks) or (k == 0 and len(toks) > 1 and toks[0].kind == "id" and toks[1].kind == "id"):
        if k == 0:
            k = 1                                        # a type name the list does not know: T x = ...
            while k < len(toks) and toks[k].text in ("*", "&"):
                k += 1
        found = []
        for part in split(toks[k:], ","):
            if part and part[0].kind == "id":
                name = part[0].text
                j = 1
                while j < len(part) and part[j].text == "[":
                    j = match(part, j) + 1
                if j < len(part) and part[j].text == "=":
                    found.append(("assign", "=", ("id", name), parse_expression(part[j + 1:])))
                elif j < len(part) and part[j].text in ("(", "{"):
                    found.append(("assign", "=", ("id", name), parse_expression(part[j:])))
                else:
                    found.append(("decl", name))
        return found
    return [parse_expression(toks)]
