from tkcheck.rule import Rule

RULE = Rule(
    code="TK001",
    name="unused-suppression",
    contract="tool",
    severity="warning",
    precision="proved",
    symptoms=("",),
    summary="A `// tkcheck: ignore[...]` comment that suppresses nothing",
    engine_only=True,
    doc="""\
## What it does
Flags inline suppressions (`// tkcheck: ignore[TK301]`, `disable[...]`,
`file-ignore[...]`) whose codes were checked but matched no finding.

## Why is this bad?
A stale suppression hides the next real finding on that line. When the bug it
excused is fixed, the comment should go too.

## Example
```cuda
wait(bar, 0);  // tkcheck: ignore[TK303]
```

Use instead:
```cuda
wait(bar, 0);
```
""",
)
