"""Start a new rule: its file in rules/, a fixture pair, and its section of docs/rules.md.

    python scripts/new_rule.py TK309 stage-read-twice --contract completion
    python scripts/new_rule.py TK309 stage-read-twice --contract completion --severity warning \\
        --precision high --symptom hang --summary "A stage is read twice per fill"

writes
    rules/tk309_stage_read_twice.py              RULE = Rule(...): metadata, doc sections, a bad and a
                                                 good example, and `check(an)`
    fixtures/<contract>/tk309_stage_read_twice_bad.cu    `// expect: TK309 "..."` on the reported line
    fixtures/<contract>/tk309_stage_read_twice_good.cu   `// expect-not: TK309`
and regenerates docs/rules.md (scripts/gen_rule_docs.py) so the catalog page lists the rule.

The generated rule is registered and reports nothing: its check is the place for the query, its
examples and fixtures are placeholders. Until they are filled in, the rule's own tests fail
(tests/test_rules_meta.py: the bad example must fire exactly this rule; tests/test_fixtures.py:
the expected finding is missing) and no other test changes. A check that raised instead would be an
internal error on every file checked (exit 2 everywhere), so the template yields nothing.

A code or a name the catalog already has is refused (exit 2), as is an existing file.
Recipe: docs/DEVELOPING.md, "Add a rule".
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a source checkout
from tkcheck.rule import CONTRACTS, PRECISIONS, SEVERITIES, SYMPTOMS  # noqa: E402

_CODE_IN_FILE = re.compile(r'^\s*code="(TK\d{3})"', re.M)
_NAME_IN_FILE = re.compile(r'^\s*name="([a-z0-9-]+)"', re.M)


class Refused(Exception):
    """The rule cannot be created as asked (the message says why)."""


def catalog(rules_dir: Path) -> dict[str, tuple[str, str]]:
    """file name -> (code, name) of every rule file, read as text (a half-written rule counts too)."""
    out = {}
    for p in sorted(rules_dir.glob("*.py")):
        text = p.read_text(encoding="utf-8")
        code, name = _CODE_IN_FILE.search(text), _NAME_IN_FILE.search(text)
        if code or name:
            out[p.name] = (code.group(1) if code else "", name.group(1) if name else "")
    return out


def plan(root: Path, code: str, name: str, contract: str) -> dict[str, Path]:
    if not re.fullmatch(r"TK\d{3}", code):
        raise Refused(f"rule code {code!r}: a code is TK and three digits (TK309)")
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name):
        raise Refused(f"rule name {name!r}: a name is lower-case words joined by '-' (stage-read-twice)")
    if contract not in CONTRACTS:
        raise Refused(f"contract {contract!r}: one of {', '.join(CONTRACTS)}")
    for fname, (c, n) in catalog(root / "rules").items():
        if c == code:
            raise Refused(f"{code} exists already: rules/{fname} (name {n!r}); pick a free code")
        if n == name:
            raise Refused(f"the name {name!r} exists already: rules/{fname} ({c}); pick another name")
    stem = f"{code.lower()}_{name.replace('-', '_')}"
    paths = {
        "rule": root / "rules" / f"{stem}.py",
        "bad": root / "fixtures" / contract / f"{stem}_bad.cu",
        "good": root / "fixtures" / contract / f"{stem}_good.cu",
    }
    for p in paths.values():
        if p.exists():
            raise Refused(f"{p.relative_to(root)} exists already")
    return paths


def rule_text(
    code: str, name: str, contract: str, severity: str, precision: str, symptoms: tuple[str, ...], summary: str
) -> str:
    # doubled braces: the doc below is an f-string in the generated file
    return f'''"""{code}: {summary[0].lower() + summary[1:]}."""

from __future__ import annotations

from collections.abc import Iterator

from tkcheck.checks.analysis import Analysis
from tkcheck.findings import Finding
from tkcheck.rule import Rule

from ._common import HEADER


def check(an: Analysis) -> Iterator[Finding]:
    """The query: each operation of `an.model` that breaks the contract, as one finding.

    TODO({code}): read the model (`an.model.ops_of(ir.KIND, ...)`, `an.threads.executing(op)`) and
    the facts the contract's checks computed (`an.fact(...)`, tkcheck/checks/), and report only
    what is proved (unknown threads, opaque values, an inconclusive solver: no finding):
        yield finding("{code}", f"`{{op.api}}` ... (the objects and numbers)", op.location,
                      witness={{...}}, help="the fix, in the user's terms")
    (`finding` from ._common; `related(op, note)` for the other sites). Until then the rule
    reports nothing and tests/test_rules_meta.py fails on its bad example.
    """
    return iter(())


# TODO({code}): the smallest kernel that breaks the contract (it must fire {code} and nothing else)
_BAD = (
    HEADER
    + """
