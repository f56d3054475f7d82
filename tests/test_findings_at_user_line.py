"""A finding the checks place on a line of tkcheck's own protocol files (its model of a TK
prototype template) is told at the user's template struct, where a user can act on it and
suppress it; the template's step stays as a related note and in the message."""

from __future__ import annotations

from pathlib import Path

from tkcheck.engine import _place_at_user, models_of
from tkcheck.findings import Finding, Location
from tkcheck.knowledge.protocols import in_protocol_file, protocol_file

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "prototype" / "lcf_finish_store_one_task.cu"


def _lcf_model():
    models = [m for m in models_of(str(FIXTURE)) if m.kind == "lcf"]
    assert models, "the fixture has an lcf kernel"
    return models[0]


def test_protocol_line_moves_to_the_users_struct() -> None:
    m = _lcf_model()
    lcf = protocol_file("lcf")
    assert lcf is not None and in_protocol_file(str(lcf))
    f = Finding("TK502", "producer waits on 'inputs_finished[1]'", Location(str(lcf), 63, 17))
    _place_at_user(f, m)
    assert not in_protocol_file(f.location.filename)
    assert Path(f.location.filename).name == FIXTURE.name
    assert (f.location.row, f.location.column) == (m.location.row, m.location.column)
    assert f.related and in_protocol_file(f.related[0].location.filename)
    assert f.related[0].location.row == 63
    assert "lcf.cu:63" in f.message


def test_user_line_stays() -> None:
    m = _lcf_model()
    f = Finding("TK301", "a message", Location(str(FIXTURE), 40, 5))
    _place_at_user(f, m)
    assert (Path(f.location.filename).name, f.location.row, f.location.column) == (FIXTURE.name, 40, 5)
    assert f.related == [] and f.message == "a message"


def test_a_finding_in_a_users_helper_names_the_kernels_call() -> None:
    from tkcheck.engine import CheckOptions, check_file
    from tkcheck.evaluate import all_codes

    path = Path(__file__).resolve().parent.parent / "fixtures" / "frontend" / "helper_call_site_bad.cu"
    res = check_file(str(path), CheckOptions(enabled=all_codes()))
    assert {f.code for f in res.findings} == {"TK401", "TK408"}
    for f in res.findings:
        assert f.location.row == 5
        calls = [r for r in f.related if r.message.startswith("called from here")]
        assert [r.location.row for r in calls] == [11], f.related
