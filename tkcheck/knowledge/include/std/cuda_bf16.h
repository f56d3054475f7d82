// tkcheck stand-in for <cuda_bf16.h>: the __nv_bfloat16 / __nv_bfloat162 types and their
// conversion and arithmetic intrinsics. Declaration-only, written for tkcheck.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "../tkcheck_cuda_builtins.h"
#include "cuda_fp16.h"

struct __attribute__((aligned(2))) __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;
    __host__ __device__ __nv_bfloat16(float f);
    __host__ __device__ __nv_bfloat16(double f);
    __host__ __device__ __nv_bfloat16(int i);
    __host__ __device__ __nv_bfloat16(unsigned int i);
    __host__ __device__ __nv_bfloat16(long long i);
    __host__ __device__ __nv_bfloat16(unsigned long long i);
    __host__ __device__ __nv_bfloat16(short i);
    __host__ __device__ __nv_bfloat16(unsigned short i);
    __host__ __device__ operator float() const;
    __host__ __device__ __nv_bfloat16 &operator=(float f);
    __host__ __device__ __nv_bfloat16 &operator+=(const __nv_bfloat16 &o);
    __host__ __device__ __nv_bfloat16 &operator-=(const __nv_bfloat16 &o);
    __host__ __device__ __nv_bfloat16 &operator*=(const __nv_bfloat16 &o);
    __host__ __device__ __nv_bfloat16 &operator/=(const __nv_bfloat16 &o);
};
struct __attribute__((aligned(4))) __nv_bfloat162 {
    __nv_bfloat16 x, y;
    __nv_bfloat162() = default;
    __host__ __device__ constexpr __nv_bfloat162(const __nv_bfloat16 &a, const __nv_bfloat16 &b) : x(a), y(b) {}
    __host__ __device__ __nv_bfloat162 &operator+=(const __nv_bfloat162 &o);
    __host__ __device__ __nv_bfloat162 &operator*=(const __nv_bfloat162 &o);
};
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
typedef struct { unsigned short x; } __nv_bfloat16_raw;
typedef struct { unsigned short x, y; } __nv_bfloat162_raw;

__host__ __device__ __nv_bfloat16 operator+(const __nv_bfloat16 &a, const __nv_bfloat16 &b);
__host__ __device__ __nv_bfloat16 operator-(const __nv_bfloat16 &a, const __nv_bfloat16 &b);
__host__ __device__ __nv_bfloat16 operator*(const __nv_bfloat16 &a, const __nv_bfloat16 &b);
__host__ __device__ __nv_bfloat16 operator/(const __nv_bfloat16 &a, const __nv_bfloat16 &b);
__host__ __device__ __nv_bfloat16 operator-(const __nv_bfloat16 &a);
__host__ __device__ bool operator==(const __nv_bfloat16 &a, const __nv_bfloat16 &b);
__host__ __device__ bool operator!=(const __nv_bfloat16 &a, const __nv_bfloat16 &b);
__host__ __device__ bool operator<(const __nv_bfloat16 &a, const __nv_bfloat16 &b);
__host__ __device__ bool operator>(const __nv_bfloat16 &a, const __nv_bfloat16 &b);
__host__ __device__ bool operator<=(const __nv_bfloat16 &a, const __nv_bfloat16 &b);
__host__ __device__ bool operator>=(const __nv_bfloat16 &a, const __nv_bfloat16 &b);
__host__ __device__ __nv_bfloat162 operator+(const __nv_bfloat162 &a, const __nv_bfloat162 &b);
__host__ __device__ __nv_bfloat162 operator-(const __nv_bfloat162 &a, const __nv_bfloat162 &b);
__host__ __device__ __nv_bfloat162 operator*(const __nv_bfloat162 &a, const __nv_bfloat162 &b);
__host__ __device__ __nv_bfloat162 operator/(const __nv_bfloat162 &a, const __nv_bfloat162 &b);

