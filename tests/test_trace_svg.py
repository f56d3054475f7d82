"""Trace pictures are readable without the text: no overlapping labels, full labels (wrapped, never
cut), bounded width; every fixture's and corpus kernel's trace is drawn and measured."""

from __future__ import annotations

import importlib.util
from itertools import combinations

from conftest import ROOT
from tkcheck.render.trace_svg import MAX_WIDTH, text_boxes, trace_svg


def _synthetic():
    from tkcheck.findings import Finding, Location, TraceStep

    roles = [f"consumer warpgroup {i} (threads {128 * i}-{128 * i + 127}) of the attention kernel" for i in range(6)]
    steps = [
        TraceStep(
            roles[i % 6],
            f"wait(full_barrier_with_a_long_name[{i}], {i % 2}) passes after the "
            f"producer's expect_tx of 16384 bytes [k={i}, stage={i % 4}]",
            barrier=f"full_barrier_with_a_long_name[{i}]",
            phase=i,
            blocked=(i == 29),
        )
        for i in range(30)
    ]
    return Finding("TK503", "circular wait " * 30, Location("k.cu", 1, 1), trace=steps, name="circular-wait")


def _check_picture(f):
    svg = trace_svg(f)
    width = float(svg.split('width="', 1)[1].split('"', 1)[0])
    assert width <= MAX_WIDTH
    boxes = text_boxes(svg)
    assert boxes
    for left, top, right, bottom, text in boxes:
        assert 0 <= left and right <= width, f"label leaves the picture: {text!r}"
    for a, b in combinations(boxes, 2):
        overlap = a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
        assert not overlap, f"labels overlap: {a[4]!r} and {b[4]!r}"
    drawn = " ".join(" ".join(b[4].split()) for b in boxes)
    joined = drawn.replace(" ", "")
    for step in f.trace:
        assert "…" not in drawn
        assert step.text.replace(" ", "") in joined, f"label cut: {step.text!r}"
    return svg


def test_every_trace_picture_of_the_fixtures_and_corpus(tmp_path, corpus_checks):
    drawn = 0
    files = sorted((ROOT / "fixtures").rglob("*.cu")) + sorted((ROOT / "corpus").rglob("*.cu"))
    for p in files:
        res = corpus_checks.swept(p)
        for f in res.findings:
            if not f.trace:
                continue
            svg = _check_picture(f)
            drawn += 1
            if importlib.util.find_spec("cairosvg") is not None:  # and it renders as a picture
                import cairosvg

                png = tmp_path / f"trace{drawn}.png"
                cairosvg.svg2png(bytestring=svg.encode(), write_to=str(png))
                assert png.stat().st_size > 1000
    assert drawn >= 5, f"only {drawn} traced findings in the fixtures and corpus"


def test_many_roles_and_long_labels():
    _check_picture(_synthetic())
