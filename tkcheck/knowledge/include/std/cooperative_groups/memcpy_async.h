// tkcheck stand-in for CUDA's <cooperative_groups/memcpy_async.h>. Declaration-only, written for
// tkcheck: a group-wide asynchronous copy and its wait (not modelled as an mbarrier protocol).
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "../cooperative_groups.h"
namespace cooperative_groups {
template<typename Group, typename T, typename Size>
__device__ void memcpy_async(const Group &g, T *dst, const T *src, Size n);
template<typename Group> __device__ void wait(const Group &g);
template<unsigned N, typename Group> __device__ void wait_prior(const Group &g);
}
