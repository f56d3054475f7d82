"""One walk of the parse tree builds the KernelModel of each kernel.

libclang supplies statement structure and declarations; expressions are parsed
from their tokens (`cexpr`) and folded into model values by the walker's `ev`
(walk_exprs.py). The walk is a small abstract interpreter:

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

import os
import re
from typing import Any

from ..model import expr as E
from ..model import ir
from .value_types import StructType
from .lexer import lex
from .parse import top_level
from .launch_shape import block_shapes, grid_shapes
from .explicit_specs import is_explicit_specialization
from .walk_env import CK, Env, Ctx, loc_of, _same_file, register_text, tokens_of, _adjacent, _NAMESPACES
from .walk_types import TypeResolution
from .walk_statements import StatementWalk
from .walk_asm import AsmLowering
from .walk_exprs import ExprEvaluation
from .walk_calls import CallLowering
from .tensor_maps import TensorMaps
from .walk_atomics import AtomicLowering
from .walk_libcu import LibcuLowering
from .walk_ptxns import PtxnsLowering
from .walk_tmem import TmemLowering
from .walk_inline import InlineExpansion

_TEMPLATE_PARAMS = (CK.TEMPLATE_NON_TYPE_PARAMETER, CK.TEMPLATE_TYPE_PARAMETER, CK.TEMPLATE_TEMPLATE_PARAMETER)


def _visible_from(root, cands: list) -> list:
    """Of functions sharing a name, those a call in `root` can mean: declared in root's namespace
    or one enclosing it (the file's, a shared outer namespace); all of them when none is."""
    if len(cands) <= 1:
        return list(cands)
    here = _namespaces_of(root)
    vis = [c for c in cands if here[: len(_namespaces_of(c))] == _namespaces_of(c)]
    return vis or list(cands)


def _qualified_as(quals: set[str] | None, cands: list) -> list:
    """Of the declarations a name may mean, those in one of the namespaces `quals` it is spelled
    with (`ns::f`); all of them when it is spelled bare or none is in such a namespace."""
    if not quals or len(cands) <= 1:
        return cands
    inside = [c for c in cands if quals & set(_namespaces_of(c))]
    return inside or cands


def _extent_key(c):
    e = c.extent
    f = e.start.file.name if e.start.file is not None else ""
    return (f, (e.start.line, e.start.column), (e.end.line, e.end.column))


def _contains(outer, inner) -> bool:
    return outer[0] == inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2] and outer != inner


def _namespaces_of(cursor) -> list[str]:
    """The named namespaces a declaration is in, outermost first (structs in between skipped)."""
    out = []
    p = cursor.semantic_parent
    while p is not None and p.kind != CK.TRANSLATION_UNIT:
        if p.kind == CK.NAMESPACE and p.spelling:
            out.append(p.spelling)
        p = p.semantic_parent
    return list(reversed(out))


_PHASEBIT_CALLS = ("update_phasebit", "get_phasebit")


def phasebit_names(roots) -> frozenset[str]:
    """The variables passed as the bitfield (first argument) of TK's `update_phasebit<n>(NAME, ring)`
    / `get_phasebit<n>(NAME, ring)` calls under the cursors `roots`."""
    out = set()
    for root in roots:
        for c in root.walk_preorder():
            if c.kind == CK.CALL_EXPR and c.spelling in _PHASEBIT_CALLS:
                arg = next(iter(c.get_arguments()), None)
                name = _plain_name(arg) if arg is not None else None
                if name:
                    out.add(name)
    return frozenset(out)


def _plain_name(arg) -> str | None:
    """The variable an argument names, through implicit conversions (a template's dependent
    reference is an unexposed expression of its one name)."""
    while arg.kind == CK.UNEXPOSED_EXPR:
        kids = list(arg.get_children())
        if not kids:
            toks = [t.spelling for t in arg.get_tokens()]
            return arg.spelling if toks == [arg.spelling] else None
        if len(kids) != 1:
            return None
        arg = kids[0]
    if arg.kind == CK.MEMBER_REF_EXPR and arg.spelling:
        return "." + arg.spelling  # a record's field (`regs.phasebits`): any record's field of that name
    return arg.spelling if arg.kind == CK.DECL_REF_EXPR else None


