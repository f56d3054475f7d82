"""Stand-ins for nvcc and compute-sanitizer, so that `tkcheck confirm` runs end to end without a GPU.

The fake nvcc "builds" a program from comments in the source it is given:

    // fake <copy>: <shell command>

where <copy> is `plain`, `instrumented` (the probe copy: its first line includes the prelude),
`widened` (a copy with a delay or a poison), `repaired` (a copy whose view was removed) or `any`;
the program it writes runs the command of the first matching line (`widened`/`repaired` before
`instrumented`, `any` last), and prints `ok` when none matches. `// fake build: fail` makes the build
fail; `// fake link: nomain` makes it fail as a link without main() does.

The fake compute-sanitizer copies `<binary>.<tool>.xml` (written by the fake nvcc from
`// fake-xml <tool>: <xml text>` lines) to the `--save` path and runs the program.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

NVCC = r'''#!PYTHON
import os, re, sys
args = sys.argv[1:]
if "--version" in args:
    print("Cuda compilation tools, release 13.0, V13.0.88"); sys.exit(0)
out = args[args.index("-o") + 1]
src = next(a for a in args if a.endswith((".cu", ".cuh", ".cpp")))
text = open(src).read()
if "// fake build: fail" in text and "tkcheck_prelude.cuh" not in text.split("\n", 1)[0]:
    print(src + "(3): error: planted build error", file=sys.stderr); sys.exit(1)
if "// fake link: nomain" in text:
    print("/usr/bin/ld: crt1.o: in function `_start': undefined reference to `main'", file=sys.stderr); sys.exit(1)
first = text.split("\n", 1)[0]
if "tkcheck_prelude.cuh" in first:
    kind = "widened" if ("::tkcheck_delay((long long)" in text or ", ::tkcheck_poison(" in text) else "instrumented"
elif "reinterpret_cast" not in text and "// fake view" in text:
    kind = "repaired"
else:
    kind = "plain"
cmds = {}
for k, c in re.findall(r"^\s*// fake (plain|instrumented|widened|repaired|any): (.*)$", text, re.M):
    cmds.setdefault(k, c)
cmd = cmds.get(kind) or cmds.get("any") or "echo ok"
with open(out, "w") as fh:
    fh.write("#!/bin/bash\n" + cmd + "\n")
os.chmod(out, 0o755)
for tool, xml in re.findall(r"^\s*// fake-xml (\w+): (.*)$", text, re.M):
    with open(out + "." + tool + ".xml", "w") as fh:
        fh.write(xml.replace("\\n", "\n"))
'''

SANITIZER = r'''#!PYTHON
import os, shutil, subprocess, sys
args = sys.argv[1:]
tool = args[args.index("--tool") + 1]
save = args[args.index("--save") + 1]
prog = args[args.index("--save") + 2:]
src = prog[0] + "." + tool + ".xml"
if os.path.exists(src):
    shutil.copy(src, save)
else:
    open(save, "w").write("<?xml version='1.0'?><ComputeSanitizerOutput></ComputeSanitizerOutput>")
sys.exit(subprocess.call(prog))
'''


def install(bindir: Path, monkeypatch) -> Path:
    """Write the fake nvcc and compute-sanitizer into `bindir` and put it first on PATH."""
    bindir.mkdir(parents=True, exist_ok=True)
    for name, body in (("nvcc", NVCC), ("compute-sanitizer", SANITIZER)):
        p = bindir / name
        p.write_text(body.replace("#!PYTHON", "#!" + sys.executable), encoding="utf-8")
        p.chmod(p.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return bindir


class FakeDriver:
    """cuda-python's driver module, as much of it as confirm/device.py uses."""

    class CUresult:
        CUDA_SUCCESS = 0
        CUDA_ERROR_NO_DEVICE = 100

    class CUdevice_attribute:
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76

    def __init__(self, gpus=(("NVIDIA H200", 9, 0),), version=13000, init_error=0):
        self.gpus, self.version, self.init_error = list(gpus), version, init_error

    def cuInit(self, flags):
        return (self.init_error,)

    def cuDeviceGetCount(self):
        return (0, len(self.gpus))

    def cuDeviceGet(self, i):
        return (0, i)

    def cuDeviceGetName(self, n, dev):
        return (0, self.gpus[dev][0].encode() + b"\0" * 8)

    def cuDeviceGetAttribute(self, attr, dev):
        return (0, self.gpus[dev][1] if attr == 75 else self.gpus[dev][2])

    def cuDriverGetVersion(self):
        return (0, self.version)