__global__ __launch_bounds__(128, 1) void k(float *out) {{
    __syncthreads();
}}
"""
)

# TODO({code}): the same kernel, fixed (it must be clean)
_GOOD = (
    HEADER
    + """
__global__ __launch_bounds__(128, 1) void k(float *out) {{
    __syncthreads();
}}
"""
)

RULE = Rule(
    code="{code}",
    name="{name}",
    contract="{contract}",
    severity="{severity}",
    precision="{precision}",
    symptoms={symptoms!r},
    summary={summary!r},
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\\
## What it does
TODO({code}): what the rule computes and which operations it reports.

## Why is this bad?
TODO({code}): what the hardware or ThunderKittens does then (a hang, garbage, a slow path),
with the PTX or TK reference.

## Example
```cuda
{{_BAD}}
```

Use instead:
```cuda
{{_GOOD}}
```
""",
)
'''


def fixture_text(code: str, name: str, bad: bool) -> str:
    kind = "bad" if bad else "good"
    mark = f'// expect@+1: {code} "TODO: words its message must contain"' if bad else f"// expect-not@+1: {code}"
    what = (
        "the planted bug: the reported line carries `// expect: CODE \"message fragment\"`"
        if bad
        else "the fixed kernel: nothing reported, the once-reported line says `// expect-not: CODE`"
    )
    return f"""// tkcheck-test: select={code}
// {code} {name} ({kind}): {what}
// TODO({code}): replace the kernel below (docs/DEVELOPING.md, "Fixtures")
#include "kittens.cuh"
using namespace kittens;

__global__ __launch_bounds__(128, 1) void k(float *out) {{
    {mark}
    __syncthreads();
}}
"""


def regenerate_docs(root: Path) -> None:
    subprocess.run(
        [sys.executable, str(root / "scripts" / "gen_rule_docs.py")], cwd=root, check=True, stdout=subprocess.DEVNULL
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("code", help="TKnnn, not yet in the catalog")
    ap.add_argument("name", help="kebab-case, not yet in the catalog")
    ap.add_argument("--contract", required=True, choices=CONTRACTS)
    ap.add_argument("--severity", default="error", choices=SEVERITIES)
    ap.add_argument("--precision", default="high", choices=PRECISIONS)
    ap.add_argument(
        "--symptom",
        action="append",
        choices=[s for s in SYMPTOMS if s],
        default=[],
        help="what a user sees at run time (repeatable)",
    )
    ap.add_argument("--summary", help="one line (default: from the name)")
    ap.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)  # the tests' copy
    ap.add_argument("--no-docs", action="store_true", help="do not regenerate docs/rules.md")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    code = args.code.upper()
    try:
        paths = plan(root, code, args.name, args.contract)
    except Refused as e:
        print(f"new_rule.py: {e}", file=sys.stderr)
        return 2
    summary = args.summary or args.name.replace("-", " ").capitalize()
    paths["rule"].write_text(
        rule_text(code, args.name, args.contract, args.severity, args.precision, tuple(args.symptom), summary),
        encoding="utf-8",
    )
    paths["bad"].parent.mkdir(parents=True, exist_ok=True)
    paths["bad"].write_text(fixture_text(code, args.name, bad=True), encoding="utf-8")
    paths["good"].write_text(fixture_text(code, args.name, bad=False), encoding="utf-8")
    if not args.no_docs:
        regenerate_docs(root)
    for p in paths.values():
        print(f"wrote {p.relative_to(root)}")
    if not args.no_docs:
        print("wrote docs/rules.md")
    print(
        f"next: fill in the TODO({code}) places, then run tests/test_rules_meta.py -k {code} and "
        f"tests/test_fixtures.py -k {paths['rule'].stem}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
