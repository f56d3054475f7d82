"""A small C++ expression parser over token spellings.

libclang gives the statement structure, but for dependent code (kernels that
are templates, calls into a library whose headers are only declared) its
expression trees are full of unexposed and unresolved nodes. The tokens as
written are always there, so expressions are parsed from tokens into a tiny
AST that the walker's `ev` (walk_exprs.py) folds into model values.

Nodes are frozen dataclasses (hashable, compared by value; `match` reads their fields):
  Num(value) Float(text) Str(text) Bool(value) Null()
  Name(segments)                     qualified name: Segment(name, targs|None), targs a tuple of nodes
  TypeWords(words)                   a type spelled with keywords (`unsigned int`, `uint32_t *`)
  Call(callee, args)                 Member(obj, field, arrow, targs|None)
  MemberPtr(obj, ptr)                `obj.*ptr`
  Index(obj, index)                  Bin(op, a, b)  Un(op, a)  Post(op, a)
  Assign(op, target, value)          Cond(cond, a, b)  Cast(type, a)  Sizeof(a)
  Init(items)  brace list            Comma(a, b)
  LambdaExpr(index)  the index-th lambda of the expression
  Unknown(text)                      what did not parse
  Value(value)                       a value the walker already has (an Expr, a model value),
                                     for nodes it builds itself
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Sequence, TypeAlias


class Segment(NamedTuple):
    """One `::` part of a qualified name: `group<4>` is Segment("group", (Num(4),))."""

    name: str
    targs: tuple[Node, ...] | None


@dataclass(frozen=True, slots=True)
class Num:
    value: int


@dataclass(frozen=True, slots=True)
class Float:
    text: str


@dataclass(frozen=True, slots=True)
class Str:
    text: str


@dataclass(frozen=True, slots=True)
class Bool:
    value: bool


@dataclass(frozen=True, slots=True)
class Null:
    pass


@dataclass(frozen=True, slots=True)
class Name:
    segments: tuple[Segment, ...]

    @staticmethod
    def simple(ident: str) -> Name:
        return Name((Segment(ident, None),))

    def ident(self) -> str | None:
        """The identifier of an unqualified name without template arguments (`x`), else None."""
        if len(self.segments) == 1 and self.segments[0].targs is None:
            return self.segments[0].name
        return None


@dataclass(frozen=True, slots=True)
class TypeWords:
    words: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Call:
    callee: Node
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Member:
    obj: Node
    field: str
    arrow: bool
    targs: tuple[Node, ...] | None = None


@dataclass(frozen=True, slots=True)
class MemberPtr:
    obj: Node
    ptr: Node


@dataclass(frozen=True, slots=True)
class Index:
    obj: Node
    index: Node


@dataclass(frozen=True, slots=True)
class Bin:
    op: str
    a: Node
    b: Node


@dataclass(frozen=True, slots=True)
class Un:
    op: str
    a: Node


@dataclass(frozen=True, slots=True)
class Post:
    op: str
    a: Node


@dataclass(frozen=True, slots=True)
class Assign:
    op: str
    target: Node
    value: Node


@dataclass(frozen=True, slots=True)
class Cond:
    cond: Node
    a: Node
    b: Node


@dataclass(frozen=True, slots=True)
class Cast:
    type: Node
    a: Node


@dataclass(frozen=True, slots=True)
class Sizeof:
    a: Node


@dataclass(frozen=True, slots=True)
class Init:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Comma:
    a: Node
    b: Node


@dataclass(frozen=True, slots=True)
class LambdaExpr:
    index: int


@dataclass(frozen=True, slots=True)
class Unknown:
    text: str


@dataclass(frozen=True, slots=True)
class Value:
    value: Any


Node: TypeAlias = (
    Num
    | Float
    | Str
    | Bool
    | Null
    | Name
    | TypeWords
    | Call
    | Member
    | MemberPtr
    | Index
    | Bin
    | Un
    | Post
    | Assign
    | Cond
    | Cast
    | Sizeof
    | Init
    | Comma
    | LambdaExpr
    | Unknown
    | Value
)

_BIN_PREC = {
    "||": 1,
    "&&": 2,
    "|": 3,
    "^": 4,
    "&": 5,
    "==": 6,
    "!=": 6,
    "<": 7,
    ">": 7,
    "<=": 7,
    ">=": 7,
    "<<": 8,
    ">>": 8,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "%": 10,
}
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "^=", "|=", "&=", "<<=", ">>="}
_CASTS = {"static_cast", "reinterpret_cast", "const_cast", "dynamic_cast", "bit_cast"}
_TYPE_WORDS = {
    "int",
    "unsigned",
    "signed",
    "long",
    "short",
    "char",
    "float",
    "double",
    "bool",
    "void",
    "uint32_t",
    "int32_t",
    "uint64_t",
    "int64_t",
    "uint16_t",
    "int16_t",
    "uint8_t",
    "int8_t",
    "size_t",
    "cuuint32_t",  # the driver API's (cuda.h), in host code encoding tensor maps
    "cuuint64_t",
    "const",
    "volatile",
    "auto",
    "typename",
    "struct",
    "class",
    "constexpr",
    "static",
    "__restrict__",
    "register",
    "inline",
}
# Names that are always templates when followed by '<' (TK's variable and
# function templates, tile types): `2 * size_bytes<tile> + 8` must not parse as
# a comparison.
KNOWN_TEMPLATES = {
    "size_bytes",
    "group",
    "get_phasebit",
    "update_phasebit",
    "ring_advance",
    "ring_retreat",
    "mma_async_wait",
    "increase_registers",
    "decrease_registers",
    "store_async_wait",
    "store_async_read_wait",
    "load_async_wait",
    "allocate",
    "tensor_commit",
    "consumer_registers",
    "st",
    "st_bf",
    "st_hf",
    "st_fl",
    "st_fp8e4m3",
    "st_fp8e5m2",
    "sv",
    "sv_bf",
    "sv_hf",
    "sv_fl",
    "rt",
    "rt_bf",
    "rt_hf",
    "rt_fl",
    "rv",
    "rv_bf",
    "rv_hf",
    "rv_fl",
    "tt",
    "gl",
    "coord",
    "shared_allocator",
    "tma_swizzle_allocator",
    "full_tt_bf",
    "tmem",
    "allocate_tmem",
    "allocate_tensor_memory",
    "full_tt_hf",
    "full_tt_fl",
    "full_tt_fp8e4m3",
    "full_tt_fp8e5m2",
    "full_tt_fp8e8m0",
    "full_tt_fp4e2m1_2",
    "barrier",
    "numeric_limits",
    "is_same_v",
}
_INT_RE = re.compile(r"^(0[xX][0-9a-fA-F']+|0[bB][01']+|[0-9][0-9']*)([uUlLzZ]*)$")


class ParseError(Exception):
    pass


def parse_int(tok: str) -> int | None:
    m = _INT_RE.match(tok)
    if not m:
        return None
    body = m.group(1).replace("'", "")
    if body[:2] in ("0x", "0X"):
        return int(body, 16)
    if body[:2] in ("0b", "0B"):
        return int(body[2:], 2)
    if len(body) > 1 and body[0] == "0":
        return int(body, 8)
    return int(body)


class Parser:
    def __init__(self, toks: Sequence[str], is_value: Callable[[str], bool] | None = None):
        self.t = list(toks)
        self.i = 0
        self.is_value = is_value or (lambda name: False)
        self._in_targs = 0  # template-argument lists open here: a '>' closes one
        self._lambdas = 0  # lambdas read so far (LambdaExpr numbers them)

    # -- helpers -----------------------------------------------------------
    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.t[j] if j < len(self.t) else None

    def take(self, expect: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expect is not None and tok != expect):
            raise ParseError(f"expected {expect!r}, got {tok!r}")
        self.i += 1
        return tok

    def done(self) -> bool:
        return self.i >= len(self.t)

    # -- grammar -----------------------------------------------------------
    def expression(self) -> Node:
        """comma-free expression (assignment level)."""
        lhs = self.conditional()
        op = self.peek()
        if op in _ASSIGN:
            self.take()
            rhs = self.expression()
            return Assign(op, lhs, rhs)
        return lhs

    def conditional(self) -> Node:
        c = self.binary(1)
        if self.peek() == "?":
            self.take()
            a = self.expression()
            self.take(":")
            b = self.conditional()
            return Cond(c, a, b)
        return c

    def binary(self, min_prec: int) -> Node:
        lhs = self.unary()
        while True:
            op = self.peek()
            # `>>` may be two closing template brackets; never a binary op here
            # when we are inside template args (handled by the caller stopping at '>').
            prec = _BIN_PREC.get(op or "")
            if prec is None or prec < min_prec:
                return lhs
            if op in (">", ">>") and self._in_targs:
                return lhs
            if op in ("*", "&", "&&") and self.peek(1) in (")", ",", ">", ">>", None):
                return lhs  # a declarator (`T&`, `T*`) in a cast or template argument
            self.take()
            rhs = self.binary(prec + 1)
            lhs = Bin(op, lhs, rhs)

    def unary(self) -> Node:
        tok = self.peek()
        if tok in ("-", "+", "!", "~", "*", "&"):
            self.take()
            inner = self.unary()
            return inner if tok == "+" else Un(tok, inner)
        if tok in ("++", "--"):
            self.take()
            return Assign("+=" if tok == "++" else "-=", self.unary(), Num(1))
        if tok == "sizeof":
            self.take()
            if self.peek() == "...":
                self.take()
            if self.peek() == "(":
                self.take()
                inner = self.type_or_expr()
                self.take(")")
                return Sizeof(inner)
            return Sizeof(self.unary())
        if tok == "(" and self._looks_like_cast():
            self.take()
            ty = self.type_or_expr()
            self.take(")")
            return Cast(ty, self.unary())
        return self.postfix(self.primary())

    def _looks_like_cast(self) -> bool:
        nxt = self.peek(1)
        if nxt is not None and (nxt[0].isalpha() or nxt[0] == "_" or nxt == "::") and nxt not in _TYPE_WORDS:
            # `(float2 *)&v[i]`, `(const ns::T &)x`: a name ending in a declarator before ')' is a
            # type (no expression ends in `*` or `&`), so a cast when an operand follows
            j, depth = self.i + 1, 0
            while j < len(self.t):
                tk = self.t[j]
                if tk in ("(", "[", "{"):
                    depth += 1
                elif tk in (")", "]", "}"):
                    if depth == 0:
                        break
                    depth -= 1
                j += 1
            if j < len(self.t) and self.t[j] == ")" and self.t[j - 1] in ("*", "&"):
                after = self.t[j + 1] if j + 1 < len(self.t) else None
                return (
                    after is not None
                    and after not in (")", ",", ";", "]", "?", ":", "=", *_ASSIGN)
                    and (after not in _BIN_PREC or after in ("*", "&", "-", "+"))
                )
            return False
        if nxt in _TYPE_WORDS:
            # "(int)x", "(uint32_t)(...)" — but not "(int(x))"
            j = self.i + 1
            depth = 0
            while j < len(self.t):
                if self.t[j] == "(":
                    depth += 1
                elif self.t[j] == ")":
                    if depth == 0:
                        after = self.t[j + 1] if j + 1 < len(self.t) else None
                        if self.t[j - 1] in ("*", "&") and after is not None and after not in (")", ",", ";", "]"):
                            return True  # `(volatile int *)&x`: a pointer type, so a cast
                        return (
                            after is not None and after not in _BIN_PREC and after not in (")", ",", ";", "]", "?", ":")
                        )
                    depth -= 1
                j += 1
        return False

    def type_or_expr(self) -> Node:
        # a type: sequence of type words / names ending before ')' or ',' or '>'
        start = self.i
        words = []
        while self.peek() in _TYPE_WORDS:
            words.append(self.take())
        if words and self.peek() in (")", ",", ">", "*", "&", None):
            while self.peek() in ("*", "&"):
                words.append(self.take())
            return TypeWords(tuple(words))
        self.i = start
        node = self.expression()
        while self.peek() in ("*", "&", "&&") and self.peek(1) in (")", ",", ">", None):
            self.take()
        return node

    def primary(self) -> Node:
        tok = self.peek()
        if tok is None:
            raise ParseError("unexpected end")
        if tok == "(":
            self.take()
            e = self.comma_expr()
            self.take(")")
            return e
        if tok == "{":
            return self.brace()
        if tok == "[":
            return self.lambda_()
        if tok in ("true", "false"):
            self.take()
            return Bool(tok == "true")
        if tok in ("nullptr", "NULL"):
            self.take()
            return Null()
        if tok[0] == '"' or tok[0] == "'" or (len(tok) > 1 and tok[1] == '"'):
            self.take()
            return Str(tok)
        n = parse_int(tok)
        if n is not None:
            self.take()
            return Num(n)
        if tok[0].isdigit() or (tok[0] == "." and len(tok) > 1 and tok[1].isdigit()):
            self.take()
            return Float(tok)
        if tok in _CASTS:
            self.take()
            self._targs_begin()
            start = self.i
            try:
                ty = self.type_or_expr()
                if self.peek() not in (">", ">>"):
                    raise ParseError("type")
            except (ParseError, IndexError):
                # a declarator type the grammar does not read (`o_sv(*)[4]`): skip to the '>'
                self.i, depth = start, 0
                skipped = []
                while self.peek() is not None and not (depth == 0 and self.peek() in (">", ">>")):
                    if self.peek() == ">>" and depth == 1:
                        break  # `st_bf<32, 128>>`: the inner '>' and the cast's
                    depth += {"(": 1, "[": 1, "<": 1, ")": -1, "]": -1, ">": -1, ">>": -2}.get(self.peek(), 0)
                    skipped.append(self.take())
                ty = TypeWords(("?",) + tuple(skipped))  # the words kept: `T(&)[N]` is read later
            self._targs_end()
            self.take("(")
            e = self.comma_expr()
            self.take(")")
            return Cast(ty, e)
        if tok in _TYPE_WORDS - {
            "const",
            "static",
            "constexpr",
            "typename",
            "struct",
            "class",
            "volatile",
            "auto",
            "__restrict__",
            "register",
            "inline",
        }:
            # functional cast: int(x), float(x)
            self.take()
            if self.peek() == "(":
                self.take()
                e = self.comma_expr() if self.peek() != ")" else Num(0)
                self.take(")")
                return Cast(TypeWords((tok,)), e)
            return TypeWords((tok,))
        if tok in ("typename", "template", "struct", "class", "const"):
            self.take()
            return self.primary()
        if tok == "::" or tok[0].isalpha() or tok[0] == "_":
            return self.name()
        raise ParseError(f"unexpected token {tok!r}")

    def name(self) -> Node:
        segs = []
        if self.peek() == "::":
            self.take()
        while True:
            if self.peek() == "template":
                self.take()
            ident = self.take()
            if not (ident[0].isalpha() or ident[0] == "_" or ident == "~"):
                raise ParseError(f"bad name {ident!r}")
            targs = None
            if self.peek() == "<" and self._template_follows(ident):
                targs = self.template_args()
            segs.append(Segment(ident, targs))
            if self.peek() == "::" and self.peek(1) is not None:
                self.take()
                continue
            break
        return Name(tuple(segs))

    def _template_follows(self, ident: str) -> bool:
        if self.is_value(ident):
            return False
        known = ident in KNOWN_TEMPLATES
        # find the matching '>' with bracket balance, then look at what follows
        depth = 0
        j = self.i
        while j < len(self.t):
            tk = self.t[j]
            if tk in ("(", "[", "{"):
                depth += 1
            elif tk in (")", "]", "}"):
                depth -= 1
                if depth < 0:
                    return False
            elif tk in (";", "&&", "||") and depth == 0:
                return False
            elif tk == "<" and depth == 0:
                pass
            elif tk == ">" and depth == 0:
                after = self.t[j + 1] if j + 1 < len(self.t) else None
                return (
                    known
                    or after in (None, "(", "::", "{", ",", ")", ">", ";", "&", "*", "]", ">>")
                    or (after is not None and (after[0].isalpha() or after[0] == "_"))
                )
            elif tk == ">>" and depth == 0:
                return True
            j += 1
        return False

    def _targs_begin(self):
        self.take("<")
        self._in_targs += 1

    def _targs_end(self):
        self._in_targs -= 1
        tok = self.peek()
        if tok == ">>":  # split '>>' into two closing brackets
            self.t[self.i] = ">"
            return
        self.take(">")

    def template_args(self) -> tuple[Node, ...]:
        self._targs_begin()
        args = []
        while self.peek() not in (">", ">>"):
            args.append(self.type_or_expr())
            if self.peek() == "...":
                self.take()
            if self.peek() == ",":
                self.take()
        self._targs_end()
        return tuple(args)

    def brace(self) -> Init:
        self.take("{")
        items = []
        while self.peek() != "}":
            if self.peek() == "." and self.peek(2) == "=":  # designated initializer
                self.take()
                self.take()
                self.take("=")
            items.append(self.expression())
            if self.peek() == ",":
                self.take()
        self.take("}")
        return Init(tuple(items))

    def lambda_(self) -> Node:
        # the i-th lambda of the expression (in source order, nested ones not counted); the
        # walker finds its clang cursor and walks the body where it is called
        self._lambdas += 1
        idx = self._lambdas - 1
        depth = 0
        while not self.done():
            tok = self.take()
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth -= 1
                if depth == 0:
                    break
        return LambdaExpr(idx)

    def postfix(self, node: Node) -> Node:
        while True:
            tok = self.peek()
            if tok == "(":
                self.take()
                args = []
                while self.peek() != ")":
                    args.append(self.expression())
                    if self.peek() == "...":
                        self.take()
                    if self.peek() == ",":
                        self.take()
                self.take(")")
                node = Call(node, tuple(args))
            elif tok == "{" and isinstance(node, Name):
                node = Call(node, self.brace().items)
            elif tok == "[":
                self.take()
                idx = self.comma_expr()
                self.take("]")
                node = Index(node, idx)
            elif tok in (".", "->") and self.peek(1) == "*" or tok == "->*":
                # pointer to member: `g.*member_ptr`
                self.take()
                if tok != "->*":
                    self.take()
                node = MemberPtr(node, self.postfix(self.primary()))
            elif tok in (".", "->"):
                self.take()
                if self.peek() == "template":
                    self.take()
                field = self.take()
                targs = self.template_args() if self.peek() == "<" and self._template_follows(field) else None
                node = Member(node, field, tok == "->", targs)
            elif tok in ("++", "--"):
                self.take()
                node = Post(tok, node)
            else:
                return node

    def comma_expr(self) -> Node:
        e = self.expression()
        while self.peek() == ",":
            self.take()
            e = Comma(e, self.expression())
        return e


def parse_expression(toks: Sequence[str], is_value=None) -> Node:
    """Parse a whole token list as one expression; Unknown(text) when it fails."""
    toks = [t for t in toks if t != ";"]
    if not toks:
        return Unknown("")
    p = Parser(toks, is_value)
    try:
        node = p.comma_expr()
        if not p.done():
            return Unknown(" ".join(toks))
        return node
    except (ParseError, IndexError, RecursionError):
        return Unknown(" ".join(toks))


def name_of(node: Node) -> str | None:
    """`kittens::tma::load_async` for a name node (template args dropped)."""
    if not isinstance(node, Name):
        return None
    return "::".join(seg.name for seg in node.segments)


def render(node: Node) -> str:
    """Source-like text for messages."""
    match node:
        case Num(value):
            return str(value)
        case Float(text) | Str(text) | Unknown(text):
            return text
        case Bool(value):
            return "true" if value else "false"
        case Name(segments):
            return "::".join(
                seg + (f"<{', '.join(render(a) for a in targs)}>" if targs is not None else "")
                for seg, targs in segments
            )
        case Call(callee, args):
            return f"{render(callee)}({', '.join(render(a) for a in args)})"
        case Member(obj, field, arrow):
            return f"{render(obj)}{'->' if arrow else '.'}{field}"
        case Index(obj, index):
            return f"{render(obj)}[{render(index)}]"
        case Bin(op, a, b) | Assign(op, a, b):
            return f"{render(a)} {op} {render(b)}"
        case Un(op, a):
            return f"{op}{render(a)}"
        case Post(op, a):
            return f"{render(a)}{op}"
        case Cond(c, a, b):
            return f"{render(c)} ? {render(a)} : {render(b)}"
        case Cast(_, a):
            return render(a)
        case Sizeof(a):
            return f"sizeof({render(a)})"
        case Init(items):
            return "{" + ", ".join(render(a) for a in items) + "}"
        case TypeWords(words):
            return " ".join(words)
        case Comma(a, b):
            return f"{render(a)}, {render(b)}"
    return _UNRENDERED[type(node)]


def spelled(node: Node) -> str | None:
    """The expression as the user wrote it, up to spaces and redundant parentheses (`k % STAGES`,
    `(k + 1) % STAGES`): parentheses where C++'s precedence needs them, None for a node the
    walker built (no source text). For what findings show of a user's expression."""
    try:
        return _spelled(node, 0)
    except _NoSource:
        return None


