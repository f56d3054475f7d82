// tkcheck stand-in for <cuda_pipeline.h> / <cuda_pipeline_primitives.h>: cp.async primitives.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "../tkcheck_cuda_builtins.h"
__device__ void __pipeline_memcpy_async(void *dst_shared, const void *src_global, size_t size_and_align, size_t zfill = 0);
__device__ void __pipeline_commit();
__device__ void __pipeline_wait_prior(size_t prior);
__device__ void __pipeline_arrive_on(unsigned long long *bar);