__host__ __device__ __nv_bfloat16 __float2bfloat16(float);
__host__ __device__ __nv_bfloat16 __float2bfloat16_rn(float);
__host__ __device__ __nv_bfloat16 __float2bfloat16_rz(float);
__host__ __device__ __nv_bfloat16 __double2bfloat16(double);
__host__ __device__ float __bfloat162float(__nv_bfloat16);
__host__ __device__ __nv_bfloat162 __float2bfloat162_rn(float);
__host__ __device__ __nv_bfloat162 __floats2bfloat162_rn(float, float);
__host__ __device__ __nv_bfloat162 __float22bfloat162_rn(float2);
__host__ __device__ float2 __bfloat1622float2(__nv_bfloat162);
__host__ __device__ float __low2float(__nv_bfloat162);
__host__ __device__ float __high2float(__nv_bfloat162);
__host__ __device__ __nv_bfloat16 __low2bfloat16(__nv_bfloat162);
__host__ __device__ __nv_bfloat16 __high2bfloat16(__nv_bfloat162);
__host__ __device__ __nv_bfloat162 __halves2bfloat162(__nv_bfloat16, __nv_bfloat16);
__host__ __device__ __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16);
__host__ __device__ __nv_bfloat16 __int2bfloat16_rn(int);
__host__ __device__ int __bfloat162int_rn(__nv_bfloat16);
__host__ __device__ __nv_bfloat16 __ushort_as_bfloat16(unsigned short);
__host__ __device__ unsigned short __bfloat16_as_ushort(__nv_bfloat16);
__host__ __device__ __nv_bfloat16 __short_as_bfloat16(short);
__host__ __device__ short __bfloat16_as_short(__nv_bfloat16);
__device__ __nv_bfloat16 __hadd(__nv_bfloat16, __nv_bfloat16);
__device__ __nv_bfloat16 __hsub(__nv_bfloat16, __nv_bfloat16);
__device__ __nv_bfloat16 __hmul(__nv_bfloat16, __nv_bfloat16);
__device__ __nv_bfloat16 __hdiv(__nv_bfloat16, __nv_bfloat16);
__device__ __nv_bfloat16 __hfma(__nv_bfloat16, __nv_bfloat16, __nv_bfloat16);
__device__ __nv_bfloat16 __hneg(__nv_bfloat16);
__device__ __nv_bfloat16 __habs(__nv_bfloat16);
__device__ __nv_bfloat16 __hmax(__nv_bfloat16, __nv_bfloat16);
__device__ __nv_bfloat16 __hmin(__nv_bfloat16, __nv_bfloat16);
__device__ bool __hisnan(__nv_bfloat16);
__device__ bool __hisinf(__nv_bfloat16);
__device__ __nv_bfloat162 __hadd2(__nv_bfloat162, __nv_bfloat162);
__device__ __nv_bfloat162 __hsub2(__nv_bfloat162, __nv_bfloat162);
__device__ __nv_bfloat162 __hmul2(__nv_bfloat162, __nv_bfloat162);
__device__ __nv_bfloat162 __h2div(__nv_bfloat162, __nv_bfloat162);
__device__ __nv_bfloat162 __hfma2(__nv_bfloat162, __nv_bfloat162, __nv_bfloat162);
__device__ __nv_bfloat162 __hneg2(__nv_bfloat162);
__device__ __nv_bfloat162 __habs2(__nv_bfloat162);
__device__ __nv_bfloat162 __hmax2(__nv_bfloat162, __nv_bfloat162);
__device__ __nv_bfloat162 __hmin2(__nv_bfloat162, __nv_bfloat162);
__device__ __nv_bfloat16 hexp(__nv_bfloat16);
__device__ __nv_bfloat16 hexp2(__nv_bfloat16);
__device__ __nv_bfloat16 hlog(__nv_bfloat16);
__device__ __nv_bfloat16 hlog2(__nv_bfloat16);
__device__ __nv_bfloat16 hsqrt(__nv_bfloat16);
__device__ __nv_bfloat16 hrsqrt(__nv_bfloat16);
__device__ __nv_bfloat162 h2exp(__nv_bfloat162);
__device__ __nv_bfloat162 h2exp2(__nv_bfloat162);
__device__ __nv_bfloat162 h2log(__nv_bfloat162);
__device__ __nv_bfloat162 h2log2(__nv_bfloat162);
__device__ __nv_bfloat162 h2sqrt(__nv_bfloat162);
__device__ __nv_bfloat162 h2rsqrt(__nv_bfloat162);