class _NoSource(Exception):
    pass


def _clarify(op: str, operand: Node) -> bool:
    """Whether an operand of `op` is shown in parentheses precedence does not need."""
    if not isinstance(operand, Bin) or operand.op == op:
        return False
    return not (op in ("+", "-") and operand.op in ("*", "/", "%"))


# binding strength of the non-binary forms, above and below _BIN_PREC's 1..10
_PREC_POSTFIX, _PREC_UNARY, _PREC_COND, _PREC_ASSIGN, _PREC_COMMA = 13, 12, 0.5, 0.4, 0.3


def _spelled(node: Node, need: float) -> str:
    """`node` in a context that binds with strength `need`: parenthesised when it binds weaker."""

    def wrap(text: str, prec: float) -> str:
        return f"({text})" if prec < need else text

    match node:
        case Num(value):
            return str(value)
        case Float(text) | Str(text):
            return text
        case Bool(value):
            return "true" if value else "false"
        case Name(segments):
            return "::".join(
                seg + (f"<{', '.join(_spelled(a, _PREC_ASSIGN) for a in targs)}>" if targs is not None else "")
                for seg, targs in segments
            )
        case Call(callee, args):
            return f"{_spelled(callee, _PREC_POSTFIX)}({', '.join(_spelled(a, _PREC_ASSIGN) for a in args)})"
        case Member(obj, field, arrow, targs):
            targ = f"<{', '.join(_spelled(a, _PREC_ASSIGN) for a in targs)}>" if targs is not None else ""
            return f"{_spelled(obj, _PREC_POSTFIX)}{'->' if arrow else '.'}{field}{targ}"
        case Index(obj, index):
            return f"{_spelled(obj, _PREC_POSTFIX)}[{_spelled(index, 0)}]"
        case Bin(op, a, b):
            prec = _BIN_PREC.get(op, 1)
            # left-associative: the right operand of `a - (b - c)` keeps its parentheses; an
            # operand that mixes in another operator keeps the parentheses users write for
            # clarity (`((k / STAGES) % 2) ^ 1`), except a product in a sum (`2 * s + 1`)
            left, right = _spelled(a, prec), _spelled(b, prec + 0.5)
            if _clarify(op, a) and _BIN_PREC.get(a.op, 1) >= prec:  # type: ignore[union-attr]
                left = f"({left})"
            if _clarify(op, b) and _BIN_PREC.get(b.op, 1) >= prec + 0.5:  # type: ignore[union-attr]
                right = f"({right})"
            return wrap(f"{left} {op} {right}", prec)
        case Un(op, a):
            return wrap(f"{op}{_spelled(a, _PREC_UNARY)}", _PREC_UNARY)
        case Post(op, a):
            return wrap(f"{_spelled(a, _PREC_POSTFIX)}{op}", _PREC_POSTFIX)
        case Assign(op, a, b):
            return wrap(f"{_spelled(a, _PREC_UNARY)} {op} {_spelled(b, _PREC_ASSIGN)}", _PREC_ASSIGN)
        case Cond(c, a, b):
            text = f"{_spelled(c, 1)} ? {_spelled(a, _PREC_ASSIGN)} : {_spelled(b, _PREC_COND)}"
            return wrap(text, _PREC_COND)
        case Sizeof(a):
            return f"sizeof({_spelled(a, 0)})"
        case TypeWords(words):
            return " ".join(words)
        case Comma(a, b):
            return wrap(f"{_spelled(a, _PREC_COMMA)}, {_spelled(b, _PREC_ASSIGN)}", _PREC_COMMA)
    # Cast: the parser keeps no spelling of its form (C-style or static_cast<>); Unknown, Value,
    # Init, lambdas: no expression text to show
    raise _NoSource


# what a node without source text renders as (the names the walker's messages have always used)
_UNRENDERED = {Null: "null", LambdaExpr: "lambda", MemberPtr: "memptr_access", Value: "__expr"}
