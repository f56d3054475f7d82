"""One walk of the parse tree builds the KernelModel of each kernel.

libclang supplies statement structure and declarations; expressions are parsed
from their tokens (`cexpr`) and folded by `Evaluator` into model values. The
walk is a small abstract interpreter:

* a *guard* (thread predicate + uniform conditions) is carried into every
  branch, so each op knows which threads run it;
* loops become `Loop`s with an iteration counter; variables the body updates
  (`tic ^= 1`, `stage = (stage + 1) % STAGES`, `k++`) are solved into closed
  forms over that counter, so phases stay symbolic;
* calls are looked up in the knowledge table (TK ops become model Ops), or
  inlined when they are the user's own device functions (and the callbacks of
  TK prototype templates), or become opaque values;
* nothing is guessed: what cannot be modelled becomes an opaque value or an
  inexact guard, which the checks treat as "unknown".
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import clang.cindex as ci

from ..findings import Location
from ..knowledge import ops as K
from ..model import expr as E
from ..model import ir
from ..model.expr import Expr
from . import cexpr
from .lexer import SourceText, lex
from .values import Allocator, Func, GroupScope, Obj, Rec, StructType, TypeVal

CK = ci.CursorKind
MAX_INLINE_DEPTH = 8


# ------------------------------------------------------------------ env ----

class Env:
    def __init__(self, parent: "Env | None" = None):
        self.vars: dict[str, Any] = {}
        self.parent = parent

    # A BranchEnv on the way up keeps the writes of its branch aside: lookups
    # and assignments from nested scopes must go through it, not around it.
    def lookup(self, name: str):
        e = self
        while e is not None:
            if name in e.vars:
                return e.vars[name]
            if isinstance(e, BranchEnv):
                return e.lookup(name)
            e = e.parent
        return None

    def has(self, name: str) -> bool:
        e = self
        while e is not None:
            if name in e.vars:
                return True
            if isinstance(e, BranchEnv):
                return e.has(name)
            e = e.parent
        return False

    def define(self, name: str, value) -> None:
        self.vars[name] = value

    def assign(self, name: str, value) -> bool:
        e = self
        while e is not None:
            if name in e.vars:
                e.vars[name] = value
                return True
            if isinstance(e, BranchEnv):
                return e.assign(name, value)
            e = e.parent
        return False

    def child(self) -> "Env":
        return Env(self)


class BranchEnv(Env):
    """The scope of one branch of an `if`: writes to outer variables are kept
    aside so that after the `if` each variable becomes `cond ? then : else`."""

    def __init__(self, parent: Env):
        super().__init__(parent)
        self.writes: dict[str, Any] = {}

    def lookup(self, name: str):
        if name in self.vars:
            return self.vars[name]
        if name in self.writes:
            return self.writes[name]
        return self.parent.lookup(name) if self.parent else None

    def has(self, name: str) -> bool:
        return name in self.vars or name in self.writes or (self.parent is not None and self.parent.has(name))

    def assign(self, name: str, value) -> bool:
        if name in self.vars:
            self.vars[name] = value
            return True
        if self.parent is not None and self.parent.has(name):
            self.writes[name] = value
            return True
        return False


@dataclass
class Ctx:
    env: Env
    guard: ir.Guard
    loops: tuple[int, ...] = ()
    callers: tuple[Location, ...] = ()
    depth: int = 0
    dry: bool = False                 # evaluate effects on variables only, emit no ops
    role_hint: str | None = None
    frame: "Frame | None" = None


@dataclass
class Frame:
    """An inlined function call: collects its return value."""
    returns: list = field(default_factory=list)



def loc_of(cursor, filename: str) -> Location:
    ext = cursor.extent
    s, e = ext.start, ext.end
    fname = filename
    if s.file is not None and not _same_file(s.file.name, filename):
        fname = s.file.name
    return Location(fname, max(s.line, 1), max(s.column, 1), max(e.line, 1), max(e.column, 1))


def _same_file(a: str, b: str) -> bool:
    # no cache: a relative name's absolute path depends on the current folder
    import os
    return a == b or os.path.abspath(a) == os.path.abspath(b)


_texts: dict[str, "SourceText | None"] = {}
_unsaved: dict[str, str] = {}


def register_text(abs_path: str, text: str) -> None:
    """The text a file was parsed from (the main file comes from memory)."""
    import os
    _texts[os.path.abspath(abs_path)] = SourceText(text)


def _text_for(fname: str) -> "SourceText | None":
    import os
    key = os.path.abspath(fname)
    if key not in _texts:
        try:
            with open(key, "rb") as fh:
                _texts[key] = SourceText(fh.read().decode("utf-8", errors="replace"))
        except OSError:
            _texts[key] = None
    return _texts[key]


def tokens_of(cursor) -> list[str]:
    """Tokens of a cursor's source range, lexed from the file text."""
    ext = cursor.extent
    s, e = ext.start, ext.end
    if s.file is None or e.file is None or s.file.name != e.file.name:
        return [t.spelling for t in cursor.get_tokens() if t.kind != ci.TokenKind.COMMENT]
    src = _text_for(s.file.name)
    if src is None:
        return [t.spelling for t in cursor.get_tokens() if t.kind != ci.TokenKind.COMMENT]
    return lex(src.slice(s.line, s.column, e.line, e.column))


# ------------------------------------------------------------ the model ----

class ModelBuilder:
    """Builds KernelModels for one parsed file."""

    def __init__(self, parsed):
        self.parsed = parsed
        self.tu = parsed.tu
        self.filename = parsed.path
        self.abs_path = parsed.abs_path
        register_text(parsed.abs_path, parsed.text)
        self.globals_env = Env()
        self.functions: dict[str, list] = {}      # user device functions by name (with bodies)
        self.structs: dict[str, Any] = {}         # user struct/class cursors by name
        self.kernels: list = []                   # __global__ function cursors in the main file
        self.templates: list = []                 # structs that look like lcf/lcsf kernel templates
        self.macros: dict[str, list[str]] = {}
        self._collect()

    # -- collection of top-level declarations ------------------------------
    def _in_user_code(self, cursor) -> bool:
        f = cursor.location.file
        if f is None:
            return False
        name = f.name
        if _same_file(name, self.abs_path):
            return True
        # the user's own headers (not the model, not real TK / system headers)
        return ("tkcheck" not in name and "/include/" not in name and not name.startswith("/usr")
                and "ThunderKittens" not in name)

    def _collect(self):
        for c in self.tu.cursor.get_children():
            self._collect_decl(c, self.globals_env, top=True)

    def _collect_decl(self, c, env: Env, top: bool = False):
        kind = c.kind
        if kind == CK.MACRO_DEFINITION:
            if c.location.file is not None and _same_file(c.location.file.name, self.abs_path):
                toks = tokens_of(c)
                # object-like macros only: NAME value...
                if len(toks) >= 2 and not (len(toks) > 2 and toks[1] == "(" and
                                           _adjacent(c)):
                    self.macros[toks[0]] = toks[1:]
            return
        if kind == CK.NAMESPACE:
            for ch in c.get_children():
                self._collect_decl(ch, env)
            return
        if not self._in_user_code(c):
            return
        if kind in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE):
            if any(ch.kind == CK.COMPOUND_STMT for ch in c.get_children()):
                self.functions.setdefault(c.spelling, []).append(c)
                if any(ch.kind == CK.CUDAGLOBAL_ATTR for ch in c.get_children()) and \
                        _same_file(c.location.file.name, self.abs_path):
                    self.kernels.append(c)
        elif kind in (CK.STRUCT_DECL, CK.CLASS_DECL, CK.CLASS_TEMPLATE):
            if c.spelling:
                self.structs[c.spelling] = c
                env.define(c.spelling, ("struct_decl", c))
                if _same_file(c.location.file.name, self.abs_path) and self._is_prototype_template(c):
                    self.templates.append(c)
        elif kind in (CK.TYPE_ALIAS_DECL, CK.TYPEDEF_DECL, CK.TYPE_ALIAS_TEMPLATE_DECL):
            env.define(c.spelling, ("alias_decl", c))
        elif kind == CK.VAR_DECL:
            env.define(c.spelling, ("var_decl", c))
        elif kind == CK.ENUM_DECL:
            val = 0
            for ch in c.get_children():
                if ch.kind == CK.ENUM_CONSTANT_DECL:
                    try:
                        val = ch.enum_value
                    except Exception:  # noqa: BLE001 - libclang raises on dependent values
                        pass
                    env.define(ch.spelling, E.Const(val))
                    val += 1

    def _is_prototype_template(self, c) -> bool:
        names = {ch.spelling: ch for ch in c.get_children() if ch.kind in (CK.STRUCT_DECL, CK.CLASS_DECL)}
        prod, cons = names.get("producer"), names.get("consumer")
        if prod is None or cons is None:
            return False
        pm = {ch.spelling for ch in prod.get_children()}
        cm = {ch.spelling for ch in cons.get_children()}
        return "load" in pm and "compute" in cm

    # -- public ------------------------------------------------------------
    def build(self) -> list[ir.KernelModel]:
        models = []
        for k in self.kernels:
            models.append(KernelWalker(self, k).build_global())
        for t in self.templates:
            m = KernelWalker(self, t).build_prototype()
            if m is not None:
                models.append(m)
        return models


def _adjacent(macro_cursor) -> bool:
    """True when a macro is function-like: '(' directly after the name."""
    toks = list(macro_cursor.get_tokens())
    if len(toks) < 2:
        return False
    a, b = toks[0].extent.end, toks[1].extent.start
    return a.line == b.line and a.column == b.column


# ----------------------------------------------------------- the walker ----

_THREAD_FUNCS_GROUP = {"laneid", "warpid", "groupid"}
_NAMESPACES = {"kittens", "std", "prototype", "lcf", "lcsf", "lcsc", "interpreter", "ducks", "cute", "cuda"}


