"""SARIF 2.1.0, for GitHub code scanning and IDE viewers.

One run; the driver's rule table is the catalog (so a viewer can show a rule's
documentation even for rules with no result), results point into it by
`ruleIndex`. Evidence becomes `codeFlows`: a trace gives one threadFlow per
warp role (the lanes of a deadlock), ordered globally by `executionOrder`;
without a trace the related sites, then the finding itself, form one flow.
"""

from __future__ import annotations

import json
import pathlib
import re
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from .. import __version__
from ..baseline import FINGERPRINT_KEY
from ..findings import Edit, Finding, Fix, Location, TraceStep
from ..rule import Rule
from ._common import end_of, format_verdict, format_witness, relative_to_root, sort_findings

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SARIF_VERSION = "2.1.0"
SRCROOT = "%SRCROOT%"

_LEVELS = {"error": "error", "warning": "warning", "note": "note", "info": "note"}


def level(severity: str) -> str:
    return _LEVELS.get(severity, "warning")


def _uri(filename: str, root: pathlib.Path | None) -> dict[str, str]:
    rel = relative_to_root(filename, root)
    if rel is not None:
        return {"uri": quote(rel, safe="/"), "uriBaseId": SRCROOT}
    path = pathlib.PurePath(filename)
    if path.is_absolute():
        return {"uri": pathlib.Path(filename).as_uri()}
    return {"uri": quote(path.as_posix(), safe="/")}


def _physical(loc: Location, root: pathlib.Path | None) -> dict[str, Any]:
    end_row, end_col = end_of(loc)
    # The schema wants lines and columns >= 1; a whole-file problem may carry 0.
    start_line, start_col = max(loc.row, 1), max(loc.column, 1)
    end_line = max(end_row, start_line)
    end_col = max(end_col, start_col + 1) if end_line == start_line else max(end_col, 1)
    return {
        "artifactLocation": _uri(loc.filename, root),
        "region": {
            "startLine": start_line,
            "startColumn": start_col,
            "endLine": end_line,
            "endColumn": end_col,
        },
    }


def _section(doc: str, heading: str) -> str:
    """The text under a markdown heading, up to the next heading."""
    match = re.search(rf"^{re.escape(heading)}\s*$(.*?)(?=^#|\Z)", doc, re.M | re.S)
    return " ".join(match.group(1).split()) if match else ""


def _descriptor(rule: Rule) -> dict[str, Any]:
    full = _section(rule.doc or "", "## What it does") or rule.summary
    tags = ["tkcheck", rule.contract, *rule.tags]
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary or rule.name},
        "fullDescription": {"text": full or rule.name},
        "help": {"text": rule.doc or rule.summary, "markdown": rule.doc or rule.summary},
        "defaultConfiguration": {"level": level(rule.severity)},
        **({"helpUri": uri} if (uri := help_uri(rule.code)) else {}),
        "properties": {
            "precision": rule.precision,
            "contract": rule.contract,
            "symptom": rule.symptom,
            "tags": sorted(set(t for t in tags if t)),
        },
    }


def _stub_descriptor(f: Finding) -> dict[str, Any]:
    """A finding whose rule is not in the table still needs a ruleIndex target."""
    return {
        "id": f.code,
        "name": f.name or f.code,
        "shortDescription": {"text": f.name or f.code},
        "defaultConfiguration": {"level": level(f.severity)},
        "properties": {"contract": f.contract, "symptom": f.symptom},
    }


def _flow_location(
    loc: Location | None, text: str, root: pathlib.Path | None, order: int, **extra: Any
) -> dict[str, Any]:
    where: dict[str, Any] = {"message": {"text": text}}
    if loc is not None:
        where["physicalLocation"] = _physical(loc, root)
    return {"location": where, "executionOrder": order, **extra}


def _trace_step(step: TraceStep, order: int, root: pathlib.Path | None) -> dict[str, Any]:
    extra: dict[str, Any] = {"importance": "essential" if step.blocked or step.fault else "important"}
    state: dict[str, dict[str, str]] = {}
    if step.barrier is not None:
        state["barrier"] = {"text": step.barrier}
    if step.phase is not None:
        state["phase"] = {"text": str(step.phase)}
    if state:
        extra["state"] = state
    if step.blocked or step.fault:
        extra["kinds"] = ["danger"]
        extra["properties"] = {"blocked": True} if step.blocked else {"fault": True}
    return _flow_location(step.location, step.text, root, order, **extra)


