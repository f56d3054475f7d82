// tkcheck: declaration-only model of ThunderKittens' pyutils headers (pyutils/pyutils.cuh,
// pyutils/torchutils.cuh): the launchers that turn a __device__ function into a kernel, the
// binding helpers and the tensor conversions host code uses. Written for tkcheck from TK's
// public API; what the launchers launch is tkcheck/knowledge/launchers.py's concern.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "tkcheck_tk_model.cuh"

namespace kittens {
namespace py {
// the kernel launch_kernel launches: Kernel(G) in a __global__ with Config's launch bounds
template <typename Config, typename Globals, auto Kernel>
__global__ void global_kernel(const __grid_constant__ Globals G);
template <typename Config, typename Globals, auto Kernel>
__host__ void launch_kernel(const Globals &G);
template <auto kernel, typename... MemberPtrs>
__host__ void bind_kernel(auto m, auto name, MemberPtrs... member_ptrs);
template <auto function, typename... MemberPtrs>
__host__ void bind_function(auto m, auto name, MemberPtrs... member_ptrs);
template <typename Layout, bool TypeCheck = true, typename Tensor>
__host__ Layout tensor_to_gl(const Tensor &t);
template <typename Layout, bool TypeCheck = true, typename Tensor>
__host__ void tensor_check(const Tensor &t);
template <typename T1, typename... Ts>
__host__ void parallel_tensor_check(const T1 &first, const Ts &...rest);
} // namespace py
} // namespace kittens
