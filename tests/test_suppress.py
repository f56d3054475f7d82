"""Inline suppressions: scopes, reasons, malformed directives (TK000), unused ones (TK001)."""

from __future__ import annotations

from tkcheck.findings import Finding, Location
from tkcheck.suppress import apply_suppressions, parse_suppressions

F = "k.cu"
ALL_RUN = {"TK000", "TK001", "TK301", "TK302", "TK303", "TK401", "TK501"}


def finding(code: str, row: int, name: str = "", filename: str = F) -> Finding:
    return Finding(code, f"{code} here", Location(filename, row, 5), name=name)


def kept_rows(text: str, findings, enabled=ALL_RUN, **kw):
    sup = parse_suppressions(F, text)
    kept, new = apply_suppressions(findings, {F: sup}, set(enabled), **kw)
    return [(f.code, f.location.row) for f in kept], new


SRC = """\
wait(bar, 0);  // tkcheck: ignore[TK301] // the bytes are checked at runtime
// tkcheck: ignore[TK302]

// another comment
/* and a block
   comment */
#pragma unroll
for (int i = 0; i < n; i++) {}
"""


def test_trailing_and_own_line_ignore():
    sup = parse_suppressions(F, SRC)
    assert not sup.problems
    first, second = sup.directives
    assert (first.kind, first.target, first.reason) == ("ignore", 1, "the bytes are checked at runtime")
    assert first.location.row == 1 and first.location.column == 16
    assert (second.target, second.reason) == (8, None)  # skips blanks, comments and #pragma
    kept, new = kept_rows(SRC, [finding("TK301", 1), finding("TK301", 2), finding("TK302", 8), finding("TK302", 1)])
    assert kept == [("TK301", 2), ("TK302", 1)]
    assert new == []


def test_crlf_and_replacement_characters():
    text = "x\ufffd\ufffd; // tkcheck: ignore[TK301]\r\n\r\n// tkcheck: ignore[TK302]\r\ny;\r\n"
    kept, new = kept_rows(text, [finding("TK301", 1), finding("TK302", 4)])
    assert kept == [] and new == []
    # A lone CR ends a line too, as in clang.
    kept, _ = kept_rows("a;\r// tkcheck: ignore[TK301]\rb;\r", [finding("TK301", 3)])
    assert kept == []


def test_multiple_codes_prefixes_and_names():
    text = "// tkcheck: ignore[TK3, role-deadlock]\nx;\n"
    kept, new = kept_rows(
        text, [finding("TK301", 2), finding("TK302", 2), finding("TK501", 2, name="role-deadlock"), finding("TK401", 2)]
    )
    assert kept == [("TK401", 2)] and new == []


def test_resolver_maps_names_and_flags_unknown_selectors():
    table = {"role-deadlock": {"TK501"}, "TK301": {"TK301"}}

    def resolver(selector):
        return table[selector]  # KeyError for unknown, like registry.expand

    text = "x; // tkcheck: ignore[role-deadlock, TK999]\n"
    kept, new = kept_rows(text, [finding("TK501", 1)], resolver=resolver)
    assert kept == []
    assert [(n.code, n.location.row) for n in new] == [("TK000", 1)]
    assert "unknown rule selector 'TK999'" in new[0].message


def test_disable_enable_ranges():
    text = "a;\n// tkcheck: disable[TK3, TK401] // legacy block\nb;\n// tkcheck: enable[TK3]\nc;\n"
    sup = parse_suppressions(F, text)
    (d,) = sup.directives
    assert [(e.selector, e.first, e.last) for e in d.entries] == [("TK3", 2, 4), ("TK401", 2, 1 << 30)]
    assert d.reason == "legacy block"
    kept, new = kept_rows(text, [finding("TK301", 1), finding("TK301", 3), finding("TK301", 5), finding("TK401", 5)])
    assert kept == [("TK301", 1), ("TK301", 5)]
    assert new == []


def test_file_ignore():
    text = "a;\nb;\n// tkcheck: file-ignore[TK5]\n"
    kept, new = kept_rows(text, [finding("TK501", 1), finding("TK301", 2)])
    assert kept == [("TK301", 2)] and new == []


def test_other_files_are_untouched():
    sup = parse_suppressions(F, "// tkcheck: file-ignore[TK3]\n")
    other = finding("TK301", 1, filename="other.cu")
    kept, _ = apply_suppressions([other, finding("TK301", 1)], {F: sup}, ALL_RUN)
    assert kept == [other]


def test_malformed_directives_are_tk000():
    text = (
        "a; // tkcheck: ignore\n"
        "b; // tkcheck: ignore[]\n"
        "c; // tkcheck: ignore[ALL]\n"
        "d; // tkcheck: ignroe[TK301]\n"
        "e; // tkcheck: ignore[TK3 01]\n"
        "f; // tkcheck: ignore[TK301] because reasons\n"
        "g; // tkcheck: enable[TK301]\n"
    )
    sup = parse_suppressions(F, text)
    assert sup.directives == []
    rows = [(p.code, p.location.row) for p in sup.problems]
    assert rows == [("TK000", r) for r in range(1, 8)]
    messages = [p.message for p in sup.problems]
    assert messages[0] == ("`tkcheck: ignore` needs the codes it suppresses, e.g. `// tkcheck: ignore[TK301]`")
    assert "may not use ALL" in messages[2]
    assert "unknown tkcheck directive 'ignroe'" in messages[3]
    assert "malformed rule selector 'TK3 01'" in messages[4]
    assert "put a reason after a second `//`" in messages[5]
    assert "no open `tkcheck: disable[TK301]`" in messages[6]
    assert sup.problems[0].location.column == 4
    # Problems come back through apply_suppressions, when TK000 runs.
    _, new = apply_suppressions([], {F: sup}, ALL_RUN)
    assert [n.location.row for n in new] == list(range(1, 8))
    _, new = apply_suppressions([], {F: sup}, ALL_RUN - {"TK000"})
    assert new == []


