from tkcheck.rule import Rule

RULE = Rule(
    code="TK000",
    name="parse-error",
    contract="tool",
    severity="error",
    precision="proved",
    symptoms=("",),
    summary="The file could not be parsed well enough to analyse it",
    engine_only=True,
    doc="""\
## What it does
Reports problems that prevent analysis: a clang error inside the checked file
(the message is clang's own), an unreadable or binary file, a file over the
size limit, or a malformed `// tkcheck:` suppression comment.

## Why is this bad?
A kernel tkcheck cannot parse is a kernel it cannot check. Instead of failing
silently (or with a traceback), the problem is reported where it is, and the
kernels that could not be modelled are skipped.

## Example
```cuda
__global__ void k() { int x = ; }
```

Use instead:
```cuda
__global__ void k() { int x = 0; }
```
""",
)
