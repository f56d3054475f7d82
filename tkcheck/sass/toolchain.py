"""Finding the CUDA tools the SASS pass needs.

Search order for each tool: an explicit directory given by the caller, `PATH`,
`$CUDA_HOME/bin`, `$CUDA_PATH/bin`, the directory of the nvcc found (after
following symlinks), NVIDIA's pip wheels (`nvidia-cuda-nvcc`, `nvidia-cuda-nvdisasm`,
`nvidia-cuda-cuobjdump`: `site-packages/nvidia/{cu13,cu12,cuda_nvcc,...}/bin`), and
the conventional `/usr/local/cuda/bin`.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence


# Where CUDA installs itself by default; module-level so tests can empty it.
CONVENTIONAL_DIRS: tuple[str, ...] = ("/usr/local/cuda/bin",)


class ToolchainNotFound(Exception):
    """No usable CUDA compiler + disassembler; the message says what is missing."""


@dataclass(frozen=True)
class Toolchain:
    nvcc: str
    nvdisasm: str | None
    cuobjdump: str | None
    demangler: str | None  # cu++filt, else c++filt, else None (names stay mangled)
    nvcc_version: str  # last line of `nvcc --version`, e.g. "Build cuda_13.0.r13.0/..."
    disassembler_version: str

    @property
    def version_id(self) -> str:
        """What goes into the cache key."""
        return f"{self.nvcc_version}|{self.disassembler_version}"

    def demangle(self, names: Sequence[str]) -> dict[str, str]:
        """Mangled -> demangled for each name the demangler changed (best effort)."""
        names = [n for n in names if n.startswith("_Z")]
        if not names or not self.demangler:
            return {}
        try:
            proc = subprocess.run(
                [self.demangler], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=60
            )
        except (OSError, subprocess.SubprocessError, ValueError):
            return {}
        if proc.returncode != 0:
            return {}
        lines = proc.stdout.splitlines()
        if len(lines) != len(names):
            return {}
        return {n: d.strip() for n, d in zip(names, lines) if d.strip() and d.strip() != n}


def _wheel_bin_dirs() -> list[Path]:
    dirs: list[Path] = []
    for entry in sys.path:
        try:
            base = Path(entry) / "nvidia"
            if not base.is_dir():
                continue
            for sub in sorted(base.iterdir()):
                b = sub / "bin"
                if b.is_dir():
                    dirs.append(b)
        except OSError:
            continue
    return dirs


def _candidate_dirs(extra: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
    dirs: list[Path] = [Path(d) for d in extra]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        v = os.environ.get(var)
        if v:
            dirs.append(Path(v) / "bin")
    return dirs


def _which(tool: str, dirs: Sequence[Path], late_dirs: Sequence[Path]) -> str | None:
    for d in dirs:
        p = d / tool
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    found = shutil.which(tool)
    if found:
        return found
    for d in late_dirs:
        p = d / tool
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def _version_line(tool: str) -> str:
    try:
        proc = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    lines = [l.strip() for l in (proc.stdout or "").splitlines() if l.strip()]
    return lines[-1] if lines else "unknown"


def _real_nvcc_dir(nvcc: str) -> list[Path]:
    out = [Path(nvcc).parent]
    try:
        real = Path(os.path.realpath(nvcc)).parent
        if real not in out:
            out.append(real)
        # wrapper scripts (`exec /opt/cuda/bin/nvcc "$@"`): read the target
        text = Path(nvcc).read_text(errors="replace")[:4096] if Path(nvcc).stat().st_size < 4096 else ""
        for tok in text.split():
            if tok.endswith("/nvcc") and tok.startswith("/"):
                out.append(Path(tok).parent)
    except OSError:
        pass
    return out


@functools.lru_cache(maxsize=8)
def _find(extra: tuple[str, ...], env_key: tuple[str | None, ...]) -> Toolchain:
    early = _candidate_dirs(extra)
    wheels = _wheel_bin_dirs()
    conventional = [Path(d) for d in CONVENTIONAL_DIRS]
    nvcc = _which("nvcc", early, wheels + conventional)
    if nvcc is None:
        raise ToolchainNotFound(
            "no CUDA compiler found (nvcc not on PATH, not in $CUDA_HOME/bin, and no nvidia-cuda-nvcc wheel installed)"
        )
    late = _real_nvcc_dir(nvcc) + wheels + conventional
    nvdisasm = _which("nvdisasm", early, late)
    cuobjdump = _which("cuobjdump", early, late)
    if nvdisasm is None and cuobjdump is None:
        raise ToolchainNotFound(
            f"nvcc found ({nvcc}) but no disassembler: install nvdisasm or cuobjdump "
            "(e.g. the nvidia-cuda-nvdisasm wheel)"
        )
    demangler = _which("cu++filt", early, late) or shutil.which("c++filt")
    disasm = nvdisasm or cuobjdump or ""
    return Toolchain(
        nvcc=nvcc,
        nvdisasm=nvdisasm,
        cuobjdump=cuobjdump,
        demangler=demangler,
        nvcc_version=_version_line(nvcc),
        disassembler_version=_version_line(disasm),
    )


def find_toolchain(extra_dirs: Iterable[str | os.PathLike[str]] = ()) -> Toolchain:
    """Locate nvcc and a disassembler; raises ToolchainNotFound (never anything else)."""
    env_key = (
        os.environ.get("PATH"),
        os.environ.get("CUDA_HOME"),
        os.environ.get("CUDA_PATH"),
        "|".join(sys.path),
        "|".join(CONVENTIONAL_DIRS),
    )
    try:
        return _find(tuple(str(d) for d in extra_dirs), env_key)
    except ToolchainNotFound:
        raise
    except Exception as exc:  # a broken install must not become a traceback
        raise ToolchainNotFound(f"could not inspect the CUDA toolchain: {exc}") from exc
