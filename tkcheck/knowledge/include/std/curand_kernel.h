// tkcheck stand-in for <curand_kernel.h>: device-side random number generation.
// Declaration-only, written for tkcheck.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "../tkcheck_cuda_builtins.h"
struct curandStateXORWOW { unsigned int d, v[5]; int boxmuller_flag, boxmuller_flag_double; float boxmuller_extra; double boxmuller_extra_double; };
typedef curandStateXORWOW curandState_t;
typedef curandStateXORWOW curandState;
struct curandStatePhilox4_32_10 { uint4 ctr, output; uint2 key; unsigned int STATE; int boxmuller_flag, boxmuller_flag_double; float boxmuller_extra; double boxmuller_extra_double; };
typedef curandStatePhilox4_32_10 curandStatePhilox4_32_10_t;
#define __TKC_CURAND(S) \
    __device__ void curand_init(unsigned long long seed, unsigned long long subsequence, unsigned long long offset, S *state); \
    __device__ unsigned int curand(S *state); \
    __device__ float curand_uniform(S *state); \
    __device__ double curand_uniform_double(S *state); \
    __device__ float curand_normal(S *state); \
    __device__ double curand_normal_double(S *state); \
    __device__ float2 curand_normal2(S *state); \
    __device__ float curand_log_normal(S *state, float mean, float stddev); \
    __device__ unsigned int curand_poisson(S *state, double lambda);
__TKC_CURAND(curandStateXORWOW)
__TKC_CURAND(curandStatePhilox4_32_10)
#undef __TKC_CURAND
__device__ float4 curand_uniform4(curandStatePhilox4_32_10 *state);
__device__ float4 curand_normal4(curandStatePhilox4_32_10 *state);
__device__ uint4 curand4(curandStatePhilox4_32_10 *state);
