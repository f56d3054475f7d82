"""What the GPU machine can tell `tkcheck confirm`: devices, compute capability, versions.

`probe()` asks the CUDA driver through cuda-python (`pip install 'tkcheck[gpu]'`; the design's
dependency for this), and falls back to `nvidia-smi` when cuda-python is not installed. It never
creates a CUDA context (cuInit and device queries only), so it holds no GPU memory. Static mode
never imports this module.

The toolkit version is the `nvcc --version` release of the nvcc that builds the copies.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    arch: str  # "sm_90"


@dataclass
class DeviceInfo:
    gpus: list[Gpu] = field(default_factory=list)
    driver: str | None = None  # "580.159.03" (nvidia-smi) or "CUDA 13.0" (the driver API's version)
    toolkit: str | None = None  # "nvcc 13.0"
    via: str = ""  # "cuda-python" | "nvidia-smi" | ""
    error: str | None = None  # why nothing was found

    @property
    def arch(self) -> str | None:
        return self.gpus[0].arch if self.gpus else None

    def gpu(self, index: int) -> Gpu | None:
        return next((g for g in self.gpus if g.index == index), None)

    def describe(self, index: int | None = None) -> str:
        g = self.gpu(index) if index is not None else (self.gpus[0] if self.gpus else None)
        if g is None:
            return self.error or "no GPU"
        parts = [f"GPU {g.index} {g.name} ({g.arch})"]
        if self.driver:
            parts.append(f"driver {self.driver}")
        if self.toolkit:
            parts.append(self.toolkit)
        return ", ".join(parts)

    def to_json(self) -> dict:
        return {
            "gpus": [g.__dict__ for g in self.gpus],
            "driver": self.driver,
            "toolkit": self.toolkit,
            "via": self.via,
            "error": self.error,
        }


def visible_id(index: int) -> str:
    """The CUDA_VISIBLE_DEVICES value for GPU `index` as this process sees it (its own
    CUDA_VISIBLE_DEVICES, when set, renumbers the devices the probe reports)."""
    import os

    parent = [x.strip() for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if x.strip()]
    return parent[index] if 0 <= index < len(parent) else str(index)


def _driver_module():
    """cuda-python's driver bindings (module names of cuda-python >= 12.6 and of older releases)."""
    try:
        from cuda.bindings import driver  # type: ignore[import-not-found]

        return driver
    except ImportError:
        pass
    try:
        from cuda import cuda as driver  # type: ignore[import-not-found]

        return driver
    except ImportError:
        return None


def _cuda_python(drv) -> DeviceInfo:
    ok = drv.CUresult.CUDA_SUCCESS

    def call(fn, *args):
        res = fn(*args)
        err, rest = (res[0], res[1:]) if isinstance(res, tuple) else (res, ())
        if err != ok:
            raise RuntimeError(f"{getattr(fn, '__name__', 'cuda')}: {err}")
        return rest[0] if len(rest) == 1 else rest

    info = DeviceInfo(via="cuda-python")
    try:
        call(drv.cuInit, 0)
        n = call(drv.cuDeviceGetCount)
        attr = drv.CUdevice_attribute
        for i in range(int(n)):
            dev = call(drv.cuDeviceGet, i)
            name = call(drv.cuDeviceGetName, 128, dev)
            if isinstance(name, (bytes, bytearray)):
                name = name.split(b"\0", 1)[0].decode("utf-8", "replace")
            major = call(drv.cuDeviceGetAttribute, attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
            minor = call(drv.cuDeviceGetAttribute, attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
            info.gpus.append(Gpu(i, str(name).strip(), f"sm_{int(major)}{int(minor)}"))
        v = int(call(drv.cuDriverGetVersion))
        info.driver = f"CUDA {v // 1000}.{(v % 1000) // 10}"
    except Exception as e:  # noqa: BLE001 - no driver, no device: said, not raised
        info.error = f"cuda-python: {e}"
    return info


def _nvidia_smi() -> DeviceInfo:
    exe = shutil.which("nvidia-smi")
    info = DeviceInfo(via="nvidia-smi")
    if not exe:
        info.error = "no GPU here (no CUDA driver: cuda-python is not installed and nvidia-smi was not found)"
        return info
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index,name,compute_cap,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        info.error = f"nvidia-smi: {e}"
        return info
    for ln in (out.stdout or "").splitlines():
        parts = [p.strip() for p in ln.split(",")]
        m = re.match(r"(\d+)\.(\d+)", parts[2]) if len(parts) >= 4 else None
        if m and parts[0].isdigit():
            info.gpus.append(Gpu(int(parts[0]), parts[1], f"sm_{m.group(1)}{m.group(2)}"))
            info.driver = parts[3]
    if not info.gpus:
        info.error = "no GPU here (nvidia-smi found no device)"
    return info


def _smi_driver() -> str | None:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    v = (out.stdout or "").strip().splitlines()
    return v[0].strip() if out.returncode == 0 and v else None


def nvcc_version(nvcc: str = "nvcc") -> str | None:
    exe = shutil.which(nvcc)
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"release (\d+\.\d+)", out.stdout or "")
    return f"nvcc {m.group(1)}" if m else None


def probe(driver_module=None, toolkit: bool = True) -> DeviceInfo:
    """The GPUs this machine has (see the module doc); `driver_module` replaces cuda-python in tests."""
    drv = driver_module if driver_module is not None else _driver_module()
    if drv is not None:
        info = _cuda_python(drv)
        if info.gpus:
            smi = _smi_driver()
            if smi:
                info.driver = f"{smi} ({info.driver})" if info.driver else smi
        elif info.error and "no device" not in info.error.lower():
            smi = _nvidia_smi()
            if smi.gpus:
                info = smi
    else:
        info = _nvidia_smi()
    if not info.gpus and not info.error:
        info.error = "no GPU here (the CUDA driver reports no device)"
    if toolkit:
        info.toolkit = nvcc_version()
    return info