class ModelBuilder:
    """Builds KernelModels for one parsed file."""

    def __init__(self, parsed):
        self.parsed = parsed
        self.tu = parsed.tu
        self.filename = parsed.path
        self.abs_path = parsed.abs_path
        register_text(parsed.abs_path, parsed.text)
        for hp, ht in parsed.user_texts.items():
            register_text(hp, ht)  # user headers as parsed (nvcc-compatibility rewrites)
        self.globals_env = Env()
        self.ns_envs: dict[tuple[str, ...], Env] = {}  # namespace path -> its scope (a child of the enclosing one)
        self.functions: dict[str, list] = {}  # user device functions by name (with bodies)
        self._method_names: frozenset[str] | None = None  # user_method_names(), computed once
        self.structs: dict[str, Any] = {}  # user struct/class cursors by name
        self.partial_specs: dict[str, list] = {}  # partial specializations of user class templates
        # explicit specializations (`template <> struct cfg<1> {...}`) by the template's name: a use
        # `cfg<1>` selects its own (walk_types.type_of_value), never the last one declared
        self.explicit_specs: dict[str, list] = {}
        self.kernels: list = []  # __global__ function cursors in the main file
        self.kernel_templates: list = []  # template __global__ functions (user files)
        self.header_kernels: list = []  # __global__ functions of the user's headers
        self.user_namespaces: set[str] = set()  # namespaces the user's code declares
        # kernels found and not analysed, other than for clang errors: (name, location, why)
        self.not_analysed: list[tuple[str, object, str]] = []
        self.templates: list = []  # structs that look like lcf/lcsf kernel templates
        self.macros: dict[str, list[str]] = {}
        self.macro_constants: dict[str, Any] = {}  # object-like macros whose value is a constant
        # function-like macros of the user's files: name -> (parameters, body tokens); the
        # carried-variable pass reads a loop body's tokens, so it expands them
        self.fn_macros: dict[str, tuple[list[str], list[str]]] = {}
        # -D NAME[=VALUE] of the build (command line, config, compile_commands): object-like
        # macros for constant evaluation; a #define in the file parsed later wins, as in cpp
        for d in getattr(parsed, "defines", ()):
            name, _, value = d.partition("=")
            if name.isidentifier():
                self.macros[name] = lex(value) if _ else ["1"]
        # kernels not analysed because clang errors stop them: (name, location, errors)
        self.blocked: list[tuple[str, object, list]] = []
        self.errors = None  # diagnostics.ErrorMap, set by build()
        self._blocked_cache: dict = {}
        self._blocked_cursors: dict = {}
        self._not_analysed_cursors: dict = {}
        self.model_cursors: dict[int, object] = {}  # id(model) -> the cursor of its code
        self.model_census_exclude: dict[int, set] = {}  # id(model) -> cursors not its code (other MK ops)
        self.model_census_roots: dict[int, list] = {}  # id(model) -> more roots of its code (its MK op)
        self._unbound: dict = {}  # template kernels with an instantiation not understood
        self._device_code_by_name: dict | None = None  # name -> device function cursors (coverage)
        self.interpreter_ops: list[tuple[str, object]] = []  # (op spelling, its struct) per interpreter op
        self.template_kinds: dict = {}  # struct hash -> the prototype template it is launched with
        self.lcsc_types: dict = {}  # struct hash -> (config, globals) structs of its lcsc launch
        self._collect()
        self.tensor_maps = TensorMaps(self)  # host-encoded tensor maps of the kernels' parameters

    # -- collection of top-level declarations ------------------------------
    def _in_user_code(self, cursor) -> bool:
        loc = cursor.location
        if loc.is_in_system_header:  # tkcheck's model, its stand-ins, the real TK headers
            return False
        f = loc.file
        if f is None:
            return False
        # the user's own files: the main file and its headers, not tkcheck's model and not the
        # real ThunderKittens folders given with --tk-include (decided by what was passed)
        return self.parsed.is_user_file(f.name)

    def _collect(self):
        # the top-level declarations, listed once: listing a TU's children costs a libclang
        # callback per declaration of every header, and whole-file facts need them again
        self._top_level = top_level(self.parsed)
        for c in self._top_level:
            self._collect_decl(c, self.globals_env, top=True)
        # the user's code of the translation unit (the main file, the user's headers) and what
        # it names: prototype launches, kernel instances (discovery.py)
        from .discovery import UserCode

        self.code = UserCode(self.parsed, self._top_level, self._in_user_code, self.filename)
        # a struct handed to a prototype template's kernel or launcher (`lcsc::launch_kernel<config,
        # globals, S>`, `auto k = lcsc::main_kernel<config, globals, S>`, `lcf::kernel<S>`) is a
        # kernel too, whatever members it has; a prototype::interpreter launch runs a pack of ops
        # (`interpreter::kernel<config, op1, op2>`): each op of each launch is a kernel of its own,
        # with its template arguments as spelled
        for use in self.code.prototype_launches():
            if use.kind == "interpreter":
                for spelling in use.ops:
                    st = self.structs.get(spelling.split("<")[0].split("::")[-1].strip())
                    if st is not None and all(sp != spelling for sp, _ in self.interpreter_ops):
                        self.interpreter_ops.append((spelling, st))
                continue
            st = self._user_struct(use.struct)
            if st is None:
                continue
            self.template_kinds.setdefault(st.hash, use.kind)
            if use.kind == "lcsc":
                cfg, glb = self._user_struct(use.config), self._user_struct(use.globals_)
                if cfg is not None and glb is not None:
                    self.lcsc_types.setdefault(st.hash, (cfg, glb))
            if all(t.hash != st.hash for t in self.templates):
                self.templates.append(st)
        # an interpreter op looks like an lcf template (layout, producer, consumer): it is not one
        ops = {st.hash for _, st in self.interpreter_ops}
        self.templates = [t for t in self.templates if t.hash not in ops]
        # a template struct with a parameter that has no default, launched through a function
        # template's type parameter (`run_bench<S<192, 192, 64>>(...)` whose body launches
        # `lcf::kernel<fmt>`): each instantiation the user's code spells is a kernel of its own
        self.template_instances: dict[int, list[tuple[str, ir.Location]]] = {}
        if self.templates:
            scopes = self._template_scopes()
            for t in self.templates:
                sp = self._spelled_instances(t, scopes)
                if sp:
                    self.template_instances[t.hash] = sp

    def _template_scopes(self) -> list[tuple[str, int, int, frozenset[str]]]:
        """(file, start, end, parameter names) of every template the user's code declares: a
        spelling inside one that names one of its parameters is not an instantiation of its own
        (it is instantiated with the enclosing template's arguments)."""
        kinds = (CK.FUNCTION_TEMPLATE, CK.CLASS_TEMPLATE, CK.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION)
        containers = (CK.NAMESPACE, CK.STRUCT_DECL, CK.CLASS_DECL, CK.UNEXPOSED_DECL) + kinds
        out = []
        stack = list(self.code.decls)
        while stack:
            c = stack.pop()
            if c.kind in kinds and c.extent.start.file is not None:
                names = frozenset(ch.spelling for ch in c.get_children() if ch.kind in _TEMPLATE_PARAMS)
                if names:
                    ext = c.extent
                    out.append((os.path.abspath(ext.start.file.name), ext.start.offset, ext.end.offset, names))
            if c.kind in containers:
                stack.extend(c.get_children())
        return out

    def _spelled_instances(self, t, scopes) -> list[tuple[str, ir.Location]]:
        """`S<192, 192, 64>` for every reference to the class template t in the user's code that
        spells its arguments, when one of t's parameters has no default (else the defaults bind
        them, as before), with where it is first spelled. Distinct spellings, in order of
        appearance; a spelling inside a template that names that template's parameters is left out."""
        if t.kind != CK.CLASS_TEMPLATE:
            return []
        params = [ch for ch in t.get_children() if ch.kind in _TEMPLATE_PARAMS]
        if not params or all("=" in tokens_of(p) for p in params):
            return []
        from .instances import _angle_args

        out: list[tuple[str, ir.Location]] = []
        for r in self.code.refs(t.spelling):
            node = r.cursor
            if node.kind != CK.TEMPLATE_REF or node.referenced is None or node.referenced.hash != t.hash:
                continue
            f = node.location.file
            if f is None:
                continue
            path = os.path.abspath(f.name)
            start = node.extent.start.offset
            try:
                size = len(self.parsed.text.encode()) if path == self.parsed.abs_path else os.path.getsize(f.name)
                ext = self.tu.get_extent(f.name, (start, min(start + 600, size)))
                toks = [x.spelling for x in self.tu.get_tokens(extent=ext) if x.kind.name != "COMMENT"]
            except Exception:  # noqa: BLE001 - an unreadable extent spells no instance
                continue
            got = _angle_args(toks, 1) if len(toks) > 1 and toks[0] == t.spelling else None
            if got is None or not got[0] or len(got[0]) > len(params):
                continue
            named = {x for a in got[0] for x in a}
            if any(p == path and s0 <= start < e0 and names & named for p, s0, e0, names in scopes):
                continue
            spelling = f"{t.spelling}<{', '.join(' '.join(a) for a in got[0])}>"
            if all(spelling != sp for sp, _ in out):
                out.append((spelling, self.code.location(node)))
        return out

    def _user_struct(self, decl):
        """The user's struct a type argument declares (by its declaration; by name for a
        specialization of a user class template), or None."""
        if decl is None or not decl.spelling:
            return None
        st = self.structs.get(decl.spelling)
        return st if st is not None and self._in_user_code(decl) else None

    def template_kind(self, struct) -> str:
        """Which prototype template the user's struct is launched with: the launch's, else lcsf
        under `using namespace prototype::lcsf`, else lcf."""
        kind = self.template_kinds.get(struct.hash)
        if kind is not None:
            return kind
        return "lcsf" if "lcsf" in self.code.using_namespaces else "lcf"

    def _collect_decl(self, c, env: Env, top: bool = False, ns: tuple = ()):
        kind = c.kind
        if kind in (CK.STRUCT_DECL, CK.CLASS_DECL) and c.spelling and is_explicit_specialization(c):
            if self._in_user_code(c):
                self.explicit_specs.setdefault(c.spelling, []).append(c)
                if c.spelling in self.structs or env.lookup(c.spelling) is not None:
                    return  # the primary template keeps the name
        if (
            ns
            and c.spelling
            and kind
            in (
                CK.STRUCT_DECL,
                CK.CLASS_DECL,
                CK.CLASS_TEMPLATE,
                CK.TYPE_ALIAS_DECL,
                CK.TYPEDEF_DECL,
                CK.TYPE_ALIAS_TEMPLATE_DECL,
                CK.VAR_DECL,
            )
            and self._in_user_code(c)
        ):
            # `ns::config` names this one even when another namespace declares a `config` too
            # (the unqualified name is the last one declared)
            val = (
                ("struct_decl", c)
                if kind in (CK.STRUCT_DECL, CK.CLASS_DECL, CK.CLASS_TEMPLATE)
                else (("var_decl", c) if kind == CK.VAR_DECL else ("alias_decl", c))
            )
            for i in range(len(ns)):
                self.globals_env.define("::".join(ns[i:] + (c.spelling,)), val)
        if kind == CK.MACRO_DEFINITION:
            if c.location.file is not None and self.parsed.is_user_file(c.location.file.name):
                # (a definition's line continuations are no tokens of it)
                toks = [t for t in tokens_of(c) if t != "\\"]
                # object-like macros only: NAME value...
                if len(toks) >= 2 and not (len(toks) > 2 and toks[1] == "(" and _adjacent(c)):
                    self.macros[toks[0]] = toks[1:]
                elif len(toks) > 2 and ")" in toks:
                    close = toks.index(")")
                    params = [t for t in toks[2:close] if t != ","]
                    self.fn_macros[toks[0]] = (params, toks[close + 1 :])
            return
        if not self._in_user_code(c):
            # a namespace opened in a header that is not the user's (TK's `kittens`) holds none of
            # the user's code: a user who reopens it does so in a namespace cursor of their own file
            return
        if kind == CK.NAMESPACE:
            # each namespace has its scope (two namespaces may each have a `globals` and a `kernel`;
            # a name resolves in the kernel's own namespace first, then outwards)
            if c.spelling:
                self.user_namespaces.add(c.spelling)
                path = _namespaces_of(c) + [c.spelling]
                nenv = self.ns_envs.get(tuple(path))
                if nenv is None:
                    nenv = self.ns_envs[tuple(path)] = env.child()
            else:
                nenv = env  # an anonymous namespace: its names are its parent's
            for ch in c.get_children():
                self._collect_decl(ch, nenv, ns=ns + ((c.spelling,) if c.spelling else ()))
            return
        if kind in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE):
            kids = list(c.get_children())
            if any(ch.kind == CK.COMPOUND_STMT for ch in kids):
                self.functions.setdefault(c.spelling, []).append(c)
                for i in range(len(ns)):
                    # `ns::f` names the f of that namespace (Megakernels' consumer::main_loop,
                    # loader::main_loop, ... share one spelling)
                    self.functions.setdefault("::".join(ns[i:] + (c.spelling,)), []).append(c)
                if any(ch.kind == CK.CUDAGLOBAL_ATTR for ch in kids):
                    if kind == CK.FUNCTION_TEMPLATE:
                        self.kernel_templates.append(c)  # analysed per instantiation
                    elif _same_file(c.location.file.name, self.abs_path):
                        self.kernels.append(c)
                    else:
                        self.header_kernels.append(c)  # analysed where the file uses it
        elif kind == CK.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION:
            if c.spelling:
                self.partial_specs.setdefault(c.spelling, []).append(c)
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
            enum_val = 0
            for ch in c.get_children():
                if ch.kind == CK.ENUM_CONSTANT_DECL:
                    try:
                        enum_val = ch.enum_value
                    except Exception:  # noqa: BLE001 - libclang raises on dependent values
                        pass
                    env.define(ch.spelling, E.Const(enum_val))
                    enum_val += 1

    def user_method_names(self) -> frozenset[str]:
        """The names of the member functions with a body of the user's classes and structs."""
        if self._method_names is None:
            names = set()
            for c in [*self.structs.values(), *(x for xs in self.explicit_specs.values() for x in xs)]:
                for d in c.walk_preorder():
                    if d.kind in (CK.CXX_METHOD, CK.FUNCTION_TEMPLATE) and d.semantic_parent is not None:
                        if d.semantic_parent.kind in (CK.STRUCT_DECL, CK.CLASS_DECL, CK.CLASS_TEMPLATE) and any(
                            ch.kind == CK.COMPOUND_STMT for ch in d.get_children()
                        ):
                            names.add(d.spelling)
            self._method_names = frozenset(names)
        return self._method_names

    def env_for(self, cursor) -> Env:
        """The scope a declaration's names resolve in: its namespace's, else the file's."""
        path = tuple(_namespaces_of(cursor))
        while path:
            if path in self.ns_envs:
                return self.ns_envs[path]
            path = path[:-1]
        return self.globals_env

    def _is_prototype_template(self, c) -> bool:
        names = {ch.spelling: ch for ch in c.get_children() if ch.kind in (CK.STRUCT_DECL, CK.CLASS_DECL)}
        prod, cons = names.get("producer"), names.get("consumer")
        if prod is None or cons is None:
            return False
        pm = {ch.spelling for ch in prod.get_children()}
        cm = {ch.spelling for ch in cons.get_children()}
        return "load" in pm and "compute" in cm

    # -- whole-file facts, computed once per file (not once per kernel) ----
    def source(self) -> str:
        """The file's text, read once per file (whole-file searches run per kernel)."""
        if getattr(self, "_source", None) is None:
            self._source = self.parsed.text or ""
        return self._source

    def phase_bitfields(self) -> frozenset[str]:
        """The file's TK phase bitfields (`phasebit_names` of its declarations) and those of the
        template protocols: a constant assigned to one sets its bits."""
        if getattr(self, "_phase_bitfields", None) is None:
            from ..knowledge import protocols

            # a system header (tkcheck's model, the CUDA and TK headers) is never the main file:
            # that test is cheap, asking each declaration for its file is not
            mine = []
            # walking every node of the file's declarations is costly where a macro expands to
            # millions of nodes; a call spelled by no user text (the file, its headers: where a
            # user macro could spell it) cannot be among them
            texts = [self.source(), *self.parsed.user_texts.values()]
            spelled = any(name in t for name in _PHASEBIT_CALLS for t in texts)
            for c in self._top_level if spelled else ():
                loc = c.location
                if not loc.is_in_system_header and loc.file is not None and _same_file(loc.file.name, self.abs_path):
                    mine.append(c)
            self._phase_bitfields = phasebit_names(mine) | protocols.PHASE_BITFIELDS
        return self._phase_bitfields

    def lines(self) -> list[str]:
        if getattr(self, "_lines", None) is None:
            self._lines = self.source().splitlines()
        return self._lines

    def launch_configs(self) -> dict[str, list[str]]:
        """kernel name -> the `<<<...>>>` configurations it is launched with in this file."""
        if getattr(self, "_launch_configs", None) is None:
            import re

            table: dict[str, list[str]] = {}
            text = self.parsed.text
            if "<<<" in text:
                for mm in re.finditer(r"([A-Za-z_]\w*)\s*(?:<[^;<>]*(?:<[^;<>]*>[^;<>]*)*>)?\s*<<<([^;]*?)>>>", text):
                    table.setdefault(mm.group(1), []).append(mm.group(2))
            self._launch_configs = table
        return self._launch_configs

    # -- public ------------------------------------------------------------
    def build(self) -> list[ir.KernelModel]:
        """Models of the kernels clang's errors do not stop (see `blocked` for the others)."""
        from .diagnostics import place_errors
        from .instances import InstanceFinder
        from .parse import protocol_function

        self.errors = errors = place_errors(self.parsed)
        models = []
        for k in self.kernels:
            if self._blocked(k, errors):
                continue
            m = self._guarded(k, lambda: KernelWalker(self, k).build_global())
            if m is None:
                continue
            models.append(m)
            self.model_cursors[id(m)] = k
        found = InstanceFinder(
            self.parsed, self.code, self.kernel_templates, self.header_kernels, self.functions
        ).find()
        seen_cursors: dict[str, set] = {}
        built: set = set()
        for inst in found.instances:
            seen_cursors.setdefault(inst.cursor.spelling, set()).add(inst.cursor.hash)
        for inst in sorted(
            found.instances, key=lambda i: (i.site.filename != self.filename, i.site.row, i.site.column)
        ):
            if self._blocked(inst.cursor, errors):
                continue
            w = KernelWalker(self, inst.cursor)
            m = self._guarded(inst.cursor, lambda: w.build_global(inst))
            if m is None:
                continue
            if w.op_pack:
                # an MK interpreter: one model per op of its pack (knowledge/mk.py)
                for op in w.op_pack:
                    wo = KernelWalker(self, inst.cursor, mk_op=op)
                    mo = self._guarded(inst.cursor, lambda: wo.build_global(inst))
                    if mo is None:
                        continue
                    mo.name = f"{m.name} [op {op.name}]"
                    mo.notes.append(
                        f"'{m.name}' is an MK interpreter: op '{op.name}' analysed inside it, as if "
                        "every instruction ran it"
                    )
                    if (inst.cursor.hash, mo.name) not in built:
                        built.add((inst.cursor.hash, mo.name))
                        models.append(mo)
                        self.model_cursors[id(mo)] = inst.cursor
                        # the census of this model: the interpreter and this op, not the other ops
                        mine = self._decl_family(op.cursor)
                        self.model_census_exclude[id(mo)] = {
                            h for o in w.op_pack if o is not op for h in self._decl_family(o.cursor)
                        } - mine
                        self.model_census_roots[id(mo)] = [op.cursor]
                continue
            if len(seen_cursors[inst.cursor.spelling]) > 1:
                # two functions of one name (in two namespaces): the qualified name tells them apart
                ns = "::".join(_namespaces_of(inst.cursor))
                if ns:
                    m.name = f"{ns}::{m.name}"
            if (inst.cursor.hash, m.name) in built:
                continue  # the same instantiation named twice (`k<3>` and `k<1 + 2>`)
            built.add((inst.cursor.hash, m.name))
            models.append(m)
            self.model_cursors[id(m)] = inst.cursor
        analysed_cursors = {
            id_
            for id_ in (inst.cursor.hash for inst in found.instances)
            if any(self.model_cursors.get(id(m)) is not None and self.model_cursors[id(m)].hash == id_ for m in models)
        }
        for h, (cur, site, why) in self._unbound.items():
            if h not in analysed_cursors:
                self.not_analysed.append((cur.spelling, site, why))
                self._not_analysed_cursors[cur.spelling] = cur
        for cur, why in found.uninstantiated:
            self.not_analysed.append((cur.spelling, loc_of(cur, self.filename), why))
            self._not_analysed_cursors[cur.spelling] = cur
        for t in self.templates:
            if self._blocked(t, errors):
                continue
            spelled = self.template_instances.get(t.hash) if protocol_function(self.template_kind(t)) else None
            if spelled:
                # one kernel per spelled instantiation (`S<192, 192, 64>`); one whose arguments do
                # not resolve is not analysed, with why; when none resolves, the struct is analysed
                # with its parameters unbound, as a struct nobody instantiates
                inst_models: list[ir.KernelModel] = []
                not_resolved: list[str] = []
                for sp, site in spelled:
                    m = self._guarded(t, lambda sp=sp: KernelWalker(self, t).build_prototype(inst_spelling=sp))
                    if m is not None:
                        m.instance_site, m.instance_how = site, "reference"
                        inst_models.append(m)
                    elif sp not in self._not_analysed_cursors:
                        not_resolved.append(sp)
                for m in inst_models:
                    models.append(m)
                    self.model_cursors[id(m)] = t
                if inst_models or t.spelling in self._not_analysed_cursors:
                    for sp in not_resolved:
                        self.not_analysed.append(
                            (sp, loc_of(t, self.filename), "template arguments of this instantiation not understood")
                        )
                        self._not_analysed_cursors[sp] = t
                    continue
            m = self._guarded(t, lambda: KernelWalker(self, t).build_prototype())
            if m is not None:
                models.append(m)
                self.model_cursors[id(m)] = t
            elif t.spelling in self._not_analysed_cursors:
                pass  # too deep to walk: told by _guarded
            else:
                kind = self.template_kind(t)
                self.not_analysed.append((t.spelling, loc_of(t, self.filename), f"template {kind} not modelled"))
                self._not_analysed_cursors[t.spelling] = t
        for spelling, t in self.interpreter_ops:
            if self._blocked(t, errors):
                continue
            m = self._guarded(t, lambda: KernelWalker(self, t).build_prototype(op_spelling=spelling))
            if m is not None:
                models.append(m)
                self.model_cursors[id(m)] = t
                # the census of this op's model: its own code, not the other ops of the pack
                mine = self._decl_family(t)
                self.model_census_exclude[id(m)] = {
                    h for _, o in self.interpreter_ops if o is not t for h in self._decl_family(o)
                } - mine
            elif spelling not in self._not_analysed_cursors:
                self.not_analysed.append(
                    (spelling, loc_of(t, self.filename), "interpreter op not understood (its layout or callbacks)")
                )
                self._not_analysed_cursors[spelling] = t
        self._attach_grid(models)
        return models

    def _attach_grid(self, models: list[ir.KernelModel]) -> None:
        """The file's launch sequence (launch_chain.py), shared by its kernels' models."""
        from .launch_chain import LaunchChain

        try:
            grid = LaunchChain(self).read()
        except Exception:  # noqa: BLE001 - host code this does not read: the grid stays unknown (coverage)
            grid = ir.GridModel(notes=["host launches not read"])
            grid.unfollowed.update(m.name.split("<")[0] for m in models)
        for m in models:
            base = m.name.split(" [op ")[0].split("<")[0].split("::")[-1]
            grid.models.setdefault(base, []).append(m)
            m.grid = grid

    def _decl_family(self, cursor) -> set:
        """A struct's cursor hash and its base classes', transitively (by name, as declared)."""
        out, todo = set(), [cursor]
        while todo:
            c = todo.pop()
            if c is None or c.hash in out:
                continue
            out.add(c.hash)
            for ch in c.get_children():
                if ch.kind == CK.CXX_BASE_SPECIFIER:
                    toks = [t for t in tokens_of(ch) if t not in ("public", "private", "protected", "virtual")]
                    name = next((t for t in toks if t.isidentifier() and t not in self.user_namespaces), None)
                    if name in self.structs:
                        todo.append(self.structs[name])
        return out

    def reachable_code(self, root, exclude=frozenset(), more_roots=(), dead=()) -> list:
        """`root` (a kernel, a template struct) and the user's device code its code names,
        transitively (free functions and struct members by name, so an interpreter's
        `dispatcher<op>::run` reaches every op's `run`): the code a kernel may run, as the census
        of `tkcheck.coverage` reads it. `dead`: the model's code never run (`model.dead_code`,
        an `if constexpr` branch not taken): what only it names is not reached."""
        if self._device_code_by_name is None:
            from .diagnostics import function_spans

            index: dict[str, list] = {}
            for f in function_spans(self.parsed):
                if f.space in ("device", "global") and f.name:
                    index.setdefault(f.name, []).append(f.cursor)
            self._device_code_by_name = index
        index = self._device_code_by_name
        out, seen, todo = [], set(), [root] + list(more_roots)
        names: set = set()
        waiting: list = []  # members of a struct whose name no reached code names yet
        while todo or waiting:
            if not todo:
                ready = [f for f in waiting if all(s.spelling in names for s in _enclosing_structs(f))]
                if not ready:
                    break
                waiting = [f for f in waiting if f not in ready]
                todo.extend(ready)
                continue
            cur = todo.pop()
            if cur.hash in seen or _inside_any(cur, exclude, self):
                continue
            seen.add(cur.hash)
            out.append(cur)
            seq = _live_tokens(cur, dead)
            names |= set(seq)
            # a function's own name where it is declared names no other code (its namesakes in
            # other namespaces are reached only where some code calls them)
            if cur.kind in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE, CK.CXX_METHOD) and cur.spelling in seq:
                seq = list(seq)
                del seq[seq.index(cur.spelling)]
            toks = set(seq)
            quals = self._namespace_qualifiers(seq)
            for t in toks:
                for f in _qualified_as(quals.get(t), _visible_from(root, index.get(t, []))):
                    if f.hash in seen:
                        continue
                    # a member function named by a common name (`init_semaphores`, `run`) belongs to
                    # this code only when its struct is named by it too (directly or by an alias's
                    # body), and so is every struct around that one: `producer::load` of another
                    # prototype struct of the file (both have a `producer`) is not this code
                    here = _extent_key(cur)
                    if any(
                        sp.spelling not in names and not (_extent_key(sp) == here or _contains(_extent_key(sp), here))
                        for sp in _enclosing_structs(f)
                    ):
                        waiting.append(f)
                        continue
                    todo.append(f)
        # a function nested in one already taken (a struct's method inside the struct) is counted once
        spans = [(c, _extent_key(c)) for c in out]
        return [c for c, k in spans if not any(o is not c and _contains(ko, k) for o, ko in spans)]

    def _namespace_qualifiers(self, toks: list[str]) -> dict[str, set[str]]:
        """Names that code spells only qualified by a namespace of the user's (`gemm::kernel<C>(g)`),
        each with those namespaces; a name also spelled bare, or qualified by anything else (a
        struct, TK's namespace), is not listed: every declaration of it stays a candidate."""
        quals: dict[str, set[str]] = {}
        bare: set[str] = set()
        for i, t in enumerate(toks):
            q = toks[i - 2] if i >= 2 and toks[i - 1] == "::" else None
            if q is not None and q in self.user_namespaces:
                quals.setdefault(t, set()).add(q)
            else:
                bare.add(t)
        return {t: qs for t, qs in quals.items() if t not in bare}

    def coverage(self, models) -> list:
        """One `coverage.KernelCoverage` per kernel found: the analysed ones (census against the
        model) and the ones that were not (why)."""
        from .. import coverage as C

        out = []
        for m in models:
            cur = self.model_cursors.get(id(m))
            out.append(
                C.for_model(
                    self,
                    m,
                    cur,
                    self.model_census_exclude.get(id(m), frozenset()),
                    self.model_census_roots.get(id(m), ()),
                )
                if cur is not None
                else C.KernelCoverage(self.filename, m.name, True, None, 0, 0)
            )
        for name, loc, errs in self.blocked:
            d = errs[0]
            where = (
                f"line {d.location.row}"
                if d.location.filename == self.filename
                else f"{d.location.filename}:{d.location.row}"
            )
            out.append(
                C.not_analysed(
                    self, name, self._blocked_cursors.get(name), f"clang error: {d.message} ({where})", d.location
                )
            )
        for name, loc, why in self.not_analysed:
            out.append(C.not_analysed(self, name, self._not_analysed_cursors.get(name), why, loc))
        if not out:
            silent = self._unlaunched_device_code()
            if silent is not None:
                out.append(silent)
        return out

    def _unlaunched_device_code(self):
        """No kernel found, yet the translation unit's user code has device functions with
        synchronisation operations: one "not analysed" entry for the file, naming the reason (no
        file with such code passes silently). None when there is no such code."""
        from .. import coverage as C
        from .diagnostics import function_spans

        sites: dict = {}
        first = None
        for f in function_spans(self.parsed):
            if f.space not in ("device", "global") or not f.name:
                continue
            for s in C.census(self, f.cursor):
                sites.setdefault((s.file, s.row, s.col), s)
                if first is None or _site_order(s, self.filename) < _site_order(first, self.filename):
                    first = s
        if not sites or first is None:
            return None
        why = (
            "no kernel launched: device code with "
            f"{len(sites)} synchronisation operation{'s' if len(sites) != 1 else ''}, but no __global__ function, "
            "instantiated template kernel, launcher or prototype template launch in the translation unit"
        )
        e = C.KernelCoverage(self.filename, "(device code)", False, why, len(sites), 0)
        e.unknowns.append(C.Unknown(f"{first.shown}:{first.row}:{first.col}", why))
        return e

    def _blocked(self, cursor, errors) -> bool:
        key = cursor.hash
        if key not in self._blocked_cache:
            stops = errors.blocking(cursor, tokens_of) if errors.placed else []
            if stops:
                self.blocked.append((cursor.spelling, loc_of(cursor, self.filename), stops))
                self._blocked_cursors[cursor.spelling] = cursor
            self._blocked_cache[key] = bool(stops)
        return self._blocked_cache[key]

    def _guarded(self, cursor, build):
        """A kernel nested deeper than the walk can follow is "not analysed", never a traceback.

        libclang's child visitor is a ctypes callback: an exception inside it is not raised but
        reported to sys.unraisablehook and the children are silently cut short, so a walk during
        which one happened built an incomplete model and is dropped too."""
        import ctypes
        import sys

        swallowed = []
        old_hook = sys.unraisablehook
        sys.unraisablehook = lambda u: swallowed.append(u.exc_type)
        try:
            model = build()
        except Exception as e:  # noqa: BLE001 - re-raised unless the depth explains it
            deep = isinstance(e, RecursionError) or (isinstance(e, ctypes.ArgumentError) and "RecursionError" in str(e))
            if not deep and not swallowed:
                raise  # (an error after a cut-short child list is a consequence of the cut)
            model = None
            if deep:
                swallowed.append(RecursionError)
        finally:
            sys.unraisablehook = old_hook
        if swallowed:
            why = (
                "its code nests deeper than tkcheck models (loops, branches or expressions a few hundred levels deep)"
                if RecursionError in swallowed
                else f"walking its syntax tree failed ({swallowed[0].__name__})"
            )
            self.not_analysed.append((cursor.spelling, loc_of(cursor, self.filename), why))
            self._not_analysed_cursors[cursor.spelling] = cursor
            return None
        return model