class KernelWalker:
    def __init__(self, mb: ModelBuilder, cursor):
        self.mb = mb
        self.cursor = cursor
        self.filename = mb.filename
        self.model: ir.KernelModel | None = None
        self._order = 0
        self._loop_ids = 0
        self.tk_lane_guarded = mb.parsed.tk_semantics == "lane-guarded"
        self._struct_cache: dict[str, StructType] = {}
        self._loop_breaks: list = []  # `break`s seen in the loop being walked (its trip is then unknown)
        self._no_elem_access = 0      # > 0 while evaluating an lvalue or an address (`&x[i]`)
        self._phasebit_reads: dict = {}  # parity expr -> (bitfield name, bit position) of get_phasebit

    # ================================================================ entry
    def _new_model(self, name, kind) -> ir.KernelModel:
        m = ir.KernelModel(name=name, location=loc_of(self.cursor, self.filename), kind=kind,
                           block_threads=None)
        m.tk_semantics = self.mb.parsed.tk_semantics
        return m

    def build_global(self) -> ir.KernelModel:
        c = self.cursor
        self.model = m = self._new_model(c.spelling, "global")
        env = self.mb.globals_env.child()
        self._bind_template_params(c, env, m)
        bounds = self._launch_bounds(c, env)
        m.launch_bounds = self._has_launch_bounds(c)
        if bounds is not None:
            m.block_threads, m.min_blocks = bounds
            m.block_threads_source = "__launch_bounds__"
        else:
            n = self._launch_config_threads(c)
            if n is not None:
                m.block_threads = E.Const(n)
                m.block_threads_source = "launch configuration in the file"
        if m.block_threads is None:
            m.notes.append(f"block size of kernel '{c.spelling}' unknown (no __launch_bounds__): "
                           "thread counts are not checked")
        # parameters: uniform values, global layouts, struct records
        for p in c.get_children():
            if p.kind == CK.PARM_DECL:
                env.define(p.spelling, self._param_value(p, env))
        body = next((ch for ch in c.get_children() if ch.kind == CK.COMPOUND_STMT), None)
        ctx = Ctx(env=env, guard=ir.Guard())
        if body is not None:
            self.walk(body, ctx)
        return m

    def build_prototype(self) -> ir.KernelModel | None:
        """A kernel built from TK's lcf/lcsf template: the user's callbacks run
        inside tkcheck's model of the template's protocol."""
        from ..knowledge import protocols

        tmpl = self.cursor
        kind = protocols.template_kind_for(self.mb.parsed.text, tmpl.spelling)
        proto_fn = protocols.protocol_function(kind)
        if proto_fn is None:
            return None
        self.model = m = self._new_model(tmpl.spelling, kind)
        env = self.mb.globals_env.child()
        st = self.struct_type(tmpl, {})
        env.define("lcft", st)
        m.notes.append(f"'{tmpl.spelling}' analysed inside tkcheck's model of the TK {kind} template protocol")
        for prm in proto_fn.get_children():
            if prm.kind == CK.PARM_DECL:   # the kernel's `globals` argument
                env.define(prm.spelling, self._param_value(prm, env))
        body = next((ch for ch in proto_fn.get_children() if ch.kind == CK.COMPOUND_STMT), None)
        ctx = Ctx(env=env, guard=ir.Guard())
        self._protocol = True
        self.walk(body, ctx)
        return m

    # ======================================================= declarations
    def _bind_template_params(self, c, env: Env, m: ir.KernelModel | None):
        folded = []
        for ch in c.get_children():
            if ch.kind == CK.TEMPLATE_NON_TYPE_PARAMETER:
                default = None
                toks = tokens_of(ch)
                if "=" in toks:
                    node = cexpr.parse_expression(toks[toks.index("=") + 1:], env.has)
                    default = self.ev(node, Ctx(env=env, guard=ir.Guard(), dry=True))
                if isinstance(default, Expr) and not default.is_opaque():
                    env.define(ch.spelling, default)
                    folded.append(f"{ch.spelling}={default}")
                    if m is not None:
                        m.template_params[ch.spelling] = default
                else:
                    v = E.Var(ch.spelling, E.PARAM)
                    env.define(ch.spelling, v)
                    if m is not None:
                        m.template_params[ch.spelling] = None
            elif ch.kind == CK.TEMPLATE_TYPE_PARAMETER:
                toks = tokens_of(ch)
                if "=" in toks:
                    node = cexpr.parse_expression(toks[toks.index("=") + 1:], env.has)
                    t = self.resolve_type(node, env)
                    if t is not None:
                        env.define(ch.spelling, t)
                        folded.append(f"{ch.spelling}={cexpr.render(node)}")
        if folded and m is not None:
            m.notes.append(f"template defaults assumed for '{c.spelling}': {', '.join(folded)}")

    def _attribute_text(self, c) -> str:
        """The text before the kernel's name, object-like macros expanded
        (`#define BOUNDS __launch_bounds__(256, 1)`)."""
        lines = self.mb.parsed.text.splitlines()
        lo = max(0, c.extent.start.line - 4)
        chunk = "\n".join(lines[lo:c.location.line])
        for _ in range(3):
            chunk = re.sub(r"[A-Za-z_][A-Za-z_0-9]*",
                           lambda mm: " ".join(self.mb.macros[mm.group()]) if mm.group() in self.mb.macros
                           else mm.group(), chunk)
        return chunk

    def _has_launch_bounds(self, c) -> bool | None:
        if re.search(r"__launch_bounds__\s*\(", self._attribute_text(c)):
            return True
        # an attribute libclang does not name may still be launch_bounds
        if any(ch.kind == CK.UNEXPOSED_ATTR for ch in c.get_children()):
            return None
        return False

    def _launch_bounds(self, c, env) -> tuple[Expr, Expr | None] | None:
        """`__launch_bounds__(threads, blocks)` before the kernel's name. The
        cursor's extent may start after the attribute, so read the text."""
        chunk = self._attribute_text(c)
        m = None
        for m in re.finditer(r"__launch_bounds__\s*\(", chunk):
            pass
        if m is None:
            return None
        rest = chunk[m.end():]
        depth, j = 1, 0
        while j < len(rest) and depth:
            depth += {"(": 1, ")": -1}.get(rest[j], 0)
            j += 1
        inner = rest[:j - 1]
        toks = re.findall(r"[A-Za-z_][A-Za-z_0-9]*|0[xX][0-9a-fA-F]+|\d+|::|<<|>>|\S", inner)
        node = cexpr.parse_expression(toks, env.has)
        parts = _split_comma(node)
        ctx = Ctx(env=env, guard=ir.Guard(), dry=True)
        n = self.ev(parts[0], ctx)
        mb = self.ev(parts[1], ctx) if len(parts) > 1 else None
        if isinstance(n, Expr) and not n.is_opaque():
            return n, mb if isinstance(mb, Expr) else None
        return None

    def _launch_config_threads(self, kernel) -> int | None:
        """`kernel<<<grid, 384, smem>>>` in the same file: the block size, when constant."""
        text = self.mb.parsed.text
        name = re.escape(kernel.spelling)
        vals = set()
        for mm in re.finditer(name + r"\s*(?:<[^;<>]*(?:<[^;<>]*>[^;<>]*)*>)?\s*<<<([^;]*?)>>>", text):
            parts = _split_top(mm.group(1))
            if len(parts) >= 2:
                tok = parts[1].strip()
                tok = re.sub(r"^dim3\s*\(\s*([^,()]+)\s*\)$", r"\1", tok)
                v = self._fold_text(tok)
                if v is None:
                    return None
                vals.add(v)
        return vals.pop() if len(vals) == 1 else None

    def _fold_text(self, text: str) -> int | None:
        toks = re.findall(r"[A-Za-z_][A-Za-z_0-9]*|\d+|::|<<|>>|\S", text)
        node = cexpr.parse_expression(toks, self.mb.globals_env.has)
        v = self.ev(node, Ctx(env=self.mb.globals_env, guard=ir.Guard(), dry=True))
        if isinstance(v, Expr):
            c = v.eval({})
            return c if isinstance(c, int) and not isinstance(c, bool) else None
        return None

    def _param_value(self, p, env):
        t = self.resolve_type_spelling(p.type.spelling, env)
        if isinstance(t, ir.TileType) and t.kind == "gl":
            self.model.globals[p.spelling] = t
            return Obj("gl", ir.Ref(p.spelling), t)
        if isinstance(t, StructType):
            return self._struct_record(t, p.spelling, uniform=True)
        if isinstance(t, ir.TileType) and t.kind != "scalar":
            return Obj(t.kind, ir.Ref(p.spelling), t)
        return E.Var(p.spelling, E.PARAM)   # `int n`, pointers: uniform runtime values

    def _struct_record(self, st: StructType, prefix: str, uniform: bool) -> Rec:
        """A kernel parameter of user struct type (e.g. `globals g`): fields resolved lazily."""
        rec = Rec(type_name=st.name)
        for name, cur in st.members.items():
            if cur.kind == CK.FIELD_DECL:
                t = self.resolve_type_spelling(cur.type.spelling, st.env)
                if isinstance(t, ir.TileType) and t.kind == "gl":
                    self.model.globals[f"{prefix}.{name}"] = t
                    rec.fields[name] = Obj("gl", ir.Ref(f"{prefix}.{name}"), t)
                elif isinstance(t, StructType):
                    rec.fields[name] = self._struct_record(t, f"{prefix}.{name}", uniform)
                else:
                    rec.fields[name] = E.Var(f"{prefix}.{name}", E.PARAM)
        return rec

    # ================================================================ types
    def struct_type(self, cursor, targs: dict[str, Any], parent_env: Env | None = None) -> StructType:
        """A user struct with its template arguments bound. A nested struct
        (lcf's `layout::input_block`) resolves names in its enclosing struct."""
        sp = cursor.semantic_parent
        nested = sp is not None and sp.kind in (CK.STRUCT_DECL, CK.CLASS_DECL, CK.CLASS_TEMPLATE)
        base_env = parent_env if (nested and parent_env is not None) else (
            self._env_for_decl(cursor) if nested else self.mb.globals_env)
        key = f"{cursor.hash}:{id(base_env)}:{sorted((k, str(v)) for k, v in targs.items())}"
        st = self._struct_cache.get(key)
        if st is not None:
            return st
        env = base_env.child()
        st = StructType(cursor.spelling, cursor, env)
        self._struct_cache[key] = st
        # template parameters: explicit args, else defaults
        tparams = [ch for ch in cursor.get_children()
                   if ch.kind in (CK.TEMPLATE_NON_TYPE_PARAMETER, CK.TEMPLATE_TYPE_PARAMETER)]
        for p in tparams:
            if p.spelling in targs:
                env.define(p.spelling, targs[p.spelling])
        rest = [p for p in tparams if p.spelling not in targs]
        if rest:
            self._bind_template_params_list(rest, env)
        for ch in cursor.get_children():
            if ch.spelling:
                st.members.setdefault(ch.spelling, ch)
            if ch.kind in (CK.STRUCT_DECL, CK.CLASS_DECL, CK.CLASS_TEMPLATE):
                env.define(ch.spelling, ("struct_decl", ch))
            elif ch.kind in (CK.TYPE_ALIAS_DECL, CK.TYPEDEF_DECL):
                env.define(ch.spelling, ("alias_decl", ch))
            elif ch.kind == CK.VAR_DECL:  # static constexpr members
                env.define(ch.spelling, ("var_decl", ch))
            elif ch.kind in (CK.CXX_METHOD, CK.FUNCTION_TEMPLATE):
                f = env.vars.get(ch.spelling)
                if isinstance(f, Func):
                    f.cursors.append(ch)
                else:
                    env.define(ch.spelling, Func(ch.spelling, [ch], st))
        return st

    def _bind_template_params_list(self, params, env):
        for ch in params:
            toks = tokens_of(ch)
            if "=" in toks:
                node = cexpr.parse_expression(toks[toks.index("=") + 1:], env.has)
                if ch.kind == CK.TEMPLATE_TYPE_PARAMETER:
                    t = self.resolve_type(node, env)
                    if t is not None:
                        env.define(ch.spelling, t)
                    continue
                v = self.ev(node, Ctx(env=env, guard=ir.Guard(), dry=True))
                if isinstance(v, Expr) and not v.is_opaque():
                    env.define(ch.spelling, v)
                    continue
            if ch.kind == CK.TEMPLATE_NON_TYPE_PARAMETER:
                env.define(ch.spelling, E.Var(ch.spelling, E.PARAM))

    def resolve_type_spelling(self, spelling: str, env: Env):
        s = re.sub(r"\b(const|volatile|__restrict__|struct|class|typename|__grid_constant__)\b", " ", spelling)
        s = s.replace("&", " ").strip()
        if s.endswith("*"):
            return None
        toks = re.findall(r"[A-Za-z_][A-Za-z_0-9]*|0[xX][0-9a-fA-F]+|\d+|::|<<|>>|\S", s)
        if not toks:
            return None
        node = cexpr.parse_expression(toks, env.has)
        return self.resolve_type(node, env)

    def resolve_type(self, node, env: Env):
        """A type node -> TileType | StructType | None."""
        if node is None:
            return None
        if node[0] == "type":
            words = [w for w in node[1] if w not in ("const", "volatile", "*", "&", "unsigned", "signed")]
            w = words[-1] if words else "int"
            return ir.TileType("scalar", w, dtype=w, dtype_bytes=K.DTYPE_BYTES.get(w, 4))
        if node[0] != "name":
            return None
        segs = [s for s in node[1] if s[0] not in _NAMESPACES or s is node[1][-1]]
        if not segs:
            return None
        head, targs = segs[0]
        cur = None
        if len(segs) == 1 or (head in K.TILE_ALIASES and targs is not None):
            if head in K.TILE_ALIASES and (targs is not None or head == "semaphore"):
                cur = self._tile_from_alias(head, targs or (), env)
                rest = segs[1:]
                return self._type_member_chain(cur, rest, env)
        val = env.lookup(head)
        if val is None and head in self.mb.structs:
            val = ("struct_decl", self.mb.structs[head])
        cur = self._type_of_value(val, targs, env)
        if cur is None:
            if head in K.DTYPE_BYTES:
                return ir.TileType("scalar", head, dtype=K.DTYPE_CANON.get(head, head),
                                   dtype_bytes=K.DTYPE_BYTES[head])
            return None
        return self._type_member_chain(cur, segs[1:], env)

    def _type_of_value(self, val, targs, env):
        if isinstance(val, ir.TileType) or isinstance(val, StructType):
            return val
        if isinstance(val, TypeVal):
            return val.type
        if isinstance(val, tuple) and val[0] == "alias_decl":
            return self._alias_target(val[1])
        if isinstance(val, tuple) and val[0] == "struct_decl":
            bound = {}
            if targs:
                tparams = [ch for ch in val[1].get_children()
                           if ch.kind in (CK.TEMPLATE_NON_TYPE_PARAMETER, CK.TEMPLATE_TYPE_PARAMETER)]
                cctx = Ctx(env=env, guard=ir.Guard(), dry=True)
                for p, a in zip(tparams, targs):
                    if p.kind == CK.TEMPLATE_TYPE_PARAMETER:
                        t = self.resolve_type(a, env)
                        if t is not None:
                            bound[p.spelling] = t
                    else:
                        v = self.ev(a, cctx)
                        if isinstance(v, Expr):
                            bound[p.spelling] = v
            return self.struct_type(val[1], bound, parent_env=env)
        return None

    def _alias_target(self, alias_cursor):
        # `using X = <type>;` / `typedef <type> X;` — parse the tokens after '='
        toks = tokens_of(alias_cursor)
        env = self._env_for_decl(alias_cursor)
        if "=" in toks:
            body = toks[toks.index("=") + 1:]
        elif toks and toks[0] == "typedef":
            body = toks[1:-1]
        else:
            return None
        node = cexpr.parse_expression(body, env.has)
        key = ("alias", alias_cursor.hash)
        if key in self._struct_cache:
            return self._struct_cache[key]
        self._struct_cache[key] = None  # recursion guard
        t = self.resolve_type(node, env)
        if isinstance(t, StructType) and node[0] == "name":
            pass
        self._struct_cache[key] = t
        return t

    def _env_for_decl(self, cursor) -> Env:
        """The environment a nested declaration's names resolve in."""
        parent = cursor.semantic_parent
        if parent is not None and parent.kind in (CK.STRUCT_DECL, CK.CLASS_DECL, CK.CLASS_TEMPLATE):
            for st in list(self._struct_cache.values()):
                if isinstance(st, StructType) and st.cursor == parent:
                    return st.env
            return self.struct_type(parent, {}).env
        return self.mb.globals_env

    def _type_member_chain(self, cur, rest, env):
        for seg, targs in rest:
            if cur is None:
                return None
            if isinstance(cur, StructType):
                m = cur.env.vars.get(seg)
                if m is None:
                    return None
                cur = self._type_of_value(m, targs, cur.env)
            elif isinstance(cur, ir.TileType):
                if seg in ("col_vec", "row_vec") and cur.kind == "rt":
                    n = cur.rows if seg == "col_vec" else cur.cols
                    cur = ir.TileType("rv", f"{cur.spelling}::{seg}", cur.dtype, cur.dtype_bytes, cols=n)
                elif seg == "dtype":
                    cur = ir.TileType("scalar", cur.dtype or "?", dtype=cur.dtype, dtype_bytes=cur.dtype_bytes)
                else:
                    return None
        return cur

    def _tile_from_alias(self, alias: str, targs, env: Env) -> ir.TileType | None:
        kind, dtype = K.TILE_ALIASES[alias]
        ctx = Ctx(env=env, guard=ir.Guard(), dry=True)
        args = list(targs)
        spelled = f"{alias}<{', '.join(cexpr.render(a) for a in args)}>" if args else alias
        if kind == "semaphore":
            return ir.TileType("semaphore", "semaphore")
        if dtype is None and kind != "gl" and args:
            dt = self._dtype_name(args.pop(0), env)
            dtype = dt
        if kind == "gl":
            dt = self._dtype_name(args[0], env) if args else None
            regs = []
            for a in args[5:]:
                t = self.resolve_type(a, env)
                if isinstance(t, ir.TileType):
                    regs.append(t)
            return ir.TileType("gl", spelled, dt, K.DTYPE_BYTES.get(dt or "", None), registered=tuple(regs))
        vals = [self.ev(a, ctx) for a in args]
        vals = [v if isinstance(v, Expr) else None for v in vals]
        nbytes = K.DTYPE_BYTES.get(dtype or "", None)
        if kind in ("st", "rt", "tt"):
            rows = vals[0] if len(vals) > 0 else None
            cols = vals[1] if len(vals) > 1 else None
            layout = None
            if kind == "rt" and len(args) > 2:
                layout = "col" if "col" in cexpr.render(args[2]) else "row"
            swz = None
            if kind == "st" and len(vals) > 2 and vals[2] is not None:
                # st<T, R, C, swizzle=true, swizzle_bytes=...>: explicit swizzle flags
                swz = vals[3] if len(vals) > 3 else None
                if isinstance(vals[2], E.Const) and vals[2].value in (False, 0):
                    swz = E.Const(0)
            return ir.TileType(kind, spelled, dtype, nbytes, rows, cols, swz, layout)
        if kind in ("sv", "rv"):
            n = vals[0] if vals else None
            return ir.TileType(kind, spelled, dtype, nbytes, cols=n)
        return None

    def _dtype_name(self, node, env) -> str | None:
        if node[0] == "type":
            w = [x for x in node[1] if x not in ("const",)]
            return w[-1] if w else None
        if node[0] == "name":
            name = node[1][-1][0]
            v = env.lookup(name)
            if isinstance(v, ir.TileType) and v.kind == "scalar":
                return v.dtype
            if isinstance(v, tuple) and v[0] == "alias_decl":
                t = self._alias_target(v[1])
                if isinstance(t, ir.TileType) and t.kind == "scalar":
                    return t.dtype
            return K.DTYPE_CANON.get(name, name)
        return None

    # ========================================================== statements
    def walk(self, c, ctx: Ctx) -> str | None:
        """Walk a statement. Returns 'return'/'break'/'continue' when the
        statement always leaves that way, else None."""
        k = c.kind
        try:
            if k == CK.COMPOUND_STMT:
                return self._walk_block(list(c.get_children()), ctx)
            if k == CK.DECL_STMT:
                stmt_toks = tokens_of(c)
                first_type = None
                for d in c.get_children():
                    if d.kind == CK.VAR_DECL:
                        first_type = self.declare(d, ctx, stmt_toks, first_type)
                    elif d.kind in (CK.TYPE_ALIAS_DECL, CK.TYPEDEF_DECL):
                        ctx.env.define(d.spelling, ("alias_decl", d))
                    elif d.kind in (CK.STRUCT_DECL, CK.CLASS_DECL):
                        ctx.env.define(d.spelling, ("struct_decl", d))
                return None
            if k == CK.IF_STMT:
                return self._walk_if(c, ctx)
            if k in (CK.FOR_STMT, CK.WHILE_STMT, CK.DO_STMT, CK.CXX_FOR_RANGE_STMT):
                self._walk_loop(c, ctx)
                return None
            if k == CK.RETURN_STMT:
                self._walk_return(c, ctx)
                return "return"
            if k == CK.BREAK_STMT:
                return "break"
            if k == CK.CONTINUE_STMT:
                return "continue"
            if k in (CK.ASM_STMT, CK.MS_ASM_STMT):
                self._walk_asm(c, ctx)
                return None
            if k in (CK.NULL_STMT, CK.CASE_STMT, CK.DEFAULT_STMT, CK.LABEL_STMT, CK.GOTO_STMT):
                if k == CK.GOTO_STMT:
                    ctx.guard = ctx.guard.inexact()
                for ch in c.get_children():
                    if ch.kind.is_statement():
                        self.walk(ch, ctx)
                return None
            if k == CK.SWITCH_STMT:
                kids = list(c.get_children())
                inner = replace(ctx, guard=ctx.guard.inexact(), env=ctx.env.child())
                if kids:
                    self.walk(kids[-1], inner)
                return None
            if k == CK.UNEXPOSED_STMT:
                # `#pragma unroll` before a loop: clang's AttributedStmt, unexposed in libclang
                kids = [ch for ch in c.get_children() if ch.kind.is_statement()]
                if len(kids) == 1 and kids[0].kind in (CK.FOR_STMT, CK.WHILE_STMT, CK.DO_STMT,
                                                       CK.CXX_FOR_RANGE_STMT, CK.COMPOUND_STMT):
                    return self.walk(kids[0], ctx)
            if k.is_expression() or k == CK.UNEXPOSED_STMT:
                self.exec_expr(c, ctx)
                return None
            for ch in c.get_children():
                if ch.kind.is_statement() or ch.kind.is_expression():
                    self.walk(ch, ctx)
        except RecursionError:
            ctx.guard = ctx.guard.inexact()
        return None

    def _walk_block(self, stmts, ctx: Ctx) -> str | None:
        for s in stmts:
            r = self.walk(s, ctx)
            if r is not None:
                return r
        return None

    def exec_expr(self, c, ctx: Ctx):
        toks = tokens_of(c)
        if not toks:
            return None
        node = cexpr.parse_expression(toks, ctx.env.has)
        if node[0] == "unknown":
            self._note_unmodelled(c, "expression not understood")
            return None
        return self.ev(node, ctx, cursor=c)

    def _note_unmodelled(self, c, why: str):
        if self.model is not None:
            self.model.unmodelled.append((loc_of(c, self.filename), why))

    # -- declarations -----------------------------------------------------
    def declare(self, d, ctx: Ctx, stmt_toks=None, first_type=None):
        """Declare one variable. Tokens come from the whole declaration
        statement (a declarator's own extent can be empty when the statement
        starts with a macro such as `__shared__`); later declarators of
        `T a, b;` reuse the first one's type tokens. Returns the type tokens."""
        name = d.spelling
        toks = self._declarator_tokens(name, stmt_toks, first_type) if stmt_toks else tokens_of(d)
        is_shared = any(ch.kind == CK.CUDASHARED_ATTR for ch in d.get_children()) or "__shared__" in toks
        is_ref = "&" in d.type.spelling or (toks and "&" in toks[:toks.index(name)] if name in toks else False)
        init_node = None
        if name in toks:
            i = toks.index(name)
            rest = toks[i + 1:]
            # skip array declarators: name[...][...]
            dims_nodes = []
            while rest and rest[0] == "[":
                depth, j = 0, 0
                while j < len(rest):
                    if rest[j] == "[":
                        depth += 1
                    elif rest[j] == "]":
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                dims_nodes.append(cexpr.parse_expression(rest[1:j], ctx.env.has))
                rest = rest[j + 1:]
            if rest and rest[0] == ")":  # `T (&name)[N] = ...`
                rest = rest[1:]
                while rest and rest[0] == "[":
                    j = rest.index("]")
                    dims_nodes.append(cexpr.parse_expression(rest[1:j], ctx.env.has))
                    rest = rest[j + 1:]
            if rest and rest[0] == "=":
                init_node = cexpr.parse_expression(rest[1:], ctx.env.has)
            elif rest and rest[0] in ("{", "("):
                init_node = cexpr.parse_expression(["__ctor"] + rest, ctx.env.has)
        else:
            dims_nodes = []
        # the declared type, from the tokens before the name
        type_toks = toks[:toks.index(name)] if name in toks else []
        type_toks = _strip_declarator_words(type_toks)
        # drop `__align__(N)` / `alignas(N)` arguments
        align = None
        mm = re.search(r"(?:__align__|alignas)\s*\(\s*(\d+)\s*\)", " ".join(toks))
        if mm:
            align = int(mm.group(1))
            type_toks = [t for t in type_toks if t != mm.group(1)]
            while type_toks and type_toks[0] == ")":
                type_toks = type_toks[1:]
        tnode = cexpr.parse_expression(type_toks, lambda s: False) if type_toks else None
        t = self.resolve_type(tnode, ctx.env) if tnode is not None else None
        dims = []
        for dn in dims_nodes:
            v = self.ev(dn, replace(ctx, dry=True)) if dn[0] != "unknown" else None
            dims.append(v if isinstance(v, Expr) else E.opaque("dim"))
        loc = loc_of(d, self.filename)
        m = self.model
        value: Any = None
        if is_shared and isinstance(t, ir.TileType):
            if t.kind == "semaphore":
                m.barriers[name] = ir.Barrier(name, tuple(dims), loc, "static")
                value = Obj("barrier", ir.Ref(name), t)
            elif t.kind in ("st", "sv"):
                m.buffers[name] = ir.SharedBuffer(name, t, tuple(dims), loc, alignment=max(align or 0, _TK_TYPE_ALIGN),
                                                  storage="static")
                value = Obj("buffer", ir.Ref(name), t)
            else:
                value = Obj("shared", ir.Ref(name), t)
            if dims:
                value = _arr(value, dims)
        elif is_shared and isinstance(t, StructType):
            value = self._register_struct_buffer(name, t, tuple(dims), loc, "static", max(align or 0, _TK_TYPE_ALIGN))
        elif init_node is not None:
            v = self.ev(init_node, ctx, cursor=d)
            if isinstance(v, Obj) and v.kind in ("buffer", "barrier") and isinstance(t, (ir.TileType, StructType)) \
                    and v.ref.name not in m.buffers and v.ref.name not in m.barriers and v.ref.name.startswith("@alloc"):
                value = self._bind_allocation(name, v, t, dims, loc)
            elif isinstance(v, Allocator):
                value = v
            elif _is_tmem_init(v) and (t is None or (isinstance(t, ir.TileType) and t.kind == "tt")):
                value = self._bind_tmem_tile(name, v, t, dims, loc)
            elif isinstance(v, tuple) and v and v[0] == "alloc":
                value = self._bind_allocation(name, Obj("buffer", ir.Ref("@alloc"), None, None), t, dims, loc,
                                              alloc=v)
            elif v is None and isinstance(t, ir.TileType) and t.kind in ("rt", "rv"):
                m.reg_tiles[name] = t
                value = Obj("regtile", ir.Ref(name), t)
            elif isinstance(t, ir.TileType) and t.kind == "tt" and not isinstance(v, Obj):
                # `tt<float, 128, N> d = tm_alloc.allocate<...>(col)`: a TMEM tile
                value = Obj("tmem", ir.Ref(name), t)
            else:
                value = v
                if isinstance(t, ir.TileType) and t.kind == "scalar" and isinstance(v, Expr) and \
                        t.dtype in ("bool",):
                    value = v
        elif isinstance(t, ir.TileType) and t.kind in ("rt", "rv"):
            m.reg_tiles[name] = t
            value = Obj("regtile", ir.Ref(name), t)
            if dims:
                value = _arr(value, dims)
        elif isinstance(t, ir.TileType) and t.kind == "tt":
            value = Obj("tmem", ir.Ref(name), t)
        elif isinstance(t, ir.TileType) and t.kind == "scalar":
            value = E.opaque(f"uninit {name}")
        elif isinstance(t, StructType):
            value = self._local_struct_record(t, name)
        if type_toks and type_toks[0] in ("shared_allocator", "tma_allocator", "tma_swizzle_allocator"):
            value = Allocator(1024)
        tt0 = [x for x in type_toks if x not in ("kittens", "::")]
        if tt0 and tt0[0] in ("tensor_allocator", "tm_allocator") and not is_ref and self.model is not None:
            value = self._tmem_allocator(name, tt0, ctx, loc)
        self._note_phasebit_set(name, value, ctx, d)
        ctx.env.define(name, value)
        return toks[:toks.index(name)] if name in toks else first_type

    @staticmethod
    def _declarator_tokens(name, stmt_toks, first_type):
        """`<type tokens> name <declarator and initialiser>` for one variable."""
        depth = 0
        idx = None
        for i, t in enumerate(stmt_toks):
            if t in ("<", "(", "[", "{"):
                depth += 1
            elif t in (">", ")", "]", "}"):
                depth -= 1
            elif t == ">>":
                depth -= 2
            if t == name and (depth == 0 or (depth == 1 and i > 0 and stmt_toks[i - 1] in ("&", "*", "(")
                                              and stmt_toks[i - 2:i - 1] == ["("])) or (
                    t == name and i > 0 and stmt_toks[i - 1] in ("&", "*") and depth <= 1):
                if i + 1 < len(stmt_toks) and stmt_toks[i + 1] == "::":
                    continue
                idx = i
                break
        if idx is None:
            return [name]
        # the declarator runs to the next top-level ',' or ';'
        depth, end = 0, len(stmt_toks)
        for j in range(idx, len(stmt_toks)):
            t = stmt_toks[j]
            if t in ("(", "[", "{", "<"):
                depth += 1
            elif t in (")", "]", "}", ">"):
                depth = max(depth - 1, 0)   # `(&name)` closes a paren opened before the name
            elif t == ">>":
                depth = max(depth - 2, 0)
            if depth == 0 and t in (",", ";"):
                end = j
                break
        type_toks = stmt_toks[:idx]
        if first_type is not None and (not type_toks or type_toks[-1] == ","):
            type_toks = list(first_type)
        elif first_type is not None and "," in type_toks:
            type_toks = list(first_type)
        return type_toks + stmt_toks[idx:end]

    def _local_struct_record(self, st: StructType, prefix: str) -> Rec:
        """A local variable of user struct type (lcf's `consumer_state`): its register-tile
        members become register tiles named `prefix.field`, so accumulators kept in a
        state struct are tracked like local ones."""
        rec = Rec(type_name=st.name)
        for fname, cur in st.members.items():
            if cur.kind != CK.FIELD_DECL:
                continue
            ft = self.resolve_type_spelling(cur.type.spelling, st.env)
            if isinstance(ft, ir.TileType) and ft.kind in ("rt", "rv") and self.model is not None:
                self.model.reg_tiles[f"{prefix}.{fname}"] = ft
                rec.fields[fname] = Obj("regtile", ir.Ref(f"{prefix}.{fname}"), ft)
        return rec

    def _register_struct_buffer(self, name, st: StructType, dims, loc, storage, align) -> Obj:
        t = self.struct_tile_type(st)
        m = self.model
        offsets, ssize = _member_offsets(t) if t else ({}, None)
        outer = _const_strides(dims, ssize)
        for mname, mtype, count in (t.members if t else ()):
            mdims = dims + ((count,) if count is not None else ())
            if mtype.kind in ("st", "sv"):
                inner = (_sizeof_align(mtype) or (None,))[0] if count is not None else None
                strides = outer + ((inner,) if count is not None else ()) if outer is not None else ()
                m.buffers[f"{name}.{mname}"] = ir.SharedBuffer(f"{name}.{mname}", mtype, mdims, loc,
                                                               alignment=align, storage=storage,
                                                               base_offset=offsets.get(mname, 0),
                                                               strides=strides)
            elif mtype.kind == "semaphore":
                m.barriers[f"{name}.{mname}"] = ir.Barrier(f"{name}.{mname}", mdims, loc, storage)
        obj = Obj("struct", ir.Ref(name), t)
        return _arr(obj, dims) if dims else obj

    def struct_tile_type(self, st: StructType) -> ir.TileType | None:
        """A user struct of tiles (lcf's input_block) as a TileType with members,
        so `size_bytes` and member access work. `T a[M], b[N];` declares two
        fields whose second declarator has no type tokens of its own."""
        key = ("struct_tile", id(st))
        if key in self._struct_cache:
            return self._struct_cache[key]
        self._struct_cache[key] = None
        members = []
        prev_type = None
        sctx = Ctx(env=st.env, guard=ir.Guard(), dry=True)
        for ch in st.cursor.get_children():
            if ch.kind != CK.FIELD_DECL:
                continue
            toks = tokens_of(ch)
            if ch.spelling not in toks:
                continue
            i = toks.index(ch.spelling)
            type_toks = [t for t in toks[:i] if t not in ("const", ",")]
            if (not type_toks or "," in toks[:i]) and prev_type:
                # a later declarator of `T a, b;`: its tokens may start with the whole
                # declaration (`T a , b`), so the type is the previous field's
                type_toks = prev_type
            prev_type = type_toks
            tnode = cexpr.parse_expression(type_toks, lambda s: False)
            mt = self.resolve_type(tnode, st.env)
            count = None
            rest = toks[i + 1:]
            while rest and rest[0] == "[":
                j = rest.index("]")
                cv = self.ev(cexpr.parse_expression(rest[1:j], st.env.has), sctx)
                cv = cv if isinstance(cv, Expr) else E.opaque("count")
                count = cv if count is None else E.binop("*", count, cv)
                rest = rest[j + 1:]
            if isinstance(mt, StructType):
                mt = self.struct_tile_type(mt)
            if isinstance(mt, ir.TileType):
                members.append((ch.spelling, mt, count))
        t = ir.TileType("struct", st.name, members=tuple(members)) if members else None
        self._struct_cache[key] = t
        return t

    def _bind_allocation(self, name, v, t, dims, loc, alloc=None):
        """`st_bf<64,64> (&a)[N] = al.allocate<st_bf<64,64>, N>();`"""
        m = self.model
        align = 1024
        atype, adims = t, tuple(dims)
        if alloc is not None:
            _, atype2, adims2, align = alloc
            atype = atype2 if atype2 is not None else t
            adims = adims2 if adims2 else adims
        if isinstance(atype, StructType):
            return self._register_struct_buffer(name, atype, adims, loc, "allocator", align)
        if isinstance(atype, ir.TileType):
            if atype.kind == "semaphore":
                m.barriers[name] = ir.Barrier(name, adims, loc, "allocator")
                obj = Obj("barrier", ir.Ref(name), atype)
            else:
                m.buffers[name] = ir.SharedBuffer(name, atype, adims, loc, alignment=align, storage="allocator")
                obj = Obj("buffer", ir.Ref(name), atype)
            return _arr(obj, adims) if adims else obj
        return None

    # -- control flow -----------------------------------------------------
    def _classify(self, cond: Expr | Any, ctx: Ctx) -> tuple[str, Expr | None]:
        """('const', c) | ('thread', c) | ('uniform', c) | ('unknown', None)."""
        if not isinstance(cond, Expr):
            return "unknown", None
        if isinstance(cond, E.Const):
            return "const", cond
        fv = cond.free_vars()
        if any(v.kind == E.OPAQUE for v in fv):
            return "unknown", cond
        if any(v.kind == E.THREAD for v in fv):
            return "thread", cond
        return "uniform", cond

    def _branch_guard(self, guard: ir.Guard, cls: str, cond: Expr | None, positive: bool) -> ir.Guard:
        if cls == "thread":
            return guard.with_thread(cond if positive else E.negate(cond))
        if cls == "uniform":
            return guard.with_uniform(cond if positive else E.negate(cond))
        return guard.inexact()

    def _walk_if(self, c, ctx: Ctx) -> str | None:
        kids = list(c.get_children())
        # children: [init-statement], condition, then, [else]
        while kids and kids[0].kind in (CK.DECL_STMT, CK.VAR_DECL) and len(kids) > 2:
            if kids[0].kind == CK.DECL_STMT:
                self.walk(kids[0], ctx)
            kids = kids[1:]
        cond_cursor = kids[0] if kids else None
        stmts = kids[1:]
        toks = tokens_of(c)
        is_constexpr = len(toks) > 1 and toks[1] == "constexpr"
        cond = self.exec_expr(cond_cursor, replace(ctx, dry=True)) if cond_cursor is not None else None
        if isinstance(cond, Expr) and not isinstance(cond, E.Const):
            cond = _to_bool(cond)
        then_s = stmts[0] if stmts else None
        else_s = stmts[1] if len(stmts) > 1 else None
        cls, cexp = self._classify(cond, ctx)
        if cls == "const":
            taken = then_s if cexp.value else else_s
            return self.walk(taken, ctx) if taken is not None else None
        if is_constexpr and cls != "const":
            # unknown `if constexpr`: exactly one branch exists in the instantiation
            cls = "unknown"
        results = []
        envs = []
        guards = []
        for stmt, positive in ((then_s, True), (else_s, False)):
            g = self._branch_guard(ctx.guard, cls, cexp, positive)
            sub = replace(ctx, guard=g, env=BranchEnv(ctx.env))
            r = self.walk(stmt, sub) if stmt is not None else None
            results.append(r)
            envs.append(sub.env)
            guards.append(sub.guard)
        self._merge_envs(ctx, envs, cexp if cls in ("thread", "uniform") else None, results)
        if results[0] is not None and results[1] is not None:
            return results[0] if results[0] == results[1] else "return"
        # one branch always leaves (return/break/continue): later code runs only
        # under the other branch's condition
        for r, positive in ((results[0], True), (results[1], False)):
            if r is not None:
                ctx.guard = self._branch_guard(ctx.guard, cls, cexp, not positive)
                if r == "break":
                    # what lets an iteration go on past this break (None: not a uniform condition)
                    self._loop_breaks.append(None if cls != "uniform" else E.negate(cexp) if positive else cexp)
        return None

    def _merge_envs(self, ctx: Ctx, envs: list, cond: Expr | None, results):
        """Variables assigned in a branch get `cond ? then : else` afterwards.
        A branch that always leaves (return/break/continue) contributes nothing:
        code after the `if` runs only on the other path."""
        then_w = envs[0].writes if results[0] is None else None
        else_w = envs[1].writes if results[1] is None else None
        names = set(then_w or ()) | set(else_w or ())
        for name in sorted(names):
            old = ctx.env.lookup(name)
            a = then_w.get(name, old) if then_w is not None else None
            b = else_w.get(name, old) if else_w is not None else None
            if then_w is None:
                new = b
            elif else_w is None:
                new = a
            elif isinstance(a, Expr) and isinstance(b, Expr):
                new = E.ite(cond, a, b) if cond is not None else (a if a == b else E.opaque(f"{name}@branch"))
            else:
                new = a if a is b else (E.opaque(f"{name}@branch") if isinstance(a, Expr) or isinstance(b, Expr) else a)
            ctx.env.assign(name, new)

    def _walk_return(self, c, ctx: Ctx):
        kids = list(c.get_children())
        if ctx.frame is not None:
            if kids:
                v = self.exec_expr(kids[0], ctx)
                ctx.frame.returns.append((ctx.guard, v))
            else:
                ctx.frame.returns.append((ctx.guard, None))
            return
        if not ctx.dry:
            self.emit(ir.Op(ir.EXIT, "return", loc_of(c, self.filename), ctx.guard, ctx.loops), ctx)

    def _walk_loop(self, c, ctx: Ctx):
        kids = list(c.get_children())
        toks = tokens_of(c)
        loc = loc_of(c, self.filename)
        env = ctx.env.child()
        lctx = replace(ctx, env=env)
        init_s = cond_c = inc_c = body = None
        if c.kind == CK.FOR_STMT:
            # which of init/cond/inc are present: look at the header tokens
            depth, semis, j = 0, [], 0
            for j, t in enumerate(toks):
                if t == "(":
                    depth += 1
                elif t == ")":
                    depth -= 1
                    if depth == 0:
                        break
                elif t == ";" and depth == 1:
                    semis.append(j)
            if len(semis) == 2:
                has_init = semis[0] > 2
                has_cond = semis[1] > semis[0] + 1
                has_inc = j > semis[1] + 1
                it = iter(kids)
                init_s = next(it) if has_init else None
                cond_c = next(it) if has_cond else None
                inc_c = next(it) if has_inc else None
                body = next(it, None)
            else:
                body = kids[-1] if kids else None
        elif c.kind == CK.WHILE_STMT:
            cond_c, body = (kids[0], kids[-1]) if len(kids) >= 2 else (None, kids[-1] if kids else None)
        elif c.kind == CK.DO_STMT:
            body, cond_c = (kids[0], kids[-1]) if len(kids) >= 2 else (kids[0] if kids else None, None)
        else:  # range-for: opaque trip count
            body = kids[-1] if kids else None
        if init_s is not None:
            if init_s.kind == CK.DECL_STMT:
                self.walk(init_s, replace(lctx, dry=True))
            else:
                self.exec_expr(init_s, replace(lctx, dry=True))
        self._loop_ids += 1
        lid = self._loop_ids
        counter = E.Var(f"k{lid}", E.LOOP)
        # induction variable: `for (int i = a; i < b; i += s)`
        var, init_v, step, trip, infinite = self._induction(init_s, cond_c, inc_c, lctx)
        # the induction variable as a function of the counter, visible to the
        # dry pass below (`const int stage = k % STAGES` in the body)
        if var is not None and init_v is not None and step is not None:
            env.define(var, E.binop("+", init_v, E.binop("*", step, counter)))
        # loop-carried variables: solve their per-iteration closed forms
        carried = self._carried_variables(body, inc_c, lctx, exclude={var} if var else set(), counter=counter)
        loop = ir.Loop(lid, var, counter, init_v, step, trip, loc, ctx.loops[-1] if ctx.loops else None,
                       infinite=infinite)
        if trip is not None and trip.depends_on(E.THREAD):
            loop.uniform = False
        if self.model is not None and not ctx.dry:
            self.model.loops[lid] = loop
        bctx = replace(lctx, loops=ctx.loops + (lid,), env=env.child())
        if var is not None and init_v is not None and step is not None:
            env.define(var, E.binop("+", init_v, E.binop("*", step, counter)))
        elif var is not None:
            env.define(var, E.opaque(f"{var}@loop"))
        before = {}
        for name, closed in carried.items():
            before[name] = env.lookup(name)
            env.assign(name, closed(counter))
        saved_breaks = self._loop_breaks
        self._loop_breaks = []
        if cond_c is not None and not (var and trip is not None):
            cond = self.exec_expr(cond_c, replace(bctx, dry=True))
            cls, cexp = self._classify(_to_bool(cond) if isinstance(cond, Expr) else cond, bctx)
            if cls == "thread":
                bctx.guard = bctx.guard.with_thread(cexp)
                loop.uniform = False
            elif cls == "uniform":
                bctx.guard = bctx.guard.with_uniform(cexp)
            elif cls == "unknown":
                bctx.guard = bctx.guard.inexact()
        if body is not None:
            self.walk(body, bctx)
        if self._loop_breaks and trip is not None:
            loop.trip = None
        if infinite and self._loop_breaks and all(b is not None for b in self._loop_breaks):
            loop.continues = tuple(self._loop_breaks)
        self._loop_breaks = saved_breaks
        # after the loop: carried variables hold their value after `trip`
        # iterations when the trip count is known, else an unknown
        for name, closed in carried.items():
            if loop.trip is not None:
                ctx.env.assign(name, closed(loop.trip))
            else:
                ctx.env.assign(name, E.opaque(f"{name}@after-loop"))

    def _induction(self, init_s, cond_c, inc_c, ctx: Ctx):
        var = init_v = step = trip = None
        infinite = cond_c is None
        if init_s is not None:
            toks = tokens_of(init_s)
            mm = None
            for i, t in enumerate(toks):
                if t == "=" and i > 0:
                    mm = (toks[i - 1], toks[i + 1:])
                    break
            if mm:
                var = mm[0]
                v = ctx.env.lookup(var)
                init_v = v if isinstance(v, Expr) else None
        if inc_c is not None and var is not None:
            node = cexpr.parse_expression(tokens_of(inc_c), ctx.env.has)
            step = _step_of(node, var, lambda n: self.ev(n, replace(ctx, dry=True)))
        if cond_c is not None and var is not None and step is not None and init_v is not None:
            node = cexpr.parse_expression(tokens_of(cond_c), ctx.env.has)
            if node[0] == "bin" and node[2] == ("name", ((var, None),)):
                bound = self.ev(node[3], replace(ctx, dry=True))
                if isinstance(bound, Expr):
                    op = node[1]
                    s = step
                    if op == "<":
                        span = E.binop("-", bound, init_v)
                    elif op == "<=":
                        span = E.binop("+", E.binop("-", bound, init_v), E.Const(1))
                    elif op == "!=":
                        span = E.binop("-", bound, init_v)
                    else:
                        span = None
                    if span is not None and isinstance(s, E.Const) and s.value > 0:
                        t = E.binop("/", E.binop("+", span, E.Const(s.value - 1)), s)
                        trip = E.ite(E.binop("<", t, E.Const(0)), E.Const(0), t) if not isinstance(t, E.Const) \
                            else E.Const(max(t.value, 0))
                    elif span is not None and op == "<" and _positive_uniform(s):
                        # a grid-stride / block-stride loop: `task += gridDim.x` (the step is >= 1)
                        t = E.binop("/", E.binop("-", E.binop("+", span, s), E.Const(1)), s)
                        trip = E.ite(E.binop("<=", span, E.Const(0)), E.Const(0), t)
            elif node[0] == "bin" and node[1] == "&&":
                trip = None
        if cond_c is not None:
            cv = self.exec_expr(cond_c, replace(ctx, dry=True))
            if isinstance(cv, E.Const) and cv.value:
                infinite = True
        return var, init_v, step, trip, infinite

    def _assigned_names(self, body, inc_c) -> list[str]:
        names = []
        for cur in (body, inc_c):
            if cur is None:
                continue
            toks = tokens_of(cur)
            for i, t in enumerate(toks):
                if t in cexpr._ASSIGN and i > 0 and _is_ident(toks[i - 1]) and (i < 2 or toks[i - 2] not in (".", "->", "]")):
                    names.append(toks[i - 1])
                elif t in ("++", "--"):
                    if i > 0 and _is_ident(toks[i - 1]):
                        names.append(toks[i - 1])
                    elif i + 1 < len(toks) and _is_ident(toks[i + 1]):
                        names.append(toks[i + 1])
                elif t == "update_phasebit" and i + 1 < len(toks):
                    j = toks.index("(", i)
                    if j + 1 < len(toks) and _is_ident(toks[j + 1]):
                        names.append(toks[j + 1])
        out = []
        for n in names:
            if n not in out:
                out.append(n)
        return out

    def _carried_variables(self, body, inc_c, ctx: Ctx, exclude: set[str], counter: E.Var | None = None):
        """name -> function(counter) giving the value at the start of iteration k."""
        out = {}
        names = [n for n in self._assigned_names(body, inc_c) if n not in exclude]
        scalars = {}
        for n in names:
            v = ctx.env.lookup(n)
            if isinstance(v, Expr) and ctx.env.has(n):
                scalars[n] = v
        if not scalars or body is None:
            return out
        # one dry pass with symbolic start values
        start = {n: E.Var(f"{n}@start", E.LOOP) for n in scalars}
        denv = ctx.env.child()
        for n, sv in start.items():
            denv.define(n, sv)
        dctx = replace(ctx, env=denv, dry=True)
        self._loop_ids += 0
        saved = self._loop_breaks
        self._loop_breaks = []
        try:
            self.walk(body, replace(dctx, env=denv.child()))
            if inc_c is not None:
                self.exec_expr(inc_c, dctx)
        finally:
            self._loop_breaks = saved
        for n, v0 in scalars.items():
            end = denv.vars.get(n)
            out[n] = solve_recurrence(start[n], end, v0, n, counter)
        # phases that flip with the ring index (`if (++s == N) { s = 0; phase ^= 1; }`,
        # TK's phase bitfield): solved once the ring index has a closed form
        from .recurrence import _is_opaque_form, solve_dependent
        solved = {n: f for n, f in out.items() if not _is_opaque_form(f)}
        for n, v0 in scalars.items():
            if n not in solved:
                f = solve_dependent(n, start[n], denv.vars.get(n), v0, solved, start)
                if f is not None:
                    out[n] = f
        return out

    # -- asm ---------------------------------------------------------------
    def _walk_asm(self, c, ctx: Ctx):
        text = " ".join(tokens_of(c))
        loc = loc_of(c, self.filename)
        ptx = " ".join(re.findall(r'"((?:[^"\\]|\\.)*)"', text))
        if ctx.dry:
            return
        def op(kind, api, **kw):
            self.emit(ir.Op(kind, api, loc, ctx.guard, ctx.loops, **kw), ctx)
        if re.search(r"\bbar\.sync\b|\bbarrier\.sync\b|\bbarrier\.cta\.sync\b", ptx):
            op(ir.SYNC, "bar.sync", detail={"sync_kind": "named", "asm": True})
        elif re.search(r"\bbar\.arrive\b", ptx):
            op(ir.NAMED_ARRIVE, "bar.arrive", detail={"asm": True})
        if "fence.proxy.async" in ptx:
            op(ir.FENCE, "fence.proxy.async", detail={"fence_kind": "proxy_async"})
        mf = re.search(r"\b(membar\.(gl|sys|cta)|fence\.(acq_rel|sc)\.(gpu|sys|cta|cluster)|fence\.mbarrier_init)", ptx)
        if mf:
            scope_ = mf.group(2) or mf.group(4) or "cluster"
            op(ir.FENCE, mf.group(1), detail={"fence_kind": "mbarrier_init" if "mbarrier_init" in mf.group(1)
                                              else f"membar_{'gl' if scope_ in ('gl', 'gpu') else scope_}"})
        if "setmaxnreg" in ptx:
            op(ir.SETMAXNREG, "setmaxnreg", detail={"inc": ".inc" in ptx})
        if re.search(r"\b(red|atom)\.[a-z.]*global", ptx) or re.search(r"\b(red|atom)\.(release|relaxed|acq)", ptx):
            sem = "release" if ".release" in ptx else ("acq_rel" if ".acq_rel" in ptx else "relaxed")
            op(ir.GLOBAL_SIGNAL, "asm red/atom", detail={"sem": sem, "asm": True})
        ml = re.search(r"\bld((?:\.[a-z0-9_:]+)*?)\.global\b", ptx)
        if ml:
            quals = ml.group(1).split(".")
            sem = next((q for q in ("acquire", "relaxed", "volatile", "weak") if q in quals), "weak")
            op(ir.GLOBAL_LOAD, "asm ld.global", detail={"sem": sem, "asm": True, "ptx": ptx[:200]})
        if re.search(r"\b(st|ld)\.shared\b|\bldmatrix\b|\bstmatrix\b", ptx):
            self._asm_smem_access(c, ctx, ptx, loc)
        if "mbarrier" in ptx or "cp.async.bulk" in ptx or "wgmma" in ptx:
            # raw mbarrier / bulk-copy PTX: recorded, operands not tracked
            op(ir.CALL, "asm", detail={"ptx": ptx[:200]})
            self._note_unmodelled(c, "inline PTX on mbarriers/bulk copies: operands not tracked")

    def _smem_address(self, node, ctx: Ctx, cursor):
        """`__cvta_generic_to_shared(&tile)` / `(&tile.data[i])`: a Var standing for the tile's
        shared address (plus i elements), recorded in `model.smem_addresses`."""
        extra: Expr = E.Const(0)
        while True:
            if node[0] == "un" and node[1] == "&":
                node = node[2]
            elif node[0] == "cast":
                node = node[2]
            elif node[0] == "index" and node[1][0] == "member" and node[1][2] == "data":
                i = self.ev(node[2], replace(ctx, dry=True), cursor)
                extra = E.binop("+", extra, i if isinstance(i, Expr) else E.opaque("data index"))
                node = node[1][1]
            elif node[0] == "member" and node[2] == "data":
                node = node[1]
            else:
                break
        v = self.ev(node, replace(ctx, dry=True), cursor)
        if not isinstance(v, Obj) or v.kind != "buffer" or self.model is None:
            return None
        name = f"smem_addr({v.ref})"
        if name not in self.model.smem_addresses:
            self.model.smem_addresses[name] = ir.SmemAddress(name, v.ref, v.type, loc_of(cursor, self.filename)
                                                             if cursor is not None else self.model.location)
        a: Expr = E.Var(name, E.PARAM)
        if extra != E.Const(0):
            db = v.type.dtype_bytes if v.type is not None and v.type.dtype_bytes else None
            a = E.binop("+", a, E.binop("*", extra, E.Const(db)) if db else E.opaque("data offset"))
        return a

    def _asm_smem_access(self, c, ctx: Ctx, ptx: str, loc):
        """Raw `st.shared` / `ld.shared` / `ldmatrix` / `stmatrix`: an SMEM_ACCESS op whose
        detail['addr'] is the address operand (`[%N]`) as an Expr."""
        toks = tokens_of(c)
        colon = next((k for k, t in enumerate(toks) if t in (":", "::")), None)
        if colon is None:
            return
        ops, i = [], colon
        while i < len(toks):
            t = toks[i]
            if t.startswith('"') and i + 1 < len(toks) and toks[i + 1] == "(":
                depth, j = 0, i + 1
                while j < len(toks):
                    depth += toks[j] == "("
                    depth -= toks[j] == ")"
                    if depth == 0:
                        break
                    j += 1
                ops.append(toks[i + 2:j])
                i = j
            i += 1
        mm = re.search(r"\[\s*%(\d+)\s*(?:\+\s*(\d+))?\s*\]", ptx)
        if not mm or int(mm.group(1)) >= len(ops):
            return
        node = cexpr.parse_expression(ops[int(mm.group(1))], ctx.env.has)
        addr = self.ev(node, replace(ctx, dry=True), c)
        if not isinstance(addr, Expr):
            return
        if mm.group(2):
            addr = E.binop("+", addr, E.Const(int(mm.group(2))))
        kind = "ldmatrix" if "ldmatrix" in ptx else "stmatrix" if "stmatrix" in ptx else (
            "st.shared" if re.search(r"\bst\.shared", ptx) else "ld.shared")
        self.emit(ir.Op(ir.SMEM_ACCESS, kind, loc, ctx.guard, ctx.loops,
                        detail={"via": "asm", "addr": addr, "ptx": ptx[:200],
                                "access": "read" if kind.startswith("ld") else "write"}), ctx)

    # ================================================================ emit
    def emit(self, op: ir.Op, ctx: Ctx):
        if ctx.dry or self.model is None:
            return
        self._order += 1
        op.order = self._order
        if op.kind == ir.MBAR_WAIT and op.parity is not None and op.parity in self._phasebit_reads:
            op.detail.setdefault("phasebit", self._phasebit_reads[op.parity])
        op.callers = ctx.callers
        op.role_hint = ctx.role_hint
        self.model.ops.append(op)

    # ========================================================== evaluation
    def ev(self, node, ctx: Ctx, cursor=None):
        try:
            return self._ev(node, ctx, cursor)
        except RecursionError:
            return E.opaque("deep")

    def _ev(self, node, ctx: Ctx, cursor):
        kind = node[0]
        if kind == "num":
            return E.Const(node[1])
        if kind == "bool":
            return E.Const(node[1])
        if kind in ("float", "str", "null", "lambda"):
            return E.opaque(kind)
        if kind == "name":
            return self._ev_name(node, ctx)
        if kind == "bin":
            a, b = self.ev(node[2], ctx, cursor), self.ev(node[3], ctx, cursor)
            if isinstance(a, Expr) and isinstance(b, Expr):
                op = node[1]
                if op in ("&&", "||"):
                    a, b = _to_bool(a), _to_bool(b)
                return E.binop(op, a, b)
            return self._opaque_from(node, (a, b))
        if kind == "un":
            op = node[1]
            a = self.ev(node[2], ctx, cursor) if not (op == "&" and node[2][0] == "index") else None
            if op == "&" or op == "*":
                if op == "&" and node[2][0] == "index":
                    self._no_elem_access += 1
                    try:
                        a = self.ev(node[2], ctx, cursor)
                    finally:
                        self._no_elem_access -= 1
                return a  # address-of / dereference keep the object
            if isinstance(a, Expr):
                return E.unop(op, _to_bool(a) if op == "!" else a)
            return self._opaque_from(node, (a,))
        if kind == "cond":
            c = self.ev(node[1], ctx, cursor)
            a, b = self.ev(node[2], ctx, cursor), self.ev(node[3], ctx, cursor)
            if isinstance(c, Expr) and isinstance(a, Expr) and isinstance(b, Expr):
                return E.ite(_to_bool(c), a, b)
            if isinstance(c, E.Const):
                return a if c.value else b
            return self._opaque_from(node, (c, a, b))
        if kind == "assign":
            return self._assign(node, ctx, cursor)
        if kind == "post":
            old = self.ev(node[2], ctx, cursor)
            self._assign(("assign", "+=" if node[1] == "++" else "-=", node[2], ("num", 1)), ctx, cursor)
            return old
        if kind == "cast":
            inner = self.ev(node[2], ctx, cursor)
            tnode = node[1]
            if isinstance(inner, Obj):
                t = self.resolve_type(tnode, ctx.env)
                if isinstance(t, StructType):
                    t = self.struct_tile_type(t)
                if isinstance(t, ir.TileType) and t.kind in ("st", "sv", "struct") and inner.type != t:
                    return Obj(inner.kind, inner.ref, t, reinterpreted_from=inner.type)
            if tnode[0] == "type" and "bool" in tnode[1] and isinstance(inner, Expr):
                return _to_bool(inner)
            return inner
        if kind == "sizeof":
            t = self.resolve_type(node[1], ctx.env) if node[1][0] in ("name", "type") else None
            if isinstance(t, StructType):
                t = self.struct_tile_type(t)
            if isinstance(t, ir.TileType):
                s = t.size_bytes() if t.kind != "scalar" else E.Const(t.dtype_bytes or 4)
                if s is not None:
                    return s
            v = self.ev(node[1], replace(ctx, dry=True))
            if isinstance(v, Obj) and v.type is not None:
                s = v.type.size_bytes()
                if s is not None:
                    return s
            return E.opaque("sizeof")
        if kind == "index":
            base = self.ev(node[1], ctx, cursor)
            idx = self.ev(node[2], ctx, cursor)
            if isinstance(base, Obj):
                et = base.type.element if (base.type is not None and base.type.kind == "array") else base.type
                res = base.at(idx if isinstance(idx, Expr) else E.opaque("index"), et)
                self._elem_access(res, "read", ctx, cursor)
                return res
            if isinstance(base, _ArrVal):
                res = base.index(idx if isinstance(idx, Expr) else E.opaque("index"))
                self._elem_access(res, "read", ctx, cursor)
                return res
            return self._opaque_from(node, (base, idx))
        if kind == "member":
            return self._ev_member(node, ctx, cursor)
        if kind == "call":
            return self._ev_call(node, ctx, cursor)
        if kind == "init":
            return tuple(self.ev(x, ctx, cursor) for x in node[1])
        if kind == "comma":
            self.ev(node[1], ctx, cursor)
            return self.ev(node[2], ctx, cursor)
        if kind == "type":
            return self.resolve_type(node, ctx.env)
        if kind in ("__expr", "__value"):
            return node[1]
        return E.opaque(kind)

    def _opaque_from(self, node, parts) -> Expr:
        """An unknown value; it is uniform when everything it is computed from is."""
        kinds = set()
        for p in parts:
            if isinstance(p, Expr):
                kinds |= {v.kind for v in p.free_vars()}
            elif isinstance(p, Obj):
                for ix in p.ref.index:
                    kinds |= {v.kind for v in ix.free_vars()}
            elif isinstance(p, (Rec, StructType, TypeVal, Allocator, ir.TileType)):
                pass   # uniform objects
            elif p is not None:
                kinds.add(E.OPAQUE)
        if E.THREAD in kinds or E.OPAQUE in kinds:
            return E.opaque(cexpr.render(node))
        # numbered in walk order (not by object identity): the same input gives
        # the same names, so output that mentions them is deterministic
        return E.Var(f"?{cexpr.render(node)[:40]}#{E.fresh_number()}", E.PARAM)

    # -- names --------------------------------------------------------------
    def _ev_name(self, node, ctx: Ctx):
        segs = list(node[1])
        while len(segs) > 1 and segs[0][0] in _NAMESPACES:
            segs = segs[1:]
        head, targs = segs[0]
        if len(segs) == 1:
            if head == "size_bytes" and targs is not None:
                return self._size_bytes(targs, ctx)
            v = ctx.env.lookup(head)
            if v is not None:
                return self._deref(v, head, ctx)
            if head in self.mb.macros:
                toks = self.mb.macros[head]
                sub = cexpr.parse_expression(toks, ctx.env.has)
                return self.ev(sub, ctx)
            if head in K.CONSTANTS:
                return E.Const(K.CONSTANTS[head])
            if head in ("threadIdx", "blockIdx", "blockDim", "gridDim", "clusterIdx", "clusterDim"):
                return ("builtin", head)
            if head in K.TILE_ALIASES and targs is not None:
                return self._tile_from_alias(head, targs, ctx.env)
            if head in self.mb.functions:
                return Func(head, self.mb.functions[head])
            if head in self.mb.structs:
                return self._type_of_value(("struct_decl", self.mb.structs[head]), targs, ctx.env)
            if head in K.DTYPE_BYTES:
                return ir.TileType("scalar", head, dtype=head, dtype_bytes=K.DTYPE_BYTES[head])
            return E.opaque(head) if head[:1].islower() else E.Var(f"?{head}", E.PARAM)
        # qualified: a struct's static member, a type's member, a group scope...
        base = ctx.env.lookup(head)
        if base is None and head in self.mb.structs:
            base = ("struct_decl", self.mb.structs[head])
        if head in K.TILE_ALIASES:
            base = self._tile_from_alias(head, targs or (), ctx.env)
        cur = self._deref(base, head, ctx, targs) if base is not None else None
        if cur is None and head in K.CONSTANTS:
            return E.Const(K.CONSTANTS[head])
        for seg, sargs in segs[1:]:
            cur = self._member_static(cur, seg, sargs, ctx)
            if cur is None:
                if seg in K.CONSTANTS:
                    return E.Const(K.CONSTANTS[seg])
                return E.Var(f"?{cexpr.render(node)}", E.PARAM)
        return cur

    def _deref(self, v, name, ctx: Ctx, targs=None):
        if isinstance(v, tuple) and v and v[0] == "var_decl":
            return self._global_var_value(v[1])
        if isinstance(v, tuple) and v and v[0] in ("alias_decl", "struct_decl"):
            t = self._type_of_value(v, targs, ctx.env)
            return t
        return v

    def _global_var_value(self, cursor):
        key = ("var", cursor.hash)
        if key in self._struct_cache:
            return self._struct_cache[key]
        self._struct_cache[key] = E.Var(f"?{cursor.spelling}", E.PARAM)
        toks = tokens_of(cursor)
        env = self._env_for_decl(cursor)
        val = None
        if cursor.spelling in toks:
            rest = toks[toks.index(cursor.spelling) + 1:]
            if rest and rest[0] == "=":
                node = cexpr.parse_expression(rest[1:], env.has)
                val = self.ev(node, Ctx(env=env, guard=ir.Guard(), dry=True))
            elif rest and rest[0] == "{":
                node = cexpr.parse_expression(rest[1:-1], env.has)
                val = self.ev(node, Ctx(env=env, guard=ir.Guard(), dry=True))
        if not isinstance(val, Expr):
            val = E.Var(f"?{cursor.spelling}", E.PARAM)
        self._struct_cache[key] = val
        return val

    def _member_static(self, cur, seg, sargs, ctx: Ctx):
        if isinstance(cur, StructType):
            m = cur.env.vars.get(seg)
            if m is None:
                return None
            if isinstance(m, Func):
                return m
            return self._deref(m, seg, Ctx(env=cur.env, guard=ctx.guard, dry=True), sargs)
        if isinstance(cur, ir.TileType):
            return _tile_attr(cur, seg)
        if isinstance(cur, GroupScope):
            return ("groupfn", cur.warps, seg, sargs)
        return None

    def _size_bytes(self, targs, ctx: Ctx) -> Expr:
        total: Expr = E.Const(0)
        for a in targs:
            t = self.resolve_type(a, ctx.env)
            if isinstance(t, StructType):
                t = self.struct_tile_type(t)
            s = t.size_bytes() if isinstance(t, ir.TileType) else None
            if s is None:
                return E.opaque("size_bytes")
            total = E.binop("+", total, s)
        return total

    # -- members -------------------------------------------------------------
    def _ev_member(self, node, ctx: Ctx, cursor):
        obj = self.ev(node[1], ctx, cursor)
        field_name = node[2]
        if isinstance(obj, tuple) and obj and obj[0] == "builtin":
            b = obj[1]
            if b == "threadIdx":
                return {"x": E.TID, "y": E.TID_Y, "z": E.TID_Z}.get(field_name, E.opaque("threadIdx"))
            if b == "blockDim" and field_name == "x" and self.model is not None and self.model.block_threads is not None:
                return self.model.block_threads
            if b == "blockDim" and field_name in ("y", "z"):
                return E.Const(1)
            return E.Var(f"{b}.{field_name}", E.PARAM)
        if isinstance(obj, Rec):
            v = obj.fields.get(field_name)
            return v if v is not None else E.Var(f"?{obj.type_name}.{field_name}", E.PARAM)
        if isinstance(obj, Obj):
            t = obj.type
            if t is not None and t.kind == "struct":
                for mname, mtype, count in t.members:
                    if mname == field_name:
                        kind = "barrier" if mtype.kind == "semaphore" else (
                            "buffer" if mtype.kind in ("st", "sv") else obj.kind)
                        sub = Obj(kind, ir.Ref(f"{obj.ref.name}.{mname}", obj.ref.index),
                                  ir.TileType("array", mtype.spelling, element=mtype, count=count)
                                  if count is not None else mtype)
                        return sub
            if t is not None and t.kind == "gl":
                return ("glmethod", obj, field_name)
            if field_name == "data" and obj.kind == "buffer" and t is not None and t.kind in ("st", "sv") and t.dtype:
                # the raw element array of a shared tile/vector: `colpart[w].data[i]`
                return Obj("smem_data", obj.ref, ir.TileType("scalar", t.dtype, dtype=t.dtype,
                                                             dtype_bytes=t.dtype_bytes))
            if t is not None:
                a = _tile_attr(t, field_name)
                if a is not None:
                    return a
            return E.Var(f"?{obj.ref}.{field_name}", E.PARAM)
        if isinstance(obj, Allocator):
            return ("allocmethod", obj, field_name, node[4] if len(node) > 4 else None)
        if isinstance(obj, Expr):
            return self._opaque_from(node, (obj,))
        if isinstance(obj, _ArrVal):
            return obj
        return E.opaque(cexpr.render(node))

    # -- assignment ----------------------------------------------------------
    def _assign(self, node, ctx: Ctx, cursor):
        op, lhs, rhs = node[1], node[2], node[3]
        val = self.ev(rhs, ctx, cursor)
        if lhs[0] == "name" and len(lhs[1]) == 1:
            name = lhs[1][0][0]
            if op != "=":
                old = ctx.env.lookup(name)
                if isinstance(old, Expr) and isinstance(val, Expr):
                    val = E.binop(op[:-1], old, val)
                else:
                    val = E.opaque(f"{name}{op}")
            old = ctx.env.lookup(name)
            new = val
            if op == "=":
                self._note_phasebit_set(name, new, ctx, cursor)
            if not ctx.env.assign(name, new):
                ctx.env.define(name, new)
            return new
        if lhs[0] == "index":
            # a store into a shared array element (`x[i] = v`, `tile.data[i] += v`)
            self._no_elem_access += 1
            try:
                target = self.ev(lhs, replace(ctx, dry=True), cursor)
            finally:
                self._no_elem_access -= 1
            if op != "=":
                self._elem_access(target, "read", ctx, cursor)
            self._elem_access(target, "write", ctx, cursor)
            return val
        if lhs[0] == "member":
            # record fields written by callbacks: `args.num_iters = ...`
            obj = self.ev(lhs[1], replace(ctx, dry=True), cursor)
            if isinstance(obj, Rec):
                if op != "=":
                    old = obj.fields.get(lhs[2])
                    val = E.binop(op[:-1], old, val) if isinstance(old, Expr) and isinstance(val, Expr) \
                        else E.opaque(lhs[2])
                obj.fields[lhs[2]] = val
        return val

    def _elem_access(self, v, access: str, ctx: Ctx, cursor):
        """A generic load/store of one element of shared memory: an element of a
        `__shared__ T x[...]` array or of a tile's `.data[...]`, as an SMEM_ACCESS op
        whose buffer Ref carries the per-thread index expressions."""
        if self._no_elem_access and access == "read":
            return
        if not isinstance(v, Obj) or v.kind not in ("shared", "smem_data") or v.type is None \
                or v.type.kind != "scalar" or not v.ref.index or cursor is None:
            return
        self.emit(ir.Op(ir.SMEM_ACCESS, "shared store" if access == "write" else "shared load",
                        loc_of(cursor, self.filename), ctx.guard, ctx.loops, buffer=v.ref,
                        detail={"access": access, "via": "element", "tile_type": v.type}), ctx)

    def _bitfield_names(self) -> frozenset:
        """Names passed as TK phase bitfields (`update_phasebit<n>(NAME, ...)`) in the texts read."""
        if getattr(self, "_bf_names", None) is None:
            import re
            pat = re.compile(r"(?:update|get)_phasebit\s*<[^>]*>\s*\(\s*([A-Za-z_]\w*)")
            names = set(pat.findall(self.mb.parsed.text or ""))
            from ..knowledge import protocols as _protocols
            import os
            pdir = os.path.dirname(_protocols.__file__)
            for fn in sorted(os.listdir(pdir)):
                if fn.endswith(".cu"):
                    src = _text_for(os.path.join(pdir, fn))
                    if src is not None:
                        names |= set(pat.findall(src.data.decode("utf-8", errors="replace")))
            self._bf_names = frozenset(names)
        return self._bf_names

    def _note_phasebit_set(self, name, value, ctx: Ctx, cursor):
        """A phase bitfield (re)initialised to a constant: an op, so that phase
        reasoning across nested loops can find where the bits were last set."""
        if ctx.dry or self.model is None or cursor is None or name not in self._bitfield_names():
            return
        if not isinstance(value, E.Const) or not isinstance(value.value, int) or isinstance(value.value, bool):
            return
        self.emit(ir.Op("phasebit_set", "phasebit", loc_of(cursor, self.filename), ctx.guard, ctx.loops,
                        detail={"bitfield": name, "value": value.value}), ctx)

    def _ev_call(self, node, ctx: Ctx, cursor):
        callee = node[1]
        args = node[2]
        if callee[0] == "member":
            return self._ev_method(callee, args, ctx, cursor)
        if callee[0] != "name":
            self.ev(callee, ctx, cursor)
            return E.opaque("call")
        segs = list(callee[1])
        while len(segs) > 1 and segs[0][0] in _NAMESPACES:
            segs = segs[1:]
        base, btargs = segs[-1]
        quals = segs[:-1]
        # constructor-style declarations parsed as calls: `__ctor{...}`
        if base == "__ctor":
            vals = tuple(self.ev(a, ctx, cursor) for a in args)
            return vals[0] if len(vals) == 1 else vals
        # scope qualifier: '', 'tma', 'warp', 'warpgroup', 'group<N>', 'everyone', user alias
        scope_warps, qual = self._qualifier(quals, ctx)
        # -- thread identity -------------------------------------------------
        if base in _THREAD_FUNCS_GROUP and not args:
            if qual == "" or qual == "kittens":
                return E.binop("/", E.TID, E.Const(32)) if base == "warpid" else (
                    E.binop("%", E.TID, E.Const(32)) if base == "laneid" else E.opaque(base))
            if scope_warps is not None:
                n = 32 * scope_warps
                if base == "laneid":
                    return E.binop("%", E.TID, E.Const(n))
                if base == "warpid":
                    return E.binop("/", E.binop("%", E.TID, E.Const(n)), E.Const(32))
                return E.binop("/", E.TID, E.Const(n))
        if base in ("elect_one_sync", "elect_one", "elect_leader") and not quals:
            return E.binop("==", E.binop("%", E.TID, E.Const(32)), E.Const(0))
        if base in ("cluster_ctarank", "block_rank_in_cluster"):
            return E.Var("cta_rank", E.PARAM)
        if base in ("min", "max") and len(args) == 2 and not quals:
            a, b = self.ev(args[0], ctx, cursor), self.ev(args[1], ctx, cursor)
            if isinstance(a, Expr) and isinstance(b, Expr):
                return E.ite(E.binop("<" if base == "min" else ">", a, b), a, b)
            return E.opaque(base)
        if base == "get_phasebit" and len(args) == 2:
            n = self._targ_int(btargs, ctx, 0)
            bf, ring = self.ev(args[0], ctx, cursor), self.ev(args[1], ctx, cursor)
            if isinstance(bf, Expr) and isinstance(ring, Expr) and n is not None:
                from .recurrence import phase_bit
                bit = phase_bit(bf, E.binop("+", ring, E.Const(16 * n)))
                if bit is not None:
                    return bit
                out = E.binop("&", E.binop(">>", bf, E.binop("+", ring, E.Const(16 * n))), E.Const(1))
                if args[0][0] == "name" and len(args[0][1]) == 1:
                    # which bitfield / bit a wait's parity reads (phase reasoning across nested loops)
                    self._phasebit_reads[out] = (args[0][1][0][0], E.binop("+", ring, E.Const(16 * n)))
                return out
            return E.opaque("phasebit")
        if base == "update_phasebit" and len(args) == 2:
            n = self._targ_int(btargs, ctx, 0)
            ring = self.ev(args[1], ctx, cursor)
            if n is not None and isinstance(ring, Expr):
                upd = ("assign", "^=", args[0], ("__expr", E.binop("<<", E.Const(1), E.binop("+", ring, E.Const(16 * n)))))
                self._assign_expr(upd, ctx, cursor)
                if args[0][0] == "name" and len(args[0][1]) == 1 and cursor is not None:
                    self.emit(ir.Op("phasebit_flip", "update_phasebit", loc_of(cursor, self.filename), ctx.guard,
                                    ctx.loops, detail={"bitfield": args[0][1][0][0],
                                                       "pos": E.binop("+", ring, E.Const(16 * n))}), ctx)
            return None
        if base in ("ring_advance", "ring_retreat") and args:
            s = self._targ_int(btargs, ctx, 0)
            r = self.ev(args[0], ctx, cursor)
            d = self.ev(args[1], ctx, cursor) if len(args) > 1 else E.Const(1)
            if s and isinstance(r, Expr) and isinstance(d, Expr):
                if base == "ring_advance":
                    return E.binop("%", E.binop("+", r, d), E.Const(s))
                return E.binop("%", E.binop("+", E.binop("-", r, d), E.Const(s)), E.Const(s))
            return E.opaque(base)
        if base == "tkcheck_block_threads" and args:
            v = self.ev(args[0], ctx)
            if isinstance(v, Expr) and self.model is not None and not ctx.dry:
                self.model.block_threads = v
                self.model.block_threads_source = "template flags"
            return None
        if base == "tkcheck_uniform":
            return E.Var(cexpr.render(args[0]) if args else "uniform", E.PARAM)
        if base == "tkcheck_flag" and len(args) == 3:
            return self._protocol_flag(args, ctx)
        if base == "tkcheck_callback":
            return self._protocol_callback(args, ctx, cursor)
        if base == "__cvta_generic_to_shared" and len(args) == 1:
            a = self._smem_address(args[0], ctx, cursor)
            if a is not None:
                return a
        # -- TMEM (Blackwell): tcgen05.ld/st of a tt, thread-scope tcgen05 MMAs --
        if base in _TMEM_ACCESS_NAMES and len(args) == 2 and "tma" not in qual.split("::"):
            probe = [self.ev(a, replace(ctx, dry=True), cursor) for a in args]
            if any(isinstance(v, Obj) and v.kind == "tmem" for v in probe):
                return self._emit_tmem_access(base, qual, scope_warps, args, ctx, cursor)
        if _TCGEN05_MMA.fullmatch(base) and scope_warps is None and qual in ("", "kittens") and len(args) >= 3:
            probe0 = self.ev(args[0], replace(ctx, dry=True), cursor)
            if isinstance(probe0, Obj) and probe0.kind == "tmem":
                return self._emit_tcgen05_mma(base, qual, btargs, args, ctx, cursor)
        # -- TK / CUDA operations --------------------------------------------
        spec, scope, gwarps = self._lookup_op(qual, base, scope_warps, len(args))
        if spec is not None:
            return self._emit_op(spec, scope, gwarps, qual, base, btargs, args, ctx, cursor, node)
        # register-tile operations (accumulator accesses)
        if base in K.REGISTER_OPS:
            vals = [self.ev(a, ctx, cursor) for a in args]
            if any(isinstance(v, Obj) and v.kind == "regtile" for v in vals):
                self._emit_reg_access(base, qual, vals, ctx, cursor, node)
                return None
            if base in ("store", "load") and any(isinstance(v, Obj) and v.kind == "buffer" for v in vals):
                self._emit_reg_access(base, qual, vals, ctx, cursor, node)
                return None
        # -- the user's own functions: inline ---------------------------------
        target = self._resolve_callable(segs, ctx)
        if isinstance(target, Func):
            return self._inline(target, args, ctx, cursor, btargs)
        # unknown call: evaluate args (for side effects), result opaque
        vals = [self.ev(a, ctx, cursor) for a in args]
        self._unmodelled_use(vals, ctx, cursor, cexpr.render(callee))
        return self._opaque_from(node, vals)

    def _unmodelled_use(self, vals, ctx: Ctx, cursor, what: str):
        """A call tkcheck does not model received an mbarrier: it may arrive on
        it, wait on it or re-initialise it. Record that, so no count or phase
        of that barrier is claimed (an unknown is never a finding)."""
        for v in vals:
            if isinstance(v, _ArrVal):
                v = v.obj
            if isinstance(v, Obj) and v.kind == "barrier":
                loc = loc_of(cursor, self.filename) if cursor is not None else self.model.location
                self.emit(ir.Op(ir.CALL, what, loc, ctx.guard, ctx.loops, barrier=v.ref,
                                detail={"unmodelled_barrier_use": True}), ctx)

    def _assign_expr(self, node, ctx, cursor):
        # like _assign, but the rhs is an already-evaluated Expr
        op, lhs, rhs = node[1], node[2], node[3]
        return self._assign(("assign", op, lhs, ("__value", rhs[1])), ctx, cursor)

    def _targ_int(self, targs, ctx, i) -> int | None:
        if not targs or len(targs) <= i:
            return None
        v = self.ev(targs[i], replace(ctx, dry=True))
        c = v.const() if isinstance(v, Expr) else None
        return c if isinstance(c, int) and not isinstance(c, bool) else None

    def _qualifier(self, quals, ctx: Ctx) -> tuple[int | None, str]:
        """(warps of the group scope or None, normalised qualifier text)."""
        if not quals:
            return None, ""
        names = []
        warps = None
        for seg, targs in quals:
            if seg == "group" and targs:
                v = self.ev(targs[0], replace(ctx, dry=True))
                w = v.const() if isinstance(v, Expr) else None
                warps = w if isinstance(w, int) else -1
                names.append("group")
                continue
            if seg in K.GROUP_SCOPES_WARPS:
                warps = K.GROUP_SCOPES_WARPS[seg]
                names.append(seg)
                continue
            v = ctx.env.lookup(seg)
            if isinstance(v, tuple) and v and v[0] == "alias_decl":
                v = self._group_alias(v[1], ctx)
            if isinstance(v, GroupScope):
                warps = v.warps
                names.append("group")
                continue
            names.append(seg)
        return warps, "::".join(names)

    def _group_alias(self, alias_cursor, ctx):
        toks = tokens_of(alias_cursor)
        if "=" in toks:
            body = toks[toks.index("=") + 1:]
            body = [t for t in body if t not in ("kittens", "::")] if body[:2] == ["kittens", "::"] else body
            if body and body[0] == "group" and len(body) >= 4 and body[1] == "<":
                node = cexpr.parse_expression(body[2:body.index(">")] if ">" in body else [], ctx.env.has)
                v = self.ev(node, replace(ctx, dry=True, env=self._env_for_decl(alias_cursor)
                                          if alias_cursor.semantic_parent.kind != CK.FUNCTION_DECL else ctx.env))
                if isinstance(v, Expr) and isinstance(v.const(), int):
                    return GroupScope(v.const())
                return GroupScope(-1)
            if body and body[0] in K.GROUP_SCOPES_WARPS:
                return GroupScope(K.GROUP_SCOPES_WARPS[body[0]])
        return None

    def _lookup_op(self, qual: str, base: str, scope_warps, nargs: int = 0):
        parts = qual.split("::") if qual else []
        parts = [p for p in parts if p not in ("kittens",)]
        q = "::".join(parts)
        if q in ("", "kittens"):
            spec = K.THREAD_OPS.get(base)
            return spec, "thread", 0
        if q == "tma":
            spec = K.TMA_OPS.get(base)
            return spec, "thread", 0
        if q in ("tma::cluster", "everyone::tma::cluster") or (q.endswith("tma::cluster") and base in K.CLUSTER_OPS):
            if base in ("arrive", "wait") and nargs >= 2:
                # TK's tma::cluster::arrive(semaphore&, int dst_cta[, count]) (a remote mbarrier
                # arrive, mapa + mbarrier.arrive.release.cluster) and tma::cluster::wait(semaphore&,
                # int phase) (mbarrier.try_wait.parity.acquire.cluster); without arguments
                # these names are the cluster barrier (barrier.cluster.arrive / wait)
                spec = K.TMA_OPS.get("arrive") if base == "arrive" else K.THREAD_OPS.get("wait")
                if spec is not None and scope_warps is not None:
                    return spec, "group", scope_warps
                return spec, "thread", 0
            if base in K.CLUSTER_OPS:
                return K.CLUSTER_OPS[base], "cluster", 0
            spec = K.TMA_OPS.get(base)
            if spec is not None and scope_warps is not None:
                return spec, "group", scope_warps
            return spec, "thread", 0
        if q == "everyone" and base == "sync":
            return ir_spec_everyone_sync, "block", 0
        if scope_warps is not None:
            if parts and parts[-1] == "tma" or "tma" in parts:
                spec = K.GROUP_TMA_OPS.get(base)
                return spec, "group", scope_warps
            spec = K.GROUP_OPS.get(base)
            if spec is not None:
                return spec, "group", scope_warps
            return None, "group", scope_warps
        return None, "thread", 0

    def _emit_op(self, spec: K.OpSpec, scope, gwarps, qual, base, btargs, args, ctx: Ctx, cursor, node):
        vals = [self.ev(a, ctx, cursor) for a in args]
        loc = loc_of(cursor, self.filename) if cursor is not None else self.model.location
        api = f"{qual}::{base}" if qual else base
        op = ir.Op(spec.kind, api, loc, ctx.guard, ctx.loops)
        op.detail = dict(spec.detail)
        op.detail["args_text"] = [cexpr.render(a) for a in args]
        # scope: who issues the PTX
        if scope == "group":
            op.scope = "warp" if gwarps == 1 else ("warpgroup" if gwarps == 4 else f"group<{gwarps}>")
            op.group_warps = gwarps if gwarps and gwarps > 0 else 0
            op.issuers_per_group = 1 if spec.group_elects else 0
        elif scope in ("block", "cluster"):
            op.scope = scope
        else:
            op.scope = "thread"
            if spec.tma_lane_guarded and self.tk_lane_guarded:
                # old TK: the thread-scope spelling itself guarded lane 0
                op.scope = "warp"
                op.group_warps = 1
                op.issuers_per_group = 1
                op.detail["lane_guarded_semantics"] = True
        roles = list(spec.args)
        tiles = []
        for i, v in enumerate(vals):
            role = roles[i] if i < len(roles) else (roles[-1] if roles and roles[-1].startswith("*") else None)
            if role is None:
                continue
            if role.startswith("*"):
                tiles.append(v)
                continue
            if role == "barrier":
                if isinstance(v, Obj) and v.kind in ("barrier", "struct", "buffer"):
                    op.barrier = v.ref
                else:
                    op.detail["barrier_unknown"] = cexpr.render(args[i])
            elif role in ("count", "tx", "bytes", "parity", "id", "mask", "cta"):
                if isinstance(v, Expr):
                    if role == "count":
                        op.count = v
                    elif role == "tx":
                        op.detail["tx"] = v
                    elif role == "bytes":
                        op.bytes = v
                    elif role == "parity":
                        op.parity = v
                    elif role == "id":
                        op.sync_id = v
                    elif role == "mask":
                        op.detail["mask"] = v
                    elif role == "cta":
                        op.detail["cta"] = v
            elif role in ("dst", "src", "acc", "a", "b"):
                if isinstance(v, Obj):
                    if role in ("dst", "src"):
                        op.buffer = v.ref
                        op.detail["tile_type"] = v.type
                        if v.reinterpreted_from is not None:
                            op.detail["reinterpreted_from"] = v.reinterpreted_from
                    op.operands = op.operands + (v.ref,)
                    op.detail[f"{role}_type"] = v.type
                    op.detail[f"{role}_kind"] = v.kind
                    if v.reinterpreted_from is not None:
                        op.detail[f"{role}_reinterpreted_from"] = v.reinterpreted_from
            elif role == "coord":
                items = v if isinstance(v, tuple) else (v,)
                op.detail["coord"] = tuple(x if isinstance(x, Expr) else E.opaque("coord") for x in items)
            elif role == "gl":
                if isinstance(v, Obj):
                    op.detail["gl"] = v.ref.name
                    op.detail["gl_type"] = v.type
        # derived numbers
        if spec.kind == ir.MBAR_INIT:
            count = op.count if op.count is not None else E.opaque("count")
            tx = op.detail.get("tx", E.Const(0))
            op.count = E.binop("+", count, tx)  # TK sums thread_count + transaction_count
        elif spec.kind == ir.MBAR_ARRIVE:
            if op.count is None:
                op.count = E.Const(1) if len(vals) <= (1 if not op.detail.get("remote") else 2) else E.opaque("count")
            if op.detail.get("and_wait"):
                op.parity = vals[1] if len(vals) > 1 and isinstance(vals[1], Expr) else None
                op.count = E.Const(1)
        elif spec.kind == ir.MBAR_EXPECT:
            op.detail["arrives"] = 1
            if base == "expect":
                total: Expr = E.Const(0)
                for t in tiles:
                    s = t.type.size_bytes() if isinstance(t, Obj) and t.type is not None else None
                    if s is None:
                        total = E.opaque("expect bytes")
                        break
                    total = E.binop("+", total, s)
                op.bytes = total
                op.detail["tiles"] = [str(t.ref) for t in tiles if isinstance(t, Obj)]
            elif op.bytes is None:
                op.bytes = E.opaque("bytes")
        elif spec.kind in (ir.TMA_LOAD, ir.TMA_STORE):
            t = op.detail.get("tile_type")
            op.bytes = t.size_bytes() if isinstance(t, ir.TileType) else None
            if op.bytes is None:
                op.bytes = E.opaque("tile bytes")
            if spec.kind == ir.TMA_LOAD and "mask" in op.detail:
                op.detail["multicast"] = True
        elif spec.kind in (ir.MMA_WAIT, ir.TMA_STORE_WAIT, ir.CP_ASYNC_WAIT):
            n = self._targ_int(btargs, ctx, 0)
            op.count = E.Const(n if n is not None else 0)
        elif spec.kind == ir.SETMAXNREG:
            n = self._targ_int(btargs, ctx, 0)
            if n is None and "n" in op.detail:
                n = op.detail["n"]
            op.count = E.Const(n) if n is not None else None
        elif spec.kind == ir.SYNC:
            sk = op.detail.get("sync_kind")
            if sk == "group":
                if base == "sync" and not args and gwarps == 1:
                    op.detail["sync_kind"] = "warp"
                else:
                    op.detail["sync_kind"] = "named"
                    op.count = E.Const(32 * gwarps) if gwarps and gwarps > 0 else None
                    if op.sync_id is None and btargs:
                        n = self._targ_int(btargs, ctx, 0)
                        op.sync_id = E.Const(n) if n is not None else None
            elif sk == "block_named":
                op.detail["sync_kind"] = "block"
                op.count = self.model.block_threads
        if spec.kind == ir.MBAR_ARRIVE and op.barrier is None and base == "arrive" and scope == "group" and vals \
                and isinstance(vals[0], Expr):
            # group<N>::arrive(int id): a named-barrier arrive, not an mbarrier
            op.kind = ir.NAMED_ARRIVE
            op.sync_id = vals[0]
            op.count = E.Const(32 * gwarps) if gwarps and gwarps > 0 else None
        self.emit(op, ctx)
        return None

    def _emit_reg_access(self, base, qual, vals, ctx, cursor, node):
        loc = loc_of(cursor, self.filename) if cursor is not None else self.model.location
        written = K.REGISTER_OPS.get(base)
        for i, v in enumerate(vals):
            if isinstance(v, Obj) and v.kind in ("regtile", "buffer"):
                access = "write" if written == i else "read"
                if base == "zero" or base in ("one", "neg_infty"):
                    access = "zero" if i == 0 else access
                if v.kind == "regtile":
                    op = ir.Op(ir.REG_ACCESS, f"{qual}::{base}" if qual else base, loc, ctx.guard, ctx.loops,
                               buffer=v.ref, detail={"access": access, "tile_type": v.type, "args_text": [cexpr.render(a) for a in node[2]]})
                else:
                    op = ir.Op(ir.SMEM_ACCESS, f"{qual}::{base}" if qual else base, loc, ctx.guard, ctx.loops,
                               buffer=v.ref, detail={"access": "write" if base == "store" else "read",
                                                     "tile_type": v.type,
                                                     "reinterpreted_from": v.reinterpreted_from})
                if qual:
                    op.scope = qual.split("::")[-1]
                self.emit(op, ctx)

    def _ev_method(self, callee, args, ctx: Ctx, cursor):
        obj = self.ev(callee[1], ctx, cursor)
        mname = callee[2]
        targs = callee[4] if len(callee) > 4 else None
        if isinstance(obj, Allocator) and mname == "allocate":
            t = None
            dims = []
            if targs:
                t = self.resolve_type(targs[0], ctx.env)
                for a in targs[1:]:
                    v = self.ev(a, replace(ctx, dry=True))
                    dims.append(v if isinstance(v, Expr) else E.opaque("dim"))
            return ("alloc", t, tuple(dims), obj.alignment)
        if isinstance(obj, tuple) and obj and obj[0] == "glmethod":
            return E.Var(f"{obj[1].ref}.{mname}()", E.PARAM)
        if isinstance(obj, Obj) and obj.kind == "gl":   # g.A.rows(), g.C.cols(): uniform sizes
            return E.Var(f"{obj.ref}.{mname}()", E.PARAM)
        if isinstance(obj, Obj) and obj.kind == "tmem_allocator":
            return self._tmem_allocator_method(obj, mname, targs, args, ctx, cursor)
        if isinstance(obj, Obj) and obj.kind == "tmem" and mname == "subtile":
            return self._tmem_subtile(obj, targs, args, ctx, cursor)
        if isinstance(obj, Obj) and mname in ("subtile",):
            return obj
        if isinstance(obj, StructType):
            f = obj.env.vars.get(mname)
            if isinstance(f, Func):
                return self._inline(f, args, ctx, cursor, targs)
        vals = [self.ev(a, ctx, cursor) for a in args]
        self._unmodelled_use(vals, ctx, cursor, cexpr.render(callee))
        return self._opaque_from(callee, [obj] + vals)

    # -- TMEM (Blackwell) ------------------------------------------------------
    def _tmem_allocator(self, name, type_toks, ctx: Ctx, loc):
        """`tensor_allocator<nblocks_per_sm, ncta, managed> tm;`: TK's types/tensor/tensor.cuh."""
        targs: list = []
        if "<" in type_toks:
            inner = type_toks[type_toks.index("<") + 1:]
            depth, cur = 0, []
            for tk in inner:
                if tk in ("<", "(", "{"):
                    depth += 1
                elif tk in (">", ")", "}"):
                    if depth == 0:
                        break
                    depth -= 1
                elif tk == ">>" and depth == 0:
                    break
                if tk == "," and depth == 0:
                    targs.append(cur)
                    cur = []
                    continue
                cur.append(tk)
            if cur:
                targs.append(cur)
        vals: list = []
        for ttoks in targs:
            if ttoks in (["true"], ["false"]):
                vals.append(ttoks == ["true"])
                continue
            v = self.ev(cexpr.parse_expression(ttoks, ctx.env.has), replace(ctx, dry=True))
            c = v.const() if isinstance(v, Expr) else None
            vals.append(c if isinstance(c, (int, bool)) else None)
        nb = vals[0] if len(vals) > 0 else None
        ncta = vals[1] if len(vals) > 1 else None
        managed = vals[2] if len(vals) > 2 else True
        if isinstance(managed, int) and not isinstance(managed, bool):
            managed = bool(managed)
        cols = ((512 // nb) // 32) * 32 if isinstance(nb, int) and not isinstance(nb, bool) and nb > 0 else None
        if not ctx.dry:
            self.model.tmem_allocators[name] = ir.TmemAllocator(name, nb, ncta, managed, cols, loc)
            if managed is True:
                # the managed constructor: warp 0 runs provision() (tcgen05.alloc)
                op = ir.Op(ir.TMEM_OP, f"{name}.tensor_allocator()", loc,
                           ctx.guard.with_thread(E.binop("==", E.binop("/", E.TID, E.Const(32)), E.Const(0))),
                           ctx.loops, scope="warp", group_warps=1,
                           detail={"tmem": "alloc", "allocator": name, "cols": cols, "ncta": ncta,
                                   "managed": True})
                self.emit(op, ctx)
        return Obj("tmem_allocator", ir.Ref(name), None)

    def _tmem_allocator_method(self, obj, mname, targs, args, ctx: Ctx, cursor):
        name = obj.ref.name
        alloc = self.model.tmem_allocators.get(name) if self.model is not None else None
        if mname == "allocate":
            t = self.resolve_type(targs[0], ctx.env) if targs else None
            vals = [self.ev(a, ctx, cursor) for a in args]
            if not isinstance(t, ir.TileType) or t.kind != "tt" or not vals:
                return E.opaque("tmem allocate")
            col = vals[-1] if isinstance(vals[-1], Expr) else E.opaque("tmem col")
            if len(vals) == 2:   # half tiles: get_addr(superlane, col) = addr + ((superlane*16) << 16) + col
                lane = E.binop("*", vals[0], E.Const(16)) if isinstance(vals[0], Expr) else E.opaque("superlane")
            else:
                lane = E.Const(0)
            return ("tmem_tile", name, t, lane, col)
        if mname in ("provision", "deprovision"):
            vals = [self.ev(a, ctx, cursor) for a in args]
            loc = loc_of(cursor, self.filename) if cursor is not None else self.model.location
            op = ir.Op(ir.TMEM_OP, f"{name}.{mname}", loc, ctx.guard, ctx.loops, scope="warp", group_warps=1,
                       detail={"tmem": "alloc" if mname == "provision" else "dealloc", "allocator": name,
                               "cols": alloc.cols if alloc else None, "ncta": alloc.ncta if alloc else None,
                               "managed": alloc.managed if alloc else None})
            self.emit(op, ctx)
            return None
        for a in args:
            self.ev(a, ctx, cursor)
        if mname in ("get_addr",):
            return E.opaque("tmem addr")
        return None

    def _bind_tmem_tile(self, name, v, t, dims, loc):
        items = list(v) if isinstance(v, tuple) and v and isinstance(v[0], tuple) else [v]
        elems = []
        alloc = None
        ttype = t if isinstance(t, ir.TileType) else None
        for it in items:
            if isinstance(it, tuple) and it and it[0] == "tmem_tile":
                alloc = alloc or it[1]
                ttype = ttype or it[2]
                elems.append((it[3], it[4]))
            else:
                elems.append(None)
        if ttype is None:
            return E.opaque("tmem tile")
        if self.model is not None:
            self.model.tmem_tiles[name] = ir.TmemTile(name, ttype, alloc, tuple(elems), tuple(dims), loc)
        obj = Obj("tmem", ir.Ref(name), ttype)
        return _arr(obj, dims) if dims else obj

    def _tmem_subtile(self, obj, targs, args, ctx: Ctx, cursor):
        """`t.subtile<TT>(row, col)` = TT(addr + (row << 16) + col / (4 / sizeof(T))) (tt.cuh)."""
        t = self.resolve_type(targs[0], ctx.env) if targs else None
        vals = [self.ev(a, ctx, cursor) for a in args]
        lane0, col0 = obj.tmem_offset or (E.Const(0), E.Const(0))
        eb = obj.type.dtype_bytes if obj.type is not None else None
        if len(vals) == 2:
            row, col = vals
        elif len(vals) == 1:
            row, col = E.Const(0), vals[0]
        else:
            row = col = None
        if not isinstance(row, Expr):
            row = E.opaque("tmem row")
        if not isinstance(col, Expr) or not eb:
            col = E.opaque("tmem col")
        elif eb < 4:
            col = E.binop("/", col, E.Const(4 // eb))
        if not isinstance(t, ir.TileType) or t.kind != "tt":
            t = None
        return Obj("tmem", obj.ref, t, tmem_offset=(E.binop("+", lane0, row), E.binop("+", col0, col)))

    def _emit_tmem_access(self, base, qual, scope_warps, args, ctx: Ctx, cursor):
        vals = [self.ev(a, ctx, cursor) for a in args]
        loc = loc_of(cursor, self.filename) if cursor is not None else self.model.location
        store = base.startswith("store")
        tm = vals[0] if store else vals[1]
        reg = vals[1] if store else vals[0]
        if not (isinstance(tm, Obj) and tm.kind == "tmem"):
            return None
        warps = scope_warps if scope_warps is not None else 1   # unqualified: TK's legacy warp scope
        op = ir.Op(ir.TMEM_OP, f"{qual}::{base}" if qual else base, loc, ctx.guard, ctx.loops,
                   operands=(tm.ref,))
        op.scope = "warp" if warps == 1 else ("warpgroup" if warps == 4 else f"group<{warps}>")
        op.group_warps = warps if warps and warps > 0 else 0
        op.issuers_per_group = 0     # tcgen05.ld/st are .sync.aligned: every thread of each warp
        lane, col = tm.tmem_offset or (E.Const(0), E.Const(0))
        op.detail = {"tmem": "store" if store else "load", "tile_type": tm.type, "lane_off": lane,
                     "col_off": col, "args_text": [cexpr.render(a) for a in args],
                     "reg": reg.ref if isinstance(reg, Obj) else None}
        self.emit(op, ctx)
        return None

    def _emit_tcgen05_mma(self, base, qual, btargs, args, ctx: Ctx, cursor):
        """Thread-scope tcgen05 MMAs (TK ops/thread/mma/tcgen05.cuh): `mm[a][2]_{AB,ABt,AtB,AtBt}`
        and `mm[a][2]<ta, tb>`; `mm*` overwrite the accumulator, `mma*` accumulate, `*2` are
        cta_group::2; a trailing semaphore is committed (tcgen05.commit, multicast 0b11 for
        cta_group::2) after the MMA."""
        vals = [self.ev(a, ctx, cursor) for a in args]
        loc = loc_of(cursor, self.filename) if cursor is not None else self.model.location
        op = ir.Op(ir.MMA, f"{qual}::{base}" if qual else base, loc, ctx.guard, ctx.loops, scope="thread")
        ncta = 2 if "2" in base else 1
        op.detail = {"family": "tcgen05", "accumulate": base.startswith("mma"), "ncta": ncta,
                     "args_text": [cexpr.render(a) for a in args]}
        for role, v in zip(("acc", "a", "b"), vals[:3]):
            if isinstance(v, Obj):
                op.operands = op.operands + (v.ref,)
                op.detail[f"{role}_type"] = v.type
                op.detail[f"{role}_kind"] = v.kind
                if v.kind == "tmem":
                    op.detail[f"{role}_tmem_offset"] = v.tmem_offset or (E.Const(0), E.Const(0))
        last = vals[-1] if len(vals) >= 4 else None
        commit = None
        if isinstance(last, Obj) and last.kind == "barrier":
            op.detail["commit_barrier"] = last.ref
            # the overload with a semaphore runs detail::tcgen05::commit<ncta>(sem) after the MMA:
            # one arrive (multicast to both CTAs of the pair for cta_group::2), like tensor_commit
            commit = ir.Op(ir.MBAR_ARRIVE, op.api, loc, ctx.guard, ctx.loops, scope="thread", barrier=last.ref,
                           count=E.Const(1), detail={"via": "tcgen05.commit", "ncta": ncta, "of_mma": True,
                                                     "args_text": op.detail["args_text"]})
        self.emit(op, ctx)
        if commit is not None:
            self.emit(commit, ctx)
        return None

    def _resolve_callable(self, segs, ctx: Ctx):
        head = segs[0][0]
        v = ctx.env.lookup(head)
        if v is None and head in self.mb.structs:
            v = ("struct_decl", self.mb.structs[head])
        if len(segs) == 1:
            if isinstance(v, Func):
                return v
            if head in self.mb.functions:
                return Func(head, self.mb.functions[head])
            return None
        cur = self._deref(v, head, ctx, segs[0][1]) if v is not None else None
        for seg, sargs in segs[1:]:
            if isinstance(cur, StructType):
                m = cur.env.vars.get(seg)
                if isinstance(m, Func):
                    cur = m
                    continue
                cur = self._deref(m, seg, ctx, sargs) if m is not None else None
            else:
                return None
        return cur if isinstance(cur, Func) else None

    def _inline(self, f: Func, args, ctx: Ctx, cursor, targs):
        if ctx.depth >= MAX_INLINE_DEPTH:
            self._note_unmodelled(cursor, f"call to '{f.name}' not inlined (depth limit)")
            return E.opaque(f.name)
        # pick the overload with a body and a matching arity
        cands = [c for c in f.cursors if any(ch.kind == CK.COMPOUND_STMT for ch in c.get_children())]
        chosen = None
        for c in cands:
            params = [p for p in c.get_children() if p.kind == CK.PARM_DECL]
            if len(params) >= len(args):
                chosen = c
                break
        if chosen is None:
            vals = [self.ev(a, ctx, cursor) for a in args]
            self._unmodelled_use(vals, ctx, cursor, f.name)
            return self._opaque_from(("name", ((f.name, None),)), vals)
        vals = [self.ev(a, ctx, cursor) for a in args]
        parent_env = f.owner.env if f.owner is not None else self.mb.globals_env
        fenv = Env(parent_env)
        # template params of a function template: explicit args, else defaults
        tparams = [ch for ch in chosen.get_children()
                   if ch.kind in (CK.TEMPLATE_NON_TYPE_PARAMETER, CK.TEMPLATE_TYPE_PARAMETER)]
        for i, p in enumerate(tparams):
            if targs and i < len(targs):
                if p.kind == CK.TEMPLATE_TYPE_PARAMETER:
                    t = self.resolve_type(targs[i], ctx.env)
                    if t is not None:
                        fenv.define(p.spelling, t)
                else:
                    v = self.ev(targs[i], replace(ctx, dry=True))
                    fenv.define(p.spelling, v)
        missing = [p for p in tparams if p.spelling not in fenv.vars]
        if missing:
            self._bind_template_params_list(missing, fenv)
        params = [p for p in chosen.get_children() if p.kind == CK.PARM_DECL]
        for i, p in enumerate(params):
            if i < len(vals):
                fenv.define(p.spelling, vals[i])
            else:
                toks = tokens_of(p)
                if "=" in toks:
                    fenv.define(p.spelling, self.ev(cexpr.parse_expression(toks[toks.index("=") + 1:], fenv.has),
                                                    Ctx(env=fenv, guard=ctx.guard, dry=True)))
                else:
                    fenv.define(p.spelling, E.opaque(p.spelling))
        body = next(ch for ch in chosen.get_children() if ch.kind == CK.COMPOUND_STMT)
        frame = Frame()
        call_loc = loc_of(cursor, self.filename) if cursor is not None else None
        sub = replace(ctx, env=fenv, frame=frame, depth=ctx.depth + 1,
                      callers=ctx.callers + ((call_loc,) if call_loc else ()))
        self.walk(body, sub)
        # values written through reference parameters flow back
        for i, p in enumerate(params):
            if i < len(args) and "&" in p.type.spelling and args[i][0] == "name" and len(args[i][1]) == 1:
                newv = fenv.vars.get(p.spelling)
                if isinstance(newv, Expr):
                    ctx.env.assign(args[i][1][0][0], newv)
        if frame.returns:
            vals_r = [v for _, v in frame.returns]
            if len(vals_r) == 1 or all(v == vals_r[0] for v in vals_r):
                return vals_r[0]
            return E.opaque(f.name)
        return None

    # -- the prototype protocol's builtins -----------------------------------
    def _protocol_flag(self, args, ctx: Ctx):
        """tkcheck_flag(lcft, NAME, default): the template's optional flag, as TK's
        FLAG_GETTER resolves it (the user's static member, else the default)."""
        st = ctx.env.lookup("lcft")
        fname = args[1][1][-1][0] if args[1][0] == "name" else None
        if isinstance(st, StructType) and fname and fname in st.env.vars:
            v = self._deref(st.env.vars[fname], fname, Ctx(env=st.env, guard=ctx.guard, dry=True))
            if isinstance(v, Expr):
                if self.model is not None:
                    self.model.template_params[fname] = v
                return v
        v = self.ev(args[2], ctx)
        if self.model is not None and isinstance(v, Expr):
            self.model.template_params[fname or "?"] = v
        return v

    def _protocol_callback(self, args, ctx: Ctx, cursor):
        """tkcheck_callback(lcft::producer::load, "field", value, ...): call the
        user's callback with an `args` record built from named fields."""
        target = args[0]
        fn = None
        if target[0] == "name":
            fn = self._resolve_callable([s for s in target[1] if s[0] not in _NAMESPACES] or list(target[1]), ctx)
        rec = Rec(type_name="args")
        i = 1
        while i + 1 < len(args):
            key = args[i][1].strip('"') if args[i][0] == "str" else None
            val = self.ev(args[i + 1], ctx, cursor)
            if key:
                rec.fields[key] = val
            i += 2
        if fn is None:
            return rec
        role = "producer" if "producer" in cexpr.render(target) else (
            "consumer" if "consumer" in cexpr.render(target) else None)
        sub = replace(ctx, role_hint=role or ctx.role_hint)
        self._inline_with_record(fn, rec, sub, cursor)
        return rec

    def _inline_with_record(self, f: Func, rec: Rec, ctx: Ctx, cursor):
        cands = [c for c in f.cursors if any(ch.kind == CK.COMPOUND_STMT for ch in c.get_children())]
        if not cands:
            return
        chosen = cands[0]
        fenv = Env(f.owner.env if f.owner is not None else self.mb.globals_env)
        params = [p for p in chosen.get_children() if p.kind == CK.PARM_DECL]
        if params:
            fenv.define(params[0].spelling, rec)
        body = next(ch for ch in chosen.get_children() if ch.kind == CK.COMPOUND_STMT)
        call_loc = loc_of(cursor, self.filename) if cursor is not None else None
        self.walk(body, replace(ctx, env=fenv, frame=Frame(), depth=ctx.depth + 1,
                                callers=ctx.callers + ((call_loc,) if call_loc else ())))


ir_spec_everyone_sync = K.OpSpec(ir.SYNC, ("id",), (("sync_kind", "block_named"),), group_elects=False)


# ---------------------------------------------------------------- helpers ----

class _ArrVal:
    """An array of objects (`semaphore full[STAGES]` before indexing)."""

    def __init__(self, obj: Obj, dims):
        self.obj = obj
        self.dims = dims

    def index(self, idx):
        return self.obj.at(idx, self.obj.type) if len(self.dims) <= 1 else _ArrVal(self.obj.at(idx, self.obj.type), self.dims[1:])


def _arr(obj: Obj, dims):
    return _ArrVal(obj, list(dims)) if dims else obj


#: KITTENS_DEFAULT_ALIGN (TK's common/util.cuh): st / sv are __align__(128) on Hopper and Blackwell.
_TK_TYPE_ALIGN = 128


def _sizeof_align(t: ir.TileType) -> tuple[int, int] | None:
    """(sizeof, alignof) of a shared TK type or a struct of them, when constant."""
    if t.kind in ("st", "sv"):
        s = t.size_bytes()
        v = s.eval({}) if s is not None else None
        if not isinstance(v, int):
            return None
        return (v + _TK_TYPE_ALIGN - 1) // _TK_TYPE_ALIGN * _TK_TYPE_ALIGN, _TK_TYPE_ALIGN
    if t.kind == "semaphore":
        return 8, 8
    if t.kind == "struct":
        offs, size = _member_offsets(t)
        if size is None:
            return None
        al = max([1] + [(_sizeof_align(mt) or (0, 1))[1] for _, mt, _ in t.members])
        return size, al
    return None


def _member_offsets(t: ir.TileType) -> tuple[dict[str, int], int | None]:
    """Byte offset of each member of a struct of TK types, and sizeof the struct."""
    offs, pos, al = {}, 0, 1
    for mname, mt, count in t.members:
        sa = _sizeof_align(mt)
        n = count.eval({}) if count is not None else 1
        if sa is None or not isinstance(n, int):
            return offs, None
        pos = (pos + sa[1] - 1) // sa[1] * sa[1]
        offs[mname] = pos
        pos += sa[0] * n
        al = max(al, sa[1])
    return offs, (pos + al - 1) // al * al


def _const_strides(dims, elem_size):
    """Byte strides of array dims over elements of `elem_size` bytes (None when not constant)."""
    if elem_size is None:
        return None
    vals = [d.eval({}) for d in dims]
    if not all(isinstance(v, int) for v in vals):
        return None
    out, acc = [], elem_size
    for v in reversed(vals):
        out.append(acc)
        acc *= v
    return tuple(reversed(out))


def _tile_attr(t: ir.TileType, name: str):
    if name == "rows" and t.rows is not None:
        return t.rows
    if name == "cols" and t.cols is not None:
        return t.cols
    if name == "num_elements":
        if t.kind in ("st", "rt", "tt") and t.rows is not None and t.cols is not None:
            return E.binop("*", t.rows, t.cols)
        if t.kind in ("sv", "rv") and t.cols is not None:
            return t.cols
    if name == "length" and t.cols is not None:
        return t.cols
    if name == "height" and t.rows is not None:
        return E.binop("/", t.rows, E.Const(16))
    if name == "width" and t.cols is not None:
        return E.binop("/", t.cols, E.Const(16))
    return None


def _to_bool(e: Expr) -> Expr:
    if isinstance(e, E.Bin) and (e.op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||")):
        return e
    if isinstance(e, E.Un) and e.op == "!":
        return e
    if isinstance(e, E.Const):
        return E.Const(bool(e.value))
    if isinstance(e, E.Var) and e.is_bool:
        return e
    return E.binop("!=", e, E.Const(0))


def _is_ident(t: str) -> bool:
    return bool(t) and (t[0].isalpha() or t[0] == "_")


_DECL_WORDS = {"__shared__", "static", "constexpr", "const", "extern", "__align__", "alignas", "volatile",
               "inline", "__device__", "register", "auto"}


def _strip_declarator_words(toks: list[str]) -> list[str]:
    """Drop storage words anywhere and declarator punctuation (`&`, `*`, `(`)
    outside template arguments: `rt_fl<1*16, 8*16> &x` keeps its `*`."""
    out, depth = [], 0
    for t in toks:
        if t == "<":
            depth += 1
        elif t == ">":
            depth = max(depth - 1, 0)
        elif t == ">>":
            depth = max(depth - 2, 0)
        if t in _DECL_WORDS or (depth == 0 and t in ("&", "*", "(", "&&")):
            continue
        out.append(t)
    return out


def _split_comma(node):
    if node[0] == "comma":
        return _split_comma(node[1]) + [node[2]]
    return [node]


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


_TMEM_ACCESS_NAMES = ("load_async", "store_async")
_TCGEN05_MMA = re.compile(r"mma?2?(_(AB|ABt|AtB|AtBt))?")


def _is_tmem_init(v) -> bool:
    if isinstance(v, tuple) and v and v[0] == "tmem_tile":
        return True
    return isinstance(v, tuple) and bool(v) and all(isinstance(x, tuple) and x and x[0] == "tmem_tile" for x in v)


_LAUNCH_DIMS = frozenset(f"{b}.{f}" for b in ("gridDim", "blockDim", "clusterDim") for f in "xyz")


def _positive_uniform(e) -> bool:
    """A launch dimension (gridDim.x, blockDim.y, ...) or a product of them and positive constants."""
    if isinstance(e, E.Var):
        return e.kind == E.PARAM and e.name in _LAUNCH_DIMS
    if isinstance(e, E.Const):
        return isinstance(e.value, int) and not isinstance(e.value, bool) and e.value > 0
    if isinstance(e, E.Bin) and e.op == "*":
        return _positive_uniform(e.a) and _positive_uniform(e.b)
    return False


def _step_of(node, var, ev):
    if node[0] == "comma":     # `for (...; ...; task += n, t++)`
        return _step_of(node[1], var, ev) or _step_of(node[2], var, ev)
    if node[0] == "assign":
        op, lhs, rhs = node[1], node[2], node[3]
        if lhs == ("name", ((var, None),)):
            if op == "+=":
                s = ev(rhs)
                return s if isinstance(s, Expr) else None
            if op == "-=":
                s = ev(rhs)
                return E.unop("-", s) if isinstance(s, Expr) else None
            if op == "=" and rhs[0] == "bin" and rhs[1] == "+" and rhs[2] == lhs:
                s = ev(rhs[3])
                return s if isinstance(s, Expr) else None
    if node[0] == "post" and node[2] == ("name", ((var, None),)):
        return E.Const(1 if node[1] == "++" else -1)
    return None


def _invariant_step(c: Expr) -> bool:
    """A constant, or a value that is the same on every iteration: no carried start value,
    no loop counter, no thread id, nothing opaque."""
    if isinstance(c, E.Const):
        return True
    return not c.is_opaque() and not c.depends_on(E.THREAD) and not c.depends_on(E.LOOP)


def _wrap_condition(c, counter: E.Var | None):
    """(S, r) when `c` is `counter % S == r` with constants 0 <= r < S."""
    if counter is None or not (isinstance(c, E.Bin) and c.op == "=="):
        return None
    a, b = c.a, c.b
    if isinstance(a, E.Const):
        a, b = b, a
    if isinstance(a, E.Bin) and a.op == "%" and a.a == counter and isinstance(a.b, E.Const) \
            and isinstance(b, E.Const) and isinstance(a.b.value, int) and a.b.value > 0 \
            and isinstance(b.value, int) and 0 <= b.value < a.b.value:
        return a.b.value, b.value
    return None


def solve_recurrence(start: E.Var, end, v0: Expr, name: str, counter: E.Var | None = None):
    """Closed form of a loop-carried variable from one symbolic iteration.

    `end` is the variable's value at the end of the body, as an expression of
    its value at the start (`start`). Recognised: invariant, +c, ^1 / 1-x
    (a phase bit), (x+c)%N and its `x+1==N ? 0 : x+1` spelling (a ring index),
    and the TK phase bitfield `x ^ (1 << (ring + 16n))`. Anything else is an
    unknown per iteration (never a guess).
    """
    def opaque_k(k):
        return E.opaque(f"{name}@iter")
    if not isinstance(end, Expr):
        return opaque_k
    if end == start:
        return lambda k: v0
    fv = end.free_vars()
    if start not in fv:
        # overwritten each iteration with something not depending on itself
        if not any(v.kind == E.LOOP and v.name.endswith("@start") for v in fv):
            first = v0
            return lambda k: E.ite(E.binop("==", k, E.Const(0)), first, end) if not isinstance(k, E.Const) or k.value > 0 else first
        return opaque_k
    # x + c
    if isinstance(end, E.Bin) and end.op in ("+", "-") and end.a == start and start not in end.b.free_vars() \
            and not end.b.depends_on(E.THREAD):
        c = end.b if end.op == "+" else E.unop("-", end.b)
        return lambda k: E.binop("+", v0, E.binop("*", c, k))
    # x ^ 1  /  1 - x
    if (isinstance(end, E.Bin) and end.op == "^" and end.a == start and end.b == E.Const(1)) or \
            (isinstance(end, E.Bin) and end.op == "-" and end.a == E.Const(1) and end.b == start):
        if end.op == "^":
            return lambda k: E.binop("^", v0, E.binop("%", k, E.Const(2)))
        return lambda k: E.ite(E.binop("==", E.binop("%", k, E.Const(2)), E.Const(0)), v0, E.binop("-", E.Const(1), v0))
    # (x + c) % N; c may be a loop-invariant value (a ring advanced by an inner loop's trip count)
    if isinstance(end, E.Bin) and end.op == "%" and isinstance(end.a, E.Bin) and end.a.op == "+" \
            and end.a.a == start and isinstance(end.b, E.Const) and _invariant_step(end.a.b):
        c, n = end.a.b, end.b
        return lambda k: E.binop("%", E.binop("+", v0, E.binop("*", c, k)), n)
    # x + 1 == N ? 0 : x + 1
    if isinstance(end, E.Ite) and isinstance(end.c, E.Bin) and end.c.op in ("==", ">=") and \
            end.t == E.Const(0) and isinstance(end.e, E.Bin) and end.e.op == "+" and end.e.a == start \
            and end.e.b == E.Const(1) and isinstance(end.c.b, E.Const):
        n = end.c.b
        return lambda k: E.binop("%", E.binop("+", v0, k), n)
    # `if (k % S == r) phase ^= 1` (also `1 - phase`): the phase flips once per
    # S iterations; before iteration k it flipped (k + S - 1 - r) / S times
    if isinstance(end, E.Ite) and end.e == start:
        flip = (isinstance(end.t, E.Bin) and end.t.op == "^" and end.t.a == start and end.t.b == E.Const(1)) or \
               (isinstance(end.t, E.Bin) and end.t.op == "-" and end.t.a == E.Const(1) and end.t.b == start)
        wr = _wrap_condition(end.c, counter)
        if flip and wr is not None:
            period, r = wr
            return lambda k: E.binop("^", v0, E.binop("%", E.binop("/", E.binop("+", k, E.Const(period - 1 - r)),
                                                                   E.Const(period)), E.Const(2)))
    return opaque_k
