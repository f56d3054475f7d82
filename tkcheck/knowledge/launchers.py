"""Host functions that turn a function into a kernel launch: which template argument is the
kernel, which is its launch configuration, and what the generated kernel's launch shape is.

ThunderKittens' `kittens::py::launch_kernel<Config, Globals, Kernel>(G)` launches
`global_kernel<Config, Globals, Kernel>`, a `__global__` function with
`__launch_bounds__(Config::NUM_THREADS, Config::MIN_BLOCKS_PER_SM or 1)` whose body calls the
`__device__` function `Kernel(G)`, in a cluster of `Config::CLUSTER_SIZE` CTAs; block and grid
come from `Config::NUM_THREADS`/`NUM_BLOCKS` or from `G.block()`/`G.grid()`.
`kittens::py::bind_kernel<kernel>(module, name, members...)` binds a `__global__` kernel (a
template specialization such as Megakernels' `mk<config, globals, ops...>`) to Python.
Read from ThunderKittens' `pyutils/torchutils.cuh` and `pyutils/pyutils.cuh`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Launcher:
    name: str  # the function's name (unqualified)
    namespaces: tuple[str, ...]  # accepted qualifications (empty: any)
    kernel_arg: int  # which template argument is the kernel
    config_arg: int | None  # which template argument is the launch configuration type
    device_kernel: bool  # the kernel argument is a __device__ function run as the kernel body
    # members of the configuration type: threads per block, min blocks per SM, cluster size
    threads_member: str | None = None
    min_blocks_member: str | None = None
    min_blocks_default: int = 1
    cluster_member: str | None = None


LAUNCHERS: dict[str, Launcher] = {
    "launch_kernel": Launcher(
        "launch_kernel",
        ("kittens", "py"),
        kernel_arg=2,
        config_arg=0,
        device_kernel=True,
        threads_member="NUM_THREADS",
        min_blocks_member="MIN_BLOCKS_PER_SM",
        cluster_member="CLUSTER_SIZE",
    ),
    # the kernel launch_kernel launches, launched directly: `global_kernel<C, G, f><<<...>>>(G)`
    "global_kernel": Launcher(
        "global_kernel",
        ("kittens", "py"),
        kernel_arg=2,
        config_arg=0,
        device_kernel=True,
        threads_member="NUM_THREADS",
        min_blocks_member="MIN_BLOCKS_PER_SM",
        cluster_member="CLUSTER_SIZE",
    ),
    "bind_kernel": Launcher("bind_kernel", ("kittens", "py"), kernel_arg=0, config_arg=None, device_kernel=False),
}