class KernelWalker:
    """One kernel's walk: the walk's state and its composed parts, one concern each (the walk_*
    modules). A part holds the walker typed as a protocol of `walker_core` that lists what it
    uses; the core operations every part may call are the parts' own methods, bound here."""

    def __init__(self, mb: ModelBuilder, cursor, mk_op=None):
        self.mb = mb
        self.mk_op = mk_op  # the op of an MK interpreter this model runs (knowledge/mk.py)
        self.op_pack: list = []  # the op structs of the kernel's template pack, when it is one
        self.mk_role: str | None = None  # the MK worker role whose loop is being walked
        self.cursor = cursor
        self.filename = mb.filename
        self.model: ir.KernelModel | None = None
        self.tk_lane_guarded = mb.parsed.tk_semantics == "lane-guarded"
        self.struct_cache: dict = {}  # struct instances (by name), tile types and global values (by cursor)
        self.phasebit_reads: dict[E.Expr, ir.PhasebitFacts] = {}  # parity expr -> the get_phasebit it is
        self.unbound_args: list[str] = []  # template arguments of the instantiation not understood
        # namespace qualifiers that name no object of their own: TK's and the user's
        self.ns_names = _NAMESPACES | mb.user_namespaces
        # composed parts: each reaches the walker only through a protocol of `walker_core`
        self.types = TypeResolution(self)
        self.exprs = ExprEvaluation(self)
        self.stmts = StatementWalk(self)
        self.asm = AsmLowering(self)
        self.tmem = TmemLowering(self)
        self.inline = InlineExpansion(self)
        self.calls = CallLowering(self)
        self.libcu = LibcuLowering(self)
        self.atomics = AtomicLowering(self)
        self.ptxns = PtxnsLowering(self)
        # the core operations (WalkerCore), bound once: no extra call on the walk's hot paths
        self.emit = self.exprs.emit
        self.ev = self.exprs.ev
        self.targ_int = self.exprs.targ_int
        self.resolve_type = self.types.resolve_type
        self.walk = self.stmts.walk
        self.note_unmodelled = self.stmts.note_unmodelled
        # kernel parameter (a `CUtensorMap`) -> the bytes one tensor copy through it delivers,
        # from the host code that encodes it (tensor_maps.py)
        self.tensor_boxes: dict[str, int] = {}
        # the kernel's parameters of type `CUtensorMap` (by value: `__grid_constant__` maps)
        self.tensor_map_params: set[str] = set()

    # ================================================================ entry
    def _new_model(self, name, kind) -> ir.KernelModel:
        m = ir.KernelModel(name=name, location=loc_of(self.cursor, self.filename), kind=kind, block_threads=None)
        m.tk_semantics = self.mb.parsed.tk_semantics
        return m

    def build_global(self, inst=None) -> ir.KernelModel:
        """The model of a `__global__` kernel, or of one instantiation of a template kernel, or of
        a `__device__` function a TK launcher runs as a kernel (`inst`, from `instances.py`)."""
        c = self.cursor
        name = inst.label(c.spelling) if inst is not None else c.spelling
        self.model = m = self._new_model(name, "global")
        env = self.mb.env_for(c).child()
        self.types.bind_template_params(c, env, m, inst)
        if self.unbound_args:
            # told only when no instantiation of this kernel could be analysed (see build())
            self.mb._unbound.setdefault(
                c.hash, (c, inst.site, "template arguments not understood: " + ", ".join(self.unbound_args))
            )
            return None
        if inst is not None and inst.launcher is not None:
            self.types.launcher_shape(inst, env, m)
        else:
            bounds = self.types.launch_bounds(c, env)
            m.launch_bounds = self.types.has_launch_bounds(c)
            shapes = block_shapes(self.mb.parsed)
            shape = shapes.get(c.spelling)
            m.grid_dims = grid_shapes(self.mb.parsed).get(c.spelling)
            if bounds is not None:
                m.block_threads, m.min_blocks = bounds
                m.block_threads_source = "__launch_bounds__"
                # the launch's own shape where it fills the bound exactly: threadIdx.y / .z are
                # then positions in it (a smaller launch keeps the bound's count, as before)
                if shape is not None and bounds[0].eval({}) == shape[0] * shape[1] * shape[2]:
                    m.block_dims = shape
            elif shape is not None:
                m.block_threads = E.Const(shape[0] * shape[1] * shape[2])
                m.block_dims = shape
                m.block_threads_source = "launch configuration in the file"
            elif c.spelling not in shapes:
                n = self.types.launch_config_threads(c)
                if n is not None:
                    m.block_threads = E.Const(n)
                    m.block_threads_source = "launch configuration in the file"
        if m.cluster is None:
            m.cluster = self.types.cluster_dims(c, env)
        if m.cluster is None:
            m.cluster = self.types.launch_config_cluster(c, env)
            if m.cluster is not None:
                m.notes.append(
                    f"kernel '{name}' runs in clusters of {m.cluster} CTAs (the LaunchConfig it is "
                    "launched with in this file)"
                )
        if m.block_threads is None:
            m.notes.append(
                f"block size of kernel '{name}' unknown (no __launch_bounds__): thread counts are not checked"
            )
        # parameters: uniform values, global layouts, struct records
        self.tensor_boxes = self.mb.tensor_maps.box_bytes(c.spelling)
        self.tensor_map_params = {
            p.spelling
            for p in c.get_children()
            if p.kind == CK.PARM_DECL
            and re.search(r"\bCUtensorMap\b", p.type.spelling)
            and not re.search(r"[*&]", p.type.spelling)
        }
        for p in c.get_children():
            if p.kind == CK.PARM_DECL:
                if p.type.get_canonical().kind.name == "POINTER":
                    self.exprs.pointer_vars.add(p.spelling)
                env.define(p.spelling, self.types.param_value(p, env))
        body = next((ch for ch in c.get_children() if ch.kind == CK.COMPOUND_STMT), None)
        ctx = Ctx(env=env, guard=ir.Guard())
        if body is not None:
            self.walk(body, ctx)
        if m.reads_yz_without_shape and m.block_dims is None and m.block_threads is not None:
            m.block_threads = None
            m.notes.append(
                f"block shape of kernel '{name}' unknown: it reads `{m.reads_yz_without_shape}`, and "
                f"{m.block_threads_source or 'its thread count'} gives no shape (no launch with a "
                "constant block in the translation unit): thread positions are not checked"
            )
            m.block_threads_source = ""
        _keep_accumulator_accesses(m)
        return m

    def build_prototype(
        self, op_spelling: str | None = None, inst_spelling: str | None = None
    ) -> ir.KernelModel | None:
        """A kernel built from TK's lcf/lcsf/lcsc template, or one op (`op_spelling`, e.g.
        `partial_template<16>`) of a prototype::interpreter launch: the user's callbacks run
        inside tkcheck's model of the template's protocol."""
        from .parse import protocol_function

        tmpl = self.cursor
        env = self.mb.env_for(tmpl).child()
        if op_spelling is not None:
            st = self.types.resolve_type_spelling(op_spelling, env)
            if not isinstance(st, StructType):
                return None
            kind = "interpreter" if _has_store(st) else "interpreter_load_only"
        else:
            kind = self.mb.template_kind(tmpl)
            st = None
            if inst_spelling is not None:
                # `S<192, 192, 64>`: the struct with these arguments bound
                st = self.types.resolve_type_spelling(inst_spelling, env)
                if not isinstance(st, StructType):
                    return None
        proto_fn = protocol_function(kind)
        if proto_fn is None:
            return None
        self.model = m = self._new_model(
            op_spelling or inst_spelling or tmpl.spelling, "interpreter" if op_spelling else kind
        )
        if st is None:
            st = self.types.struct_type(tmpl, {})
        env.define("lcft", st)
        if kind == "lcsc":
            # the launch names the config and globals types: lcsc::launch_kernel<config, globals, lcsct>
            types = self.mb.lcsc_types.get(tmpl.hash)
            if types is None:
                return None
            env.define("lcsc_config", self.types.struct_type(types[0], {}))
            env.define("lcsc_globals", self.types.struct_type(types[1], {}))
            m.launch_bounds = True  # lcsc::main_kernel carries __launch_bounds__(NUM_THREADS, ...)
        if op_spelling is not None:
            m.notes.append(
                f"'{op_spelling}' analysed inside tkcheck's model of the TK prototype::interpreter "
                "protocol, as if every instruction ran this op (the template's instruction fetch "
                "is not modelled)"
            )
        else:
            m.notes.append(f"'{tmpl.spelling}' analysed inside tkcheck's model of the TK {kind} template protocol")
        for prm in proto_fn.get_children():
            if prm.kind == CK.PARM_DECL:  # the kernel's `globals` argument
                env.define(prm.spelling, self.types.param_value(prm, env))
        body = next((ch for ch in proto_fn.get_children() if ch.kind == CK.COMPOUND_STMT), None)
        ctx = Ctx(env=env, guard=ir.Guard())
        self.walk(body, ctx)
        _keep_accumulator_accesses(m)
        return m


