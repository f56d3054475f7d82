// tkcheck stand-in for CUDA's <cooperative_groups/scan.h>. Declaration-only, written for tkcheck:
// group-wide prefix sums of one value per thread.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "reduce.h"
namespace cooperative_groups {
template<typename Group, typename T> __device__ T inclusive_scan(const Group &g, T value);
template<typename Group, typename T, typename Op> __device__ T inclusive_scan(const Group &g, T value, Op op);
template<typename Group, typename T> __device__ T exclusive_scan(const Group &g, T value);
template<typename Group, typename T, typename Op> __device__ T exclusive_scan(const Group &g, T value, Op op);
}
