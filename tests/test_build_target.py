"""One parse per file: the arch and TK's build macros are settled before the first parse, from
the file's code and the headers' own conditions (tkcheck/frontend/build_target.py), never by
parsing again for another arch or other macros."""

import os
from pathlib import Path

import pytest

from tkcheck.engine import CheckOptions, check_file
from tkcheck.frontend import parse as P
from tkcheck.frontend.build_target import settle, tk_build_macros

BLACKWELL_KERNEL = """#include "kittens.cuh"
using namespace kittens;
__global__ __launch_bounds__(128, 1) void bw() {
    tensor_allocator<1, 1> tm_alloc{};
    auto acc = tm_alloc.allocate<tt<float, 128, 128>>(0);
    (void)acc;
}
"""


def _tk_tree(root: Path, condition: str, times: int, blackwell: bool = True) -> str:
    """A stand-in TK include folder whose headers test `condition` `times` times."""
    inc = root / "include"
    (inc / "types").mkdir(parents=True)
    body = "".join(f"#if {condition}\nint v{i};\n#endif\n" for i in range(times))
    if blackwell:
        body += "#ifdef KITTENS_BLACKWELL\nint bw_only;\n#endif\n"
    (inc / "types" / "gl.cuh").write_text("#pragma once\n" + body)
    (inc / "kittens.cuh").write_text('#pragma once\n#include "types/gl.cuh"\n')
    return str(inc)


def test_old_tk_headers_get_kittens_hopper_with_a_blackwell_build(tmp_path):
    old = _tk_tree(tmp_path / "old", "defined(KITTENS_HOPPER)", 5)
    target = settle("tt<float, 128, 128> t;", "sm_90a", True, (old,), ())
    assert target.arch == "sm_100a" and target.extra_defines == ("KITTENS_HOPPER",)
    assert "KITTENS_HOPPER defined next to KITTENS_BLACKWELL" in (target.note or "")
    # given by the user already: nothing added
    assert settle("tt<float, 1, 1> t;", "sm_90a", True, (old,), ("KITTENS_HOPPER=1",)).extra_defines == ()


def test_tk2_headers_build_blackwell_alone(tmp_path):
    new = _tk_tree(tmp_path / "new", "defined(KITTENS_HOPPER) || defined(KITTENS_BLACKWELL)", 5)
    macros = tk_build_macros((new,))
    assert macros.shared_tests == 5 and not macros.blackwell_needs_hopper
    assert settle("tt<float, 1, 1> t;", "sm_90a", True, (new,), ()) == settle("tcgen05", "sm_90a", True, (new,), ())
    assert settle("tt<float, 1, 1> t;", "sm_90a", True, (new,), ()).extra_defines == ()


def test_headers_without_blackwell_code_keep_hopper(tmp_path):
    hopper_only = _tk_tree(tmp_path / "h", "defined(KITTENS_HOPPER)", 3, blackwell=False)
    assert settle("tt<float, 1, 1> t;", "sm_90a", True, (hopper_only,), ()).arch == "sm_90a"


def test_a_comment_naming_blackwell_is_not_blackwell_code():
    from tkcheck.frontend.lexer import blank_comments_and_strings

    code = blank_comments_and_strings('// ported from the tcgen05 version\nconst char *s = "tt<float>";\n')
    assert settle(code, "sm_90a", True, (), ()).arch == "sm_90a"
    assert settle("tcgen05::commit();", "sm_90a", True, (), ()).arch == "sm_100a"
    assert settle("tcgen05::commit();", "sm_90a", False, (), ()).arch == "sm_90a"  # configured: kept


@pytest.fixture
def parse_count(monkeypatch):
    calls: list[tuple[str, tuple[str, ...]]] = []
    orig = P._Parse.run

    def run(self, arch, stubs):
        calls.append((arch, tuple(self.opts.defines)))
        return orig(self, arch, stubs)

    monkeypatch.setattr(P._Parse, "run", run)
    return calls


def test_a_blackwell_file_with_host_errors_is_parsed_once(tmp_path, parse_count):
    """Errors that no arch or macro mends (here host code of a missing library) once cost a
    parse for sm_100a, one more with KITTENS_HOPPER and one for sm_90a."""
    old = _tk_tree(tmp_path / "old", "defined(KITTENS_HOPPER)", 2)
    src = tmp_path / "k.cu"
    src.write_text(
        BLACKWELL_KERNEL.replace("kittens.cuh", "kittens_model_for_test.cuh") + "void host() { undeclared_thing(); }\n"
    )
    # the model's TK API, reached through the stand-in tree's kittens.cuh
    (Path(old) / "kittens_model_for_test.cuh").write_text(
        '#pragma once\n#include "kittens.cuh"\n#include "tkcheck_tk_model.cuh"\n'
    )
    opts = CheckOptions(parse=P.ParseOptions(tk_include=old, arch_auto=True))
    res = check_file(str(src), opts)
    assert parse_count == [("sm_100a", ("KITTENS_HOPPER",))]
    assert any("KITTENS_HOPPER defined next to KITTENS_BLACKWELL" in n for n in res.notes)
    assert any("sm_100a assumed" in n for n in res.notes)


def test_model_headers_blackwell_file_parsed_once(tmp_path, parse_count):
    src = tmp_path / "k.cu"
    src.write_text(BLACKWELL_KERNEL + "void host() { undeclared_thing(); }\n")
    check_file(str(src), CheckOptions(parse=P.ParseOptions(arch_auto=True)))
    assert parse_count == [("sm_100a", ())]


def test_an_edited_tk_header_is_read_again(tmp_path):
    inc = _tk_tree(tmp_path / "tk", "defined(KITTENS_HOPPER)", 3)
    assert tk_build_macros((inc,)).blackwell_needs_hopper
    gl = Path(inc) / "types" / "gl.cuh"
    gl.write_text(
        gl.read_text().replace("defined(KITTENS_HOPPER)", "defined(KITTENS_HOPPER) || defined(KITTENS_BLACKWELL)")
    )
    os.utime(gl, ns=(gl.stat().st_atime_ns, gl.stat().st_mtime_ns + 1_000_000_000))
    assert not tk_build_macros((inc,)).blackwell_needs_hopper
