"""What nvcc accepts and clang does not: the leniency tkcheck applies before and after libclang.

nvcc's front end (EDG) accepts some code that clang rejects. A file nvcc compiles must not end
in a parse-error finding, so the parse follows nvcc in three ways, each narrow and each stated to the user:

* **rewrites** of the user's text that keep every token's line and column (so locations and
  the walker's own lexing of the text stay exact): inline-asm operands with no comma between
  them (`"r"(a + off)  "h"(b)`, which nvcc reads as two operands) get the comma in place of
  the blank before the second constraint;
* **recovered errors**: clang errors after which clang's AST is the one nvcc's reading gives
  (a dependent type without `typename`, which clang itself recovers by assuming the
  `typename`; a `%name` in an asm string, which clang keeps in the AST and nvcc passes to
  ptxas unchanged) are not errors of the user's code; each is told once as a note;
* **host-only libraries** the machine lacks (torch, ATen, c10, pybind11, cuBLAS, cuDNN, NCCL,
  MPI, Python) get stand-ins: empty headers, plus the few file-scope macros such code uses
  (`PYBIND11_MODULE`, `TORCH_LIBRARY`, ...) defined so that the block after them parses as a
  host function. Errors inside host functions never stop a kernel's analysis (see
  `diagnostics.py`), so the stand-ins need not declare the libraries' APIs.
"""

from __future__ import annotations

import re

# ------------------------------------------------------------------ rewrites

# An asm operand `"constraint"(expr)` right after another operand's closing parenthesis, with only
# blanks between: nvcc accepts it, clang wants a comma.
_ASM_START = re.compile(r"\b(?:asm|__asm__|__asm)\s*(?:volatile|__volatile__)?\s*\(")
_CONSTRAINT = re.compile(r'"[=+&]*[a-zA-Z]+"\s*\(')


def rewrite(text: str) -> tuple[str, list[tuple[int, str]]]:
    """(new text, [(line, what was changed)]); the new text has the same length and the same
    line breaks, so every position in it is the position in the original."""
    if "asm" not in text:
        return text, []
    changes: list[tuple[int, str]] = []
    out = list(text)
    for m in _ASM_START.finditer(text):
        end = _matching_paren(text, m.end() - 1)
        if end is None:
            continue
        colon = _first_top_level_colon(text, m.end(), end)
        if colon is None:
            continue
        operands = list(_operands(text, colon, end))
        for (_, close), (nxt, _) in zip(operands, operands[1:]):
            between = text[close + 1 : nxt]
            # only blanks between one operand's ')' and the next constraint: the comma goes on
            # the blank right before the constraint (a named operand `[x] "r"(v)` is not this)
            if between and not between.strip() and text[nxt - 1] in " \t":
                out[nxt - 1] = ","
                changes.append((text.count("\n", 0, nxt) + 1, "asm operands without a comma between them"))
    return "".join(out), changes


_ALIAS_NO_ARGS = re.compile(r"^alias template '([A-Za-z_]\w*)' requires template arguments")


def alias_template_fixes(diagnostics, abs_path: str, text: str) -> tuple[str, list[int]] | None:
    """nvcc (EDG) accepts an alias template whose parameters all have defaults spelled without
    `<>` (`rt_bf_2x4 local_reg;`); clang does not. (new text, rows) with `<>` written after each
    such name clang reports in the file, or None. The new text differs only on those rows."""
    lines = text.split("\n")
    rows = []
    for d in diagnostics:
        m = _ALIAS_NO_ARGS.search(d.message)
        if m is None or d.location is None or d.abs_file != abs_path:
            continue
        r, c = d.location.row - 1, d.location.column - 1
        if not (0 <= r < len(lines)) or r in rows:
            continue
        line, name = lines[r], m.group(1)
        # clang points at the declared name or at the alias: the alias is the last one up to there
        c = line.rfind(name, 0, c + len(name))
        if (
            c < 0
            or (c > 0 and (line[c - 1].isalnum() or line[c - 1] == "_"))
            or line[c + len(name) :].lstrip().startswith("<")
        ):
            continue
        lines[r] = line[: c + len(name)] + "<>" + line[c + len(name) :]
        rows.append(r)
    return ("\n".join(lines), [r + 1 for r in sorted(rows)]) if rows else None


def _operands(text: str, start: int, end: int):
    """(constraint start, closing parenthesis) of each `"c"(expr)` operand in text[start:end]."""
    k = start
    while True:
        cm = _CONSTRAINT.search(text, k, end)
        if cm is None:
            return
        close = _matching_paren(text, cm.end() - 1)
        if close is None or close > end:
            return
        yield cm.start(), close
        k = close + 1


def _matching_paren(text: str, i: int) -> int | None:
    depth = 0
    in_str = False
    k = i
    n = len(text)
    while k < n:
        ch = text[k]
        if in_str:
            if ch == "\\":
                k += 2
                continue
            if ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return k
        elif ch == ";" and depth <= 1:
            return None
        k += 1
    return None


def _first_top_level_colon(text: str, start: int, end: int) -> int | None:
    depth = 0
    in_str = False
    k = start
    while k < end:
        ch = text[k]
        if in_str:
            if ch == "\\":
                k += 2
                continue
            if ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ":" and depth == 0:
            # `asm("..." :: "r"(x))`: no outputs, the inputs follow the second colon
            return k + 1 if text[k + 1 : k + 2] == ":" else k
        k += 1
    return None


# --------------------------------------------------------- recovered errors