def _code_flows(f: Finding, root: pathlib.Path | None) -> list[dict[str, Any]]:
    flows: dict[str, list[dict[str, Any]]] = {}
    if f.trace:
        for order, step in enumerate(f.trace, 1):
            flows.setdefault(step.role or "kernel", []).append(_trace_step(step, order, root))
    elif f.related:
        steps = [_flow_location(r.location, r.message, root, i) for i, r in enumerate(f.related, 1)]
        steps.append(_flow_location(f.location, f.message, root, len(steps) + 1, importance="essential"))
        flows["kernel"] = steps
    else:
        return []
    thread_flows = [{"id": role, "message": {"text": role}, "locations": locs} for role, locs in flows.items()]
    flow: dict[str, Any] = {"threadFlows": thread_flows}
    if f.witness:
        flow["message"] = {"text": f"counterexample: {format_witness(f.witness)}"}
    return [flow]


def _fix(x: Fix, root: pathlib.Path | None) -> dict[str, Any]:
    by_file: dict[str, list[Edit]] = {}
    for e in x.edits:
        by_file.setdefault(e.location.filename, []).append(e)
    changes = []
    for name, edits in sorted(by_file.items()):
        reps = []
        for e in edits:
            loc = e.location
            region = {
                "startLine": max(loc.row, 1),
                "startColumn": max(loc.column, 1),
                "endLine": max(loc.end_row or loc.row, 1),
                "endColumn": max(loc.end_column or loc.column, 1),
            }
            reps.append({"deletedRegion": region, "insertedContent": {"text": e.text}})
        changes.append({"artifactLocation": _uri(name, root), "replacements": reps})
    return {
        "description": {"text": x.description + (" (safe)" if x.safe else " (suggested)")},
        "artifactChanges": changes,
    }


DOCS_URL_ENV = "TKCHECK_DOCS_URL"


def help_uri(code: str) -> str | None:
    """The rule's documentation as an absolute URL: `<docs>/rules.md#<code in lower case>` (the
    anchor GitHub gives the rule's heading in docs/rules.md), where <docs> is the URL of tkcheck's
    docs/ folder (`_docs_base`). SARIF wants an absolute URI, so without one there is none."""
    base = _docs_base()
    if not base:
        return None
    return f"{base.rstrip('/')}/rules.md#{code.lower()}" if not base.endswith(".md") else f"{base}#{code.lower()}"


def information_uri() -> str | None:
    """tkcheck's README beside the docs/ folder (`<repo>/README.md` for `<repo>/docs`), else the
    documentation URL itself."""
    base = _docs_base()
    if not base:
        return None
    base = base.rstrip("/")
    return base[: -len("/docs")] + "/README.md" if base.endswith("/docs") else base


def _docs_base() -> str | None:
    """The URL of tkcheck's docs/ folder: `$TKCHECK_DOCS_URL` (the GitHub Action sets it to
    `<server>/<action repository>/blob/<action ref>/docs`), else a `Documentation` project URL
    of the installed package; an http(s) URL only (a file path would put a machine's paths in
    an uploaded report)."""
    import os

    env = os.environ.get(DOCS_URL_ENV, "").strip()
    if env:
        return env if re.match(r"^https?://\S+$", env) else None
    return _metadata_docs_base()


@lru_cache(maxsize=1)
def _metadata_docs_base() -> str | None:
    try:
        from importlib.metadata import metadata

        urls: list[str] = metadata("tkcheck").get_all("Project-URL") or []
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return None
    for entry in urls:
        label, _, url = entry.partition(",")
        url = url.strip()
        if label.strip().lower() in ("documentation", "docs", "rules") and re.match(r"^https?://\S+$", url):
            return url
    return None


