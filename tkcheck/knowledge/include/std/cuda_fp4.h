// tkcheck stand-in for <cuda_fp4.h>: the FP4 (e2m1) storage types. Declaration-only.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "cuda_fp8.h"

typedef unsigned char __nv_fp4_storage_t;
typedef unsigned char __nv_fp4x2_storage_t;
typedef unsigned short __nv_fp4x4_storage_t;
typedef enum __nv_fp4_interpretation_t { __NV_E2M1 } __nv_fp4_interpretation_t;
struct __nv_fp4_e2m1 {
    __nv_fp4_storage_t __x;
    __nv_fp4_e2m1() = default;
    __host__ __device__ explicit __nv_fp4_e2m1(float f);
    __host__ __device__ explicit __nv_fp4_e2m1(int i);
    __host__ __device__ explicit operator float() const;
};
struct __nv_fp4x2_e2m1 {
    __nv_fp4x2_storage_t __x;
    __nv_fp4x2_e2m1() = default;
    __host__ __device__ explicit __nv_fp4x2_e2m1(float2 f);
    __host__ __device__ explicit operator float2() const;
};
struct __attribute__((aligned(2))) __nv_fp4x4_e2m1 {
    __nv_fp4x4_storage_t __x;
    __nv_fp4x4_e2m1() = default;
    __host__ __device__ explicit __nv_fp4x4_e2m1(float4 f);
    __host__ __device__ explicit operator float4() const;
};
__host__ __device__ __nv_fp4_storage_t __nv_cvt_float_to_fp4(float x, __nv_fp4_interpretation_t fp4_interpretation, enum cudaRoundMode rounding);
__host__ __device__ __nv_fp4x2_storage_t __nv_cvt_float2_to_fp4x2(float2 x, __nv_fp4_interpretation_t fp4_interpretation, enum cudaRoundMode rounding);
__host__ __device__ __nv_fp4x4_storage_t __nv_cvt_float4_to_fp4x4(float4 x, __nv_fp4_interpretation_t fp4_interpretation, enum cudaRoundMode rounding);
__host__ __device__ __half_raw __nv_cvt_fp4_to_halfraw(__nv_fp4_storage_t x, __nv_fp4_interpretation_t fp4_interpretation);
__host__ __device__ __half2_raw __nv_cvt_fp4x2_to_halfraw2(__nv_fp4x2_storage_t x, __nv_fp4_interpretation_t fp4_interpretation);
