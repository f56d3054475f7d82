"""JUnit XML, for CI systems that show test reports (GitLab, Jenkins, Azure).

The renderer sees findings, not the list of files checked, so each finding is
one failing testcase (classname = file, name = code and position) and a clean
run is one passing testcase; the suite counts `files_checked` in a property.
"""

from __future__ import annotations

import pathlib
import re
import xml.etree.ElementTree as ET

from ..findings import Finding
from ._common import display_path, format_verdict, format_witness, plural, position, sort_findings

# Characters XML 1.0 cannot carry at all, even escaped; a message quoting a
# garbage source line must still give a document every parser accepts.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _details(f: Finding, root: pathlib.Path | None) -> str:
    lines = [f"{position(f.location, root)}: {f.severity}: {f.message} [{f.code}]"]
    lines += [f"{position(r.location, root)}: note: {r.message}" for r in f.related]
    if f.witness:
        lines.append(f"counterexample: {format_witness(f.witness)}")
    for i, step in enumerate(f.trace, 1):
        who = f"{step.role}: " if step.role else ""
        lines.append(
            f"  {i}. {who}{step.text}"
            + ("  <-- blocked" if step.blocked else "  <-- wrong phase" if step.fault else "")
        )
    if f.help:
        lines.append(f"help: {f.help}")
    if f.verdict:
        lines.append(f"confirm: {format_verdict(f.verdict)}")
    return "\n".join(lines)


def render_junit(findings: list[Finding], *, files_checked: int, root: pathlib.Path | None = None, **_: object) -> str:
    ordered = sort_findings(findings)
    tests = max(len(ordered), 1)
    counts = {"tests": str(tests), "failures": str(len(ordered)), "errors": "0", "skipped": "0"}
    suites = ET.Element("testsuites", {"name": "tkcheck", **counts})
    suite = ET.SubElement(suites, "testsuite", {"name": "tkcheck", **counts})
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "files_checked", "value": str(files_checked)})
    for f in ordered:
        path = display_path(f.location.filename, root)
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": _clean(path),
                "name": _clean(f"{f.code} {path}:{f.location.row}:{f.location.column}"),
                "file": _clean(path),
                "line": str(f.location.row),
            },
        )
        failure = ET.SubElement(case, "failure", {"message": _clean(f.message), "type": f.code})
        failure.text = _clean(_details(f, root))
    if not ordered:
        ET.SubElement(
            suite,
            "testcase",
            {
                "classname": "tkcheck",
                "name": f"no findings in {plural(files_checked, 'file')}",
            },
        )
    ET.indent(suites, space="  ")
    body = ET.tostring(suites, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