def _keep_accumulator_accesses(m: ir.KernelModel) -> None:
    """Drop the register accesses of local arrays (REG_ACCESS via "local") that no MMA takes as
    its accumulator: only an accumulator's accesses are events a check reads."""
    accs = {o.operands[0].name for o in m.ops if o.kind == ir.MMA and o.operands}
    m.ops = [
        o
        for o in m.ops
        if not (
            o.kind == ir.REG_ACCESS
            and o.access is not None
            and o.access.via == "local"
            and (o.buffer is None or o.buffer.name not in accs)
        )
    ]


def _site_order(s, main: str) -> tuple:
    return (s.shown != main, s.row, s.col)


def _has_store(st) -> bool:
    """The interpreter op has `producer::store` (the template's has_store<Op>)."""
    prod = st.members.get("producer")
    return prod is not None and any(ch.spelling == "store" for ch in prod.get_children())


def _live_tokens(cur, dead) -> list[str]:
    """The tokens of `cur` outside the regions `dead` ((file, (line, col), (line, col)), the
    model's code never run): an `if constexpr` branch not taken names no code of this kernel."""
    ext = cur.extent
    f = os.path.abspath(ext.start.file.name) if ext.start.file is not None else ""
    start, end = (ext.start.line, ext.start.column), (ext.end.line, ext.end.column)
    regions = [(a, b) for df, a, b in dead if df == f and a < end and start < b]
    if not regions:
        return tokens_of(cur)
    from .walk_env import _drop_inactive, _skipped_lines, _text_for

    src = _text_for(ext.start.file.name)
    if src is None:
        return tokens_of(cur)
    text = src.slice(ext.start.line, ext.start.column, ext.end.line, ext.end.column)
    skipped = _skipped_lines(cur.translation_unit, ext.start.file.name)
    if skipped:
        text = _drop_inactive(text, ext.start.line, skipped)
    out, line, col = [], ext.start.line, ext.start.column
    for ch in text:
        if ch != "\n" and any(a <= (line, col) < b for a, b in regions):
            out.append(" ")
        else:
            out.append(ch)
        if ch == "\n":
            line, col = line + 1, 1
        else:
            col += 1
    return lex("".join(out))


def _enclosing_structs(cursor) -> list:
    """The structs and classes a declaration is a member of, innermost first, up to the first
    namespace (`fft::producer` of `fft::producer::load`)."""
    out = []
    p = cursor.semantic_parent
    while p is not None and p.kind in (
        CK.STRUCT_DECL,
        CK.CLASS_DECL,
        CK.CLASS_TEMPLATE,
        CK.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION,
    ):
        out.append(p)
        p = p.semantic_parent
    return out


def _inside_any(cur, exclude, mb) -> bool:
    """`cur` lies inside one of the declarations whose cursor hashes are in `exclude`."""
    if not exclude:
        return False
    p = cur
    while p is not None and p.kind != CK.TRANSLATION_UNIT:
        if p.hash in exclude:
            return True
        p = p.semantic_parent
    return False