def test_strings_are_not_directives_and_block_comments_are():
    text = (
        'const char* s = "// tkcheck: ignore";\n'
        "/* // tkcheck: ignore */\n"
        "int n = 1'000; // tkcheck: ignore[TK301]\n"
        "char c = '\"'; // tkcheck: ignore[TK302]\n"
        "// tkcheck-test: select=TK301\n"
    )
    sup = parse_suppressions(F, text)
    # the block comment holds a directive now, and one without codes: TK000
    assert [(p.code, p.location.row) for p in sup.problems] == [("TK000", 2)]
    assert [(d.target, d.entries[0].selector) for d in sup.directives] == [(3, "TK301"), (4, "TK302")]


def test_block_comment_directives():
    text = (
        "x = f(); /* tkcheck: ignore[TK204] */\n"  # trailing: this line
        "/* tkcheck: ignore[TK301] // the bytes are runtime values */\n"
        "y = g();\n"
        "/*\n"
        " * tkcheck: file-ignore[TK501]\n"  # inside a multi-line block comment
        " */\n"
        "z = h(); /* a */ /* tkcheck: ignore[TK302] */\n"
    )
    sup = parse_suppressions(F, text)
    assert sup.problems == []
    got = [(d.kind, d.target, d.entries[0].selector, d.reason) for d in sup.directives]
    assert got == [
        ("ignore", 1, "TK204", None),
        ("ignore", 3, "TK301", "the bytes are runtime values"),
        ("file-ignore", None, "TK501", None),
        ("ignore", 7, "TK302", None),
    ]
    kept, new = kept_rows(
        text,
        [finding("TK204", 1), finding("TK301", 3), finding("TK501", 9), finding("TK302", 7)],
        enabled=ALL_RUN | {"TK204"},
    )
    assert kept == [] and new == []


def test_directive_after_another_comment_on_the_line():
    text = (
        "a; // a note // tkcheck: ignore[TK301]\n"
        "b; /* note */ // tkcheck: ignore[TK302] // and why\n"
        "c; // note // tkcheck: ignore[TK303] // why // more\n"
    )
    sup = parse_suppressions(F, text)
    assert sup.problems == []
    assert [(d.target, d.entries[0].selector, d.reason) for d in sup.directives] == [
        (1, "TK301", None),
        (2, "TK302", "and why"),
        (3, "TK303", "why // more"),
    ]


def test_lookalike_directives_are_tk000():
    text = (
        "a; // tkcheck ignore[TK301]\n"
        "b; // tkcheck: ignore(TK301)\n"
        "c; // suppressed, tkcheck: ignore[TK301]\n"
        "d; /* tkcheck disable[TK3] */\n"
        "e; // checked by tkcheck: see the docs\n"  # prose, not a directive
        "f; // TKCHECK: IGNORE[TK301]\n"  # a directive, in capitals
    )
    sup = parse_suppressions(F, text)
    assert [p.location.row for p in sup.problems] == [1, 2, 3, 4]
    assert "looks like a tkcheck directive" in sup.problems[0].message
    assert "unexpected text" in sup.problems[1].message
    assert [(d.target, d.entries[0].selector) for d in sup.directives] == [(6, "TK301")]


def test_unused_suppressions_are_tk001():
    text = (
        "a; // tkcheck: ignore[TK301, TK302]\n"  # TK302 unused
        "// tkcheck: disable[TK401]\n"  # unused, runs to EOF
        "b;\n"
        "// tkcheck: file-ignore[TK501]\n"  # unused
        "c; // tkcheck: ignore[TK9]\n"  # TK9xx did not run: not reportable
    )
    kept, new = kept_rows(text, [finding("TK301", 1)])
    assert kept == []
    assert [(n.code, n.location.row, n.message) for n in new] == [
        ("TK001", 1, "unused suppression: no TK302 finding on line 1"),
        ("TK001", 2, "unused suppression: no TK401 finding from line 2 to the end of the file"),
        ("TK001", 4, "unused suppression: no TK501 finding in this file"),
    ]
    assert all(n.severity == "warning" and n.help for n in new)
    # Not reported when TK001 is off, nor for rules that did not run.
    _, new = kept_rows(text, [finding("TK301", 1)], enabled=ALL_RUN - {"TK001"})
    assert new == []
    _, new = kept_rows(text, [finding("TK301", 1)], enabled={"TK001", "TK301"})
    assert new == []


def test_unused_own_line_ignore_at_end_of_file_and_tk001_suppressed():
    kept, new = kept_rows("a;\n// tkcheck: ignore[TK301]\n", [])
    assert [n.message for n in new] == ["unused suppression: no TK301 finding after it (nothing follows the comment)"]
    text = "// tkcheck: file-ignore[TK001]\na; // tkcheck: ignore[TK301]\n"
    kept, new = kept_rows(text, [])
    assert new == []


def test_apply_twice_gives_the_same_answer():
    sup = parse_suppressions(F, "a; // tkcheck: ignore[TK301]\n")
    first = apply_suppressions([finding("TK301", 1)], {F: sup}, ALL_RUN)
    second = apply_suppressions([], {F: sup}, ALL_RUN)
    assert first == ([], [])
    assert [n.code for n in second[1]] == ["TK001"]


def test_files_without_directives_are_cheap_and_empty():
    sup = parse_suppressions(F, "int x; // nothing to see\n" * 1000)
    assert sup.directives == [] and sup.problems == []
