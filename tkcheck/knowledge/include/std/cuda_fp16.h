// tkcheck stand-in for <cuda_fp16.h>: the __half / __half2 types and their conversion and
// arithmetic intrinsics. Declaration-only, written for tkcheck.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "../tkcheck_cuda_builtins.h"

struct __attribute__((aligned(2))) __half {
    unsigned short __x;
    __half() = default;
    __host__ __device__ __half(float f);
    __host__ __device__ __half(double f);
    __host__ __device__ __half(int i);
    __host__ __device__ __half(unsigned int i);
    __host__ __device__ __half(long long i);
    __host__ __device__ __half(unsigned long long i);
    __host__ __device__ __half(short i);
    __host__ __device__ __half(unsigned short i);
    __host__ __device__ operator float() const;
    __host__ __device__ __half &operator=(float f);
    __host__ __device__ __half &operator+=(const __half &o);
    __host__ __device__ __half &operator-=(const __half &o);
    __host__ __device__ __half &operator*=(const __half &o);
    __host__ __device__ __half &operator/=(const __half &o);
};
struct __attribute__((aligned(4))) __half2 {
    __half x, y;
    __half2() = default;
    __host__ __device__ constexpr __half2(const __half &a, const __half &b) : x(a), y(b) {}
    __host__ __device__ __half2 &operator+=(const __half2 &o);
    __host__ __device__ __half2 &operator*=(const __half2 &o);
};
typedef __half half;
typedef __half2 half2;
typedef struct { unsigned short x; } __half_raw;
typedef struct { unsigned short x, y; } __half2_raw;

__host__ __device__ __half operator+(const __half &a, const __half &b);
__host__ __device__ __half operator-(const __half &a, const __half &b);
__host__ __device__ __half operator*(const __half &a, const __half &b);
__host__ __device__ __half operator/(const __half &a, const __half &b);
__host__ __device__ __half operator-(const __half &a);
__host__ __device__ bool operator==(const __half &a, const __half &b);
__host__ __device__ bool operator!=(const __half &a, const __half &b);
__host__ __device__ bool operator<(const __half &a, const __half &b);
__host__ __device__ bool operator>(const __half &a, const __half &b);
__host__ __device__ bool operator<=(const __half &a, const __half &b);
__host__ __device__ bool operator>=(const __half &a, const __half &b);
__host__ __device__ __half2 operator+(const __half2 &a, const __half2 &b);
__host__ __device__ __half2 operator-(const __half2 &a, const __half2 &b);
__host__ __device__ __half2 operator*(const __half2 &a, const __half2 &b);
__host__ __device__ __half2 operator/(const __half2 &a, const __half2 &b);

__host__ __device__ __half __float2half(float);
__host__ __device__ __half __float2half_rn(float);
__host__ __device__ __half __float2half_rz(float);
__host__ __device__ float __half2float(__half);
__host__ __device__ __half __double2half(double);
__host__ __device__ __half2 __float2half2_rn(float);
__host__ __device__ __half2 __floats2half2_rn(float, float);
__host__ __device__ __half2 __float22half2_rn(float2);
__host__ __device__ float2 __half22float2(__half2);
__host__ __device__ float __low2float(__half2);
__host__ __device__ float __high2float(__half2);
__host__ __device__ __half __low2half(__half2);
__host__ __device__ __half __high2half(__half2);
__host__ __device__ __half2 __halves2half2(__half, __half);
__host__ __device__ __half2 __half2half2(__half);
__host__ __device__ __half __int2half_rn(int);
__host__ __device__ int __half2int_rn(__half);
__host__ __device__ __half __ushort_as_half(unsigned short);
__host__ __device__ unsigned short __half_as_ushort(__half);
__host__ __device__ __half __short_as_half(short);
__host__ __device__ short __half_as_short(__half);
__device__ __half __hadd(__half, __half);
__device__ __half __hsub(__half, __half);
__device__ __half __hmul(__half, __half);
__device__ __half __hdiv(__half, __half);
__device__ __half __hfma(__half, __half, __half);
__device__ __half __hneg(__half);
__device__ __half __habs(__half);
__device__ __half __hmax(__half, __half);
__device__ __half __hmin(__half, __half);
__device__ bool __hisnan(__half);
__device__ bool __hisinf(__half);
__device__ __half2 __hadd2(__half2, __half2);
__device__ __half2 __hsub2(__half2, __half2);
__device__ __half2 __hmul2(__half2, __half2);
__device__ __half2 __h2div(__half2, __half2);
__device__ __half2 __hfma2(__half2, __half2, __half2);
__device__ __half2 __hneg2(__half2);
__device__ __half2 __habs2(__half2);
__device__ __half2 __hmax2(__half2, __half2);
__device__ __half2 __hmin2(__half2, __half2);
__device__ __half hexp(__half);
__device__ __half hexp2(__half);
__device__ __half hlog(__half);
__device__ __half hlog2(__half);
__device__ __half hsqrt(__half);
__device__ __half hrsqrt(__half);
__device__ __half2 h2exp(__half2);
__device__ __half2 h2exp2(__half2);
__device__ __half2 h2log(__half2);
__device__ __half2 h2log2(__half2);
__device__ __half2 h2sqrt(__half2);
__device__ __half2 h2rsqrt(__half2);