def _result(f: Finding, index: int, root: pathlib.Path | None) -> dict[str, Any]:
    text = f.message if not f.help else f"{f.message}\nhelp: {f.help}"
    if f.verdict:
        text += f"\nconfirm: {format_verdict(f.verdict)}"
    result: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": index,
        "level": level(f.severity),
        "message": {"text": text},
        "locations": [{"physicalLocation": _physical(f.location, root)}],
    }
    if f.related:
        result["relatedLocations"] = [
            {"id": i, "physicalLocation": _physical(r.location, root), "message": {"text": r.message}}
            for i, r in enumerate(f.related, 1)
        ]
    flows = _code_flows(f, root)
    if flows:
        result["codeFlows"] = flows
    if f.fingerprint:
        # the same value a baseline records: code scanning matches results across line shifts
        result["partialFingerprints"] = {FINGERPRINT_KEY: f.fingerprint}
    fixes = [_fix(x, root) for x in f.fixes]
    if fixes:
        result["fixes"] = fixes
    props = {k: v for k, v in (("kernel", f.kernel), ("witness", f.witness), ("verdict", f.verdict)) if v}
    if props:
        # Round-trip through JSON text so that non-JSON witness values become strings.
        result["properties"] = json.loads(json.dumps(props, default=str))
    return result


def sarif_log(
    findings: list[Finding],
    *,
    rules: dict[str, Rule],
    root: pathlib.Path | None = None,
    coverage: dict | None = None,
    run_info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    descriptors = [_descriptor(rules[code]) for code in sorted(rules)]
    index = {d["id"]: i for i, d in enumerate(descriptors)}
    ordered = sort_findings(findings)
    for f in ordered:
        if f.code not in index:
            index[f.code] = len(descriptors)
            descriptors.append(_stub_descriptor(f))
    driver: dict[str, Any] = {"name": "tkcheck", "version": __version__, "rules": descriptors}
    info = information_uri()
    if info:
        driver["informationUri"] = info
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, index[f.code], root) for f in ordered],
    }
    if run_info is not None:
        run["invocations"] = [_invocation(run_info)]
    if coverage:
        # what was modelled (kernels analysed, sync ops modelled): "no results" means only this much
        # the decided share of the proof obligations leads: what was proved, not what was read
        summ = coverage.get("summary") or {}
        run["properties"] = {
            "obligations_decided_pct": summ.get("obligations_decided_pct"),
            "coverage": {"summary": summ, "kernels": coverage.get("kernels", [])},
        }
    return {"$schema": SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


def _invocation(run_info: dict[str, Any]) -> dict[str, Any]:
    """The run itself: `executionSuccessful` false when tkcheck exited 2 (a usage, input or
    internal error, or coverage below --require-coverage), so a broken run does not read as a
    clean one in code scanning; the errors and the passes that were asked for and skipped as
    notifications, with what decided obligations assume; how many findings a baseline hid."""
    code = int(run_info.get("exit_code", 0))
    notes = [{"level": "error", "message": {"text": str(m)}} for m in run_info.get("errors", [])]
    notes += [
        {"level": "warning", "message": {"text": str(m)}, "descriptor": {"id": "pass-skipped"}}
        for m in run_info.get("skipped_passes", [])
    ]
    notes += [
        {"level": "note", "message": {"text": str(m)}, "descriptor": {"id": "assumption"}}
        for m in run_info.get("assumptions", [])
    ]
    inv: dict[str, Any] = {"executionSuccessful": code in (0, 1), "exitCode": code}
    if notes:
        inv["toolExecutionNotifications"] = notes
    base = run_info.get("baseline")
    if base:
        inv["properties"] = {
            "baseline": {"file": str(base.get("file")), "hidden": base.get("hidden", 0), "stale": base.get("stale", 0)}
        }
    return inv


def render_sarif(
    findings: list[Finding],
    *,
    rules: dict[str, Rule],
    root: pathlib.Path | None = None,
    coverage: dict[str, Any] | None = None,
    run_info: dict[str, Any] | None = None,
    **_: object,
) -> str:
    log = sarif_log(findings, rules=rules, root=root, coverage=coverage, run_info=run_info)
    return json.dumps(log, indent=2) + "\n"