# clang's message -> why the AST after it is nvcc's reading of the code
RECOVERED_ERRORS: tuple[tuple[re.Pattern, str], ...] = (
    (
        re.compile(r"^missing 'typename' prior to dependent type name"),
        "a dependent type without 'typename' (nvcc accepts it; clang recovers with the 'typename')",
    ),
    (
        re.compile(r"^missing 'template' keyword prior to dependent template name"),
        "a dependent template name without 'template' (nvcc accepts it; clang recovers with the 'template')",
    ),
    (
        re.compile(
            r"^template argument for template template parameter must be a class template or type alias "
            r"template"
        ),
        "a dependent member template passed as a template template argument without 'template' (nvcc accepts "
        "it; the statement is kept)",
    ),
    (
        re.compile(r"^invalid % escape in inline assembly string"),
        "a '%name' in an asm string (nvcc passes it to ptxas unchanged; the asm statement is kept)",
    ),
)


def recovered(message: str) -> str | None:
    for pat, why in RECOVERED_ERRORS:
        if pat.search(message):
            return why
    return None


# ----------------------------------------------------- host-only libraries

# Include names (prefix of the spelled path) of libraries that only host code uses.
HOST_ONLY_PREFIXES = (
    "torch/",
    "ATen/",
    "c10/",
    "caffe2/",
    "pybind11/",
    "THC/",
    "nanobind/",
    "cublas",
    "cublasLt",
    "cudnn",
    "nccl",
    "mpi",
    "Python.h",
    "cusparse",
    "cufft",
    "curand.h",
    "cusolver",
    "nvml",
    "nvToolsExt",
    "nvtx3/",
)

# A few host-only headers are named before the first parse, so that files using them parse
# once (the rest are found from clang's "file not found" and cost a second parse).
COMMON_HOST_HEADERS = (
    "torch/extension.h",
    "torch/torch.h",
    "torch/python.h",
    "torch/library.h",
    "torch/all.h",
    "torch/csrc/utils/pybind.h",
    "torch/types.h",
    "ATen/ATen.h",
    "ATen/Functions.h",
    "ATen/core/Tensor.h",
    "ATen/cuda/CUDAContext.h",
    "ATen/cuda/CUDAEvent.h",
    "ATen/Dispatch.h",
    "ATen/native/TensorIterator.h",
    "c10/cuda/CUDAGuard.h",
    "c10/cuda/CUDAStream.h",
    "c10/util/Optional.h",
    "c10/core/ScalarType.h",
    "pybind11/pybind11.h",
    "pybind11/stl.h",
    "pybind11/numpy.h",
    "pybind11/functional.h",
    "cublas_v2.h",
    "cublas.h",
    "cublasLt.h",
    "cudnn.h",
    "nccl.h",
    "mpi.h",
    "Python.h",
)

_STUB_TEXT = """// tkcheck stand-in for a host-only library header the machine does not have.
// Hardly any declarations of its own: only host code uses it, and errors in host code do not stop the analysis
// of kernels. The file-scope macros below let the code after them parse as host functions.
#pragma once
#pragma clang system_header
#ifndef TKCHECK_HOST_STUB_MACROS
#define TKCHECK_HOST_STUB_MACROS 1
// the real headers bring the C++ library with them (torch/library.h: std::max, std::tuple, ...)
#include <algorithm>
#include <tuple>
#include <utility>
namespace pybind11 { struct module_ { template <class... A> module_ &def(A &&...); }; using module = module_; }
#define PYBIND11_MODULE(name, m, ...) static void tkcheck_pybind11_module_##name(::pybind11::module_ &m)
#define TORCH_LIBRARY(ns, m) static void tkcheck_torch_library_##ns(void *m)
#define TORCH_LIBRARY_IMPL(ns, k, m) static void tkcheck_torch_library_impl_##ns##_##k(void *m)
#define TORCH_LIBRARY_FRAGMENT(ns, m) static void tkcheck_torch_library_fragment_##ns(void *m)
// the current stream, which launch statements pass (`launch_kernel<...>(G, at::cuda::getCurrentCUDAStream())`):
// without it the whole launch expression is dropped from the syntax tree
namespace c10 { namespace cuda {
struct CUDAStream { operator cudaStream_t() const; cudaStream_t stream() const; };
CUDAStream getCurrentCUDAStream(signed char device_index = -1);
} }
namespace at { namespace cuda { using c10::cuda::CUDAStream; using c10::cuda::getCurrentCUDAStream; } }
// the element types of tensors, which kernels templated on them name (`std::is_same_v<T, c10::Half>`)
namespace c10 {
struct Half { __host__ __device__ Half(); __host__ __device__ Half(float); __host__ __device__ operator float() const; };
struct BFloat16 { __host__ __device__ BFloat16(); __host__ __device__ BFloat16(float); __host__ __device__ operator float() const; };
}
namespace at { using c10::Half; using c10::BFloat16; }
#define TORCH_CHECK(...) ((void)0)
#define TORCH_INTERNAL_ASSERT(...) ((void)0)
#define AT_ASSERT(...) ((void)0)
#define C10_CUDA_CHECK(...) ((void)0)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() ((void)0)
#ifndef TORCH_EXTENSION_NAME
#define TORCH_EXTENSION_NAME tkcheck_torch_extension
#endif
#endif
"""


def is_host_only(include_name: str) -> bool:
    name = include_name.strip("<>\"")
    return any(name.startswith(p) for p in HOST_ONLY_PREFIXES)


def stub_text() -> str:
    return _STUB_TEXT


_NOT_FOUND = re.compile(r"^'([^']+)' file not found")


def missing_include(message: str) -> str | None:
    """The include name of a "'X' file not found" diagnostic."""
    m = _NOT_FOUND.match(message)
    return m.group(1) if m else None
