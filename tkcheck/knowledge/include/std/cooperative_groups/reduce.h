// tkcheck stand-in for CUDA's <cooperative_groups/reduce.h>. Declaration-only, written for tkcheck:
// a group-wide reduction of one value per thread (shuffles inside the group; no shared memory).
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "../cooperative_groups.h"
namespace cooperative_groups {
template<typename T> struct plus { __device__ T operator()(const T &a, const T &b) const; };
template<typename T> struct less { __device__ T operator()(const T &a, const T &b) const; };
template<typename T> struct greater { __device__ T operator()(const T &a, const T &b) const; };
template<typename T> struct bit_and { __device__ T operator()(const T &a, const T &b) const; };
template<typename T> struct bit_or { __device__ T operator()(const T &a, const T &b) const; };
template<typename T> struct bit_xor { __device__ T operator()(const T &a, const T &b) const; };
template<typename Group, typename T, typename Op> __device__ T reduce(const Group &g, T value, Op op);
template<typename Group, typename T, typename Op> __device__ void reduce_store_async(const Group &g, T *dst, T value, Op op);
}
