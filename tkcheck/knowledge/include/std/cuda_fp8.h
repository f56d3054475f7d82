// tkcheck stand-in for <cuda_fp8.h>: the FP8 storage types (e4m3, e5m2, e8m0) and their packed
// x2/x4 forms. Declaration-only, written for tkcheck.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "../tkcheck_cuda_builtins.h"
#include "cuda_fp16.h"
#include "cuda_bf16.h"

typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;
typedef enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 } __nv_fp8_interpretation_t;
typedef enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE } __nv_saturation_t;
enum cudaRoundMode { cudaRoundNearest, cudaRoundZero, cudaRoundPosInf, cudaRoundMinInf };

#define __TKC_FP8(N, S) \
    struct __attribute__((aligned(sizeof(S)))) N { \
        S __x; \
        N() = default; \
        __host__ __device__ explicit N(float f); \
        __host__ __device__ explicit N(double f); \
        __host__ __device__ explicit N(__half f); \
        __host__ __device__ explicit N(__nv_bfloat16 f); \
        __host__ __device__ explicit N(int i); \
        __host__ __device__ explicit N(unsigned int i); \
        __host__ __device__ explicit operator float() const; \
        __host__ __device__ explicit operator __half() const; \
        __host__ __device__ explicit operator __nv_bfloat16() const; \
    };
#define __TKC_FP8X2(N, S) \
    struct __attribute__((aligned(sizeof(S)))) N { \
        S __x; \
        N() = default; \
        __host__ __device__ explicit N(float2 f); \
        __host__ __device__ explicit N(__half2 f); \
        __host__ __device__ explicit N(__nv_bfloat162 f); \
        __host__ __device__ explicit operator float2() const; \
        __host__ __device__ explicit operator __half2() const; \
    };
#define __TKC_FP8X4(N, S) \
    struct __attribute__((aligned(sizeof(S)))) N { \
        S __x; \
        N() = default; \
        __host__ __device__ explicit N(float4 f); \
        __host__ __device__ explicit N(float2 lo, float2 hi); \
        __host__ __device__ explicit operator float4() const; \
    };
__TKC_FP8(__nv_fp8_e4m3, __nv_fp8_storage_t)
__TKC_FP8(__nv_fp8_e5m2, __nv_fp8_storage_t)
__TKC_FP8(__nv_fp8_e8m0, __nv_fp8_storage_t)
__TKC_FP8X2(__nv_fp8x2_e4m3, __nv_fp8x2_storage_t)
__TKC_FP8X2(__nv_fp8x2_e5m2, __nv_fp8x2_storage_t)
__TKC_FP8X2(__nv_fp8x2_e8m0, __nv_fp8x2_storage_t)
__TKC_FP8X4(__nv_fp8x4_e4m3, __nv_fp8x4_storage_t)
__TKC_FP8X4(__nv_fp8x4_e5m2, __nv_fp8x4_storage_t)
__TKC_FP8X4(__nv_fp8x4_e8m0, __nv_fp8x4_storage_t)
#undef __TKC_FP8
#undef __TKC_FP8X2
#undef __TKC_FP8X4

__host__ __device__ __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t saturate, __nv_fp8_interpretation_t fp8_interpretation);
__host__ __device__ __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2 x, __nv_saturation_t saturate, __nv_fp8_interpretation_t fp8_interpretation);
__host__ __device__ __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw x, __nv_saturation_t saturate, __nv_fp8_interpretation_t fp8_interpretation);
__host__ __device__ __half_raw __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t x, __nv_fp8_interpretation_t fp8_interpretation);
__host__ __device__ __half2_raw __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t fp8_interpretation);
__host__ __device__ __nv_fp8x2_storage_t __nv_cvt_halfraw2_to_fp8x2(__half2_raw x, __nv_saturation_t saturate, __nv_fp8_interpretation_t fp8_interpretation);
__host__ __device__ __nv_fp8x2_storage_t __nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw x, __nv_saturation_t saturate, __nv_fp8_interpretation_t fp8_interpretation);
__host__ __device__ __nv_fp8_storage_t __nv_cvt_float_to_e8m0(float x, __nv_saturation_t saturate, enum cudaRoundMode rounding);
__host__ __device__ __nv_fp8_storage_t __nv_cvt_double_to_e8m0(double x, __nv_saturation_t saturate, enum cudaRoundMode rounding);
__host__ __device__ __nv_fp8x2_storage_t __nv_cvt_float2_to_e8m0x2(float2 x, __nv_saturation_t saturate, enum cudaRoundMode rounding);
__host__ __device__ __nv_bfloat16_raw __nv_cvt_e8m0_to_bf16raw(__nv_fp8_storage_t x);
