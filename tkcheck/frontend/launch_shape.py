"""The block shape a kernel is launched with, read from clang's tree of the translation unit.

`k<<<grid, block, ...>>>(...)` is a call whose second child is clang's call of
`cudaConfigureCall(grid, block, smem, stream)`. Its `block` argument is a `dim3`: a constant
(`256`, `NUM_THREADS`, `2 * WARPS * 32`), a `dim3(x, y, z)` temporary (missing arguments are
1) or a local `dim3` variable (`dim3 threads(16, 16);`) that nothing else in its function
names, so nothing writes it between its declaration and the launch. Each dimension is clang's
own value of the constant expression (macros, `constexpr`, template arguments fixed by the
enclosing function), never a reading of the text.

A kernel launched with different shapes, or with one this reader cannot evaluate, has no
shape (None): the callers keep the block size unknown rather than pick one.
"""

from __future__ import annotations

from clang.cindex import CursorKind as CK

from .parse import ParsedFile, top_level
from .walk_statements import _constant_int

Shape = tuple[int, int, int]

_BODY_KINDS = (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE, CK.CXX_METHOD, CK.LAMBDA_EXPR, CK.CONSTRUCTOR)
_SCOPES = (CK.NAMESPACE, CK.STRUCT_DECL, CK.CLASS_DECL, CK.CLASS_TEMPLATE, CK.UNEXPOSED_DECL, CK.LINKAGE_SPEC)


def block_shapes(parsed: ParsedFile) -> dict[str, Shape | None]:
    """kernel name -> the one block shape every launch of it in the user's files gives, or None
    (launched with several shapes, or with one not evaluated). Kernels never launched with
    `<<<>>>` are absent."""
    return _shapes(parsed, 2)


def grid_shapes(parsed: ParsedFile) -> dict[str, Shape | None]:
    """kernel name -> the one grid shape (blocks per dimension) every launch of it in the user's
    files gives, read as the block shape is (round 16: which block indices a launch holds); None
    when launched with several or with one not evaluated. Kernels never launched are absent."""
    return _shapes(parsed, 1)


def _shapes(parsed: ParsedFile, slot: int) -> dict[str, Shape | None]:
    """Both tables (grid: slot 1, block: slot 2) from one walk of the user's top level, kept on
    the parse (issue 29, round 17: each table walked every top-level cursor of the translation
    unit, a header's thousands included, and the model build asks for both)."""
    attr = "_block_shapes" if slot == 2 else "_grid_shapes"
    cached = getattr(parsed, attr, None)
    if cached is not None:
        return cached
    found: dict[int, dict[str, set[Shape | None]]] = {1: {}, 2: {}}
    user: dict[str, bool] = {}  # file name -> parsed.is_user_file(name), asked once per file
    for top in top_level(parsed):
        f = top.location.file
        if f is None:
            continue
        name = f.name
        mine = user.get(name)
        if mine is None:
            mine = user[name] = parsed.is_user_file(name)
        if mine:
            _scan_scope(top, found)
    tables = {
        s: {name: (next(iter(shapes)) if len(shapes) == 1 else None) for name, shapes in by_name.items()}
        for s, by_name in found.items()
    }
    parsed._grid_shapes, parsed._block_shapes = tables[1], tables[2]  # type: ignore[attr-defined]
    return tables[slot]


def _scan_scope(c, found: dict[int, dict[str, set[Shape | None]]]) -> None:
    if c.kind in _SCOPES:
        for ch in c.get_children():
            _scan_scope(ch, found)
    elif c.kind in _BODY_KINDS:
        _scan_function(c, found)


def _scan_function(fn, found: dict[int, dict[str, set[Shape | None]]]) -> None:
    launches = []
    refs: dict[int, int] = {}  # VAR_DECL hash -> how often the function names it
    stack = [fn]
    while stack:
        c = stack.pop()
        kids = list(c.get_children())
        if c.kind == CK.DECL_REF_EXPR and c.referenced is not None and c.referenced.kind == CK.VAR_DECL:
            refs[c.referenced.hash] = refs.get(c.referenced.hash, 0) + 1
        if c.kind == CK.CALL_EXPR and len(kids) >= 2 and kids[1].kind == CK.CALL_EXPR:
            if kids[1].spelling == "cudaConfigureCall":
                launches.append((kids[0], list(kids[1].get_children())))
        stack.extend(kids)
    for callee, cfg in launches:
        name = _kernel_name(callee)
        if name is None:
            continue
        # cfg: the callee `cudaConfigureCall`, then grid (slot 1), block (slot 2), shared bytes, stream
        for slot, by_name in found.items():
            by_name.setdefault(name, set()).add(_dims(cfg[slot], refs) if len(cfg) > slot else None)


def _kernel_name(callee) -> str | None:
    stack = [callee]
    while stack:
        c = stack.pop()
        if c.kind == CK.DECL_REF_EXPR and c.referenced is not None:
            if c.referenced.kind in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE):
                return c.referenced.spelling
        stack.extend(reversed(list(c.get_children())))
    return None


def _strip(c):
    """Through clang's implicit conversions and dim3's copy: the expression written."""
    while True:
        kids = list(c.get_children())
        if c.kind == CK.UNEXPOSED_EXPR and len(kids) == 1:
            c = kids[0]
        elif c.kind == CK.CALL_EXPR and _is_dim3(c) and len(kids) == 1 and _is_dim3(kids[0]):
            c = kids[0]  # dim3's copy constructor
        elif c.kind == CK.PAREN_EXPR and len(kids) == 1:
            c = kids[0]
        else:
            return c


def _is_dim3(c) -> bool:
    return c.type.get_canonical().spelling.replace("const ", "").replace("struct ", "").strip() == "dim3"


def _dims(arg, refs: dict[int, int]) -> Shape | None:
    c = _strip(arg)
    if c.kind == CK.DECL_REF_EXPR and _is_dim3(c):
        var = c.referenced
        if var is None or var.kind != CK.VAR_DECL or refs.get(var.hash, 0) != 1:
            return None  # a parameter, a global, or a variable the function names again (may write)
        inits = [k for k in var.get_children() if k.kind not in (CK.TYPE_REF, CK.NAMESPACE_REF)]
        return _dims(inits[-1], refs) if inits else (1, 1, 1)
    if c.kind in (CK.CALL_EXPR, CK.INIT_LIST_EXPR) and _is_dim3(c):
        args = [a for a in c.get_children() if a.kind not in (CK.TYPE_REF, CK.NAMESPACE_REF)]
        if len(args) > 3:
            return None
        vals = []
        for a in args:
            if a.kind == CK.UNEXPOSED_EXPR and not list(a.get_children()):
                vals.append(1)  # a default argument
                continue
            v = _constant_int(_strip(a))
            if v is None or v <= 0:
                return None
            vals.append(v)
        vals += [1] * (3 - len(vals))
        return (vals[0], vals[1], vals[2])
    v = _constant_int(c)
    return (v, 1, 1) if v is not None and v > 0 else None
