// tkcheck: declaration-only model of the CUDA language builtins.
//
// Force-included (`-include tkcheck_cuda_builtins.h`) when tkcheck parses a kernel with
// libclang in CUDA device mode with `-nocudainc`: it stands in for what nvcc (or clang's
// __clang_cuda_runtime_wrapper.h) makes visible without any #include -- the execution-space
// keywords, the built-in index variables, vector types, warp/sync/atomic intrinsics, device
// math, and (through cuda_runtime.h) the host runtime API used by test harnesses.
//
// Written for tkcheck from the CUDA programming guide; nothing here is executable: bodies, where
// present, are empty stubs that only exist so that clang does not warn about used-but-undefined
// internal functions. Nothing in this file may be used to build a kernel.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#define __TKCHECK_DECL_MODEL__ 1

#ifndef __CUDACC__
#define __CUDACC__ 1
#endif
#ifndef __CUDACC_VER_MAJOR__
#define __CUDACC_VER_MAJOR__ 12
#define __CUDACC_VER_MINOR__ 8
#define __CUDACC_VER_BUILD__ 0
#endif

// ---------------------------------------------------------------- execution-space keywords
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __forceinline__ __inline__ __attribute__((always_inline))
// __noinline__ is understood by clang itself in CUDA mode (do not define it as a macro).
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
#define __device_builtin__
#define __cudart_builtin__
#define __location__(a) __attribute__((a))
#define CUDART_CB
// libclang 18 knows neither __grid_constant__ nor __cluster_dims__: keep them visible in the AST
// as annotate attributes (cursor kind ANNOTATE_ATTR, spelling "tkcheck_grid_constant" /
// "tkcheck_cluster_dims"); the arguments stay readable from the tokens of the declaration.
#define __grid_constant__ __attribute__((annotate("tkcheck_grid_constant")))
#define __cluster_dims__(...) __attribute__((annotate("tkcheck_cluster_dims", __VA_ARGS__)))
#define __maxnreg__(n) __attribute__((annotate("tkcheck_maxnreg", n)))
// `__block_size__((x, y, z))` (CUDA 12.9+): the block shape a kernel is compiled for; kept as a
// marker (the walk takes the block size from __launch_bounds__ and the launches)
#define __block_size__(...) __attribute__((annotate("tkcheck_block_size")))
// nvcc accepts `__shared__ alignas(128) float buf[...]`; clang rejects a C++11 attribute after
// the GNU attribute __shared__ expands to. Spell alignas as the GNU aligned attribute (accepted in
// every position alignas is) -- with an argument that may be a type or a constant expression.
template<int N> __host__ __device__ constexpr int __tkc_alignas() { return N; }
template<typename T> __host__ __device__ constexpr int __tkc_alignas() { return alignof(T); }
#define alignas(...) __attribute__((aligned(__tkc_alignas<__VA_ARGS__>())))
// nvcc reports a narrowing conversion inside braces (`coord<> c = {blockIdx.x, 0};`) as a warning
// and compiles the code; clang makes it an error. Follow nvcc.
#pragma clang diagnostic ignored "-Wc++11-narrowing"

// ---------------------------------------------------------------- fundamental typedefs
typedef decltype(sizeof(0)) size_t;
typedef decltype((int *)0 - (int *)0) ptrdiff_t;
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;
typedef long intmax_t;
typedef unsigned long uintmax_t;
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;
typedef long ssize_t;

// ---------------------------------------------------------------- vector types
#define __TKC_VEC1(N, T, A) \
    struct __attribute__((aligned(A))) N##1 { T x; }; \
    __host__ __device__ constexpr inline N##1 make_##N##1(T x) { return N##1{x}; }
#define __TKC_VEC2(N, T, A) \
    struct __attribute__((aligned(A))) N##2 { T x, y; }; \
    __host__ __device__ constexpr inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define __TKC_VEC3(N, T) \
    struct N##3 { T x, y, z; }; \
    __host__ __device__ constexpr inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }
#define __TKC_VEC4(N, T, A) \
    struct __attribute__((aligned(A))) N##4 { T x, y, z, w; }; \
    __host__ __device__ constexpr inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
#define __TKC_VECS(N, T, A2, A4) __TKC_VEC1(N, T, sizeof(T)) __TKC_VEC2(N, T, A2) __TKC_VEC3(N, T) __TKC_VEC4(N, T, A4)
__TKC_VECS(char, signed char, 2, 4)
__TKC_VECS(uchar, unsigned char, 2, 4)
__TKC_VECS(short, short, 4, 8)
__TKC_VECS(ushort, unsigned short, 4, 8)
__TKC_VECS(int, int, 8, 16)
__TKC_VECS(uint, unsigned int, 8, 16)
__TKC_VECS(long, long, 16, 16)
__TKC_VECS(ulong, unsigned long, 16, 16)
__TKC_VECS(longlong, long long, 16, 16)
__TKC_VECS(ulonglong, unsigned long long, 16, 16)
__TKC_VECS(float, float, 8, 16)
__TKC_VECS(double, double, 16, 16)
#undef __TKC_VEC1
#undef __TKC_VEC2
#undef __TKC_VEC3
#undef __TKC_VEC4
#undef __TKC_VECS

struct dim3 {
    unsigned int x, y, z;
    __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    __host__ __device__ constexpr operator uint3() const { return uint3{x, y, z}; }
};

// ---------------------------------------------------------------- built-in variables
extern __device__ const uint3 threadIdx;
extern __device__ const uint3 blockIdx;
extern __device__ const dim3 blockDim;
extern __device__ const dim3 gridDim;
constexpr int warpSize = 32;

// ---------------------------------------------------------------- synchronisation intrinsics
__device__ void __syncthreads();
__device__ int __syncthreads_count(int predicate);
__device__ int __syncthreads_and(int predicate);
__device__ int __syncthreads_or(int predicate);
__device__ void __syncwarp(unsigned int mask = 0xffffffffu);
__device__ void __threadfence();
// programmatic dependent launch (PTX griddepcontrol.wait / .launch_dependents): declared so a kernel
// calling them is analysed; each is a PDL event (knowledge/ops.THREAD_OPS)
__device__ void cudaGridDependencySynchronize();
__device__ void cudaTriggerProgrammaticLaunchCompletion();
__device__ void __threadfence_block();
__device__ void __threadfence_system();
__device__ void __nanosleep(unsigned int ns);
__device__ void __trap();
__device__ void __brkpt();
__device__ void __prof_trigger(int counter);
__device__ long long clock64();
__host__ __device__ long clock();

// thread-block clusters (sm_90+)
__device__ unsigned int __clusterDimIsSpecified();
__device__ dim3 __clusterDim();
__device__ dim3 __clusterRelativeBlockIdx();
__device__ dim3 __clusterGridDimInClusters();
__device__ dim3 __clusterIdx();
__device__ unsigned int __clusterRelativeBlockRank();
__device__ unsigned int __clusterSizeInBlocks();
__device__ void __cluster_barrier_arrive();
__device__ void __cluster_barrier_arrive_relaxed();
__device__ void __cluster_barrier_wait();
__device__ void __threadfence_cluster();

// warp vote / shuffle / match / reduce
__device__ unsigned int __ballot_sync(unsigned int mask, int predicate);
__device__ int __any_sync(unsigned int mask, int predicate);
__device__ int __all_sync(unsigned int mask, int predicate);
__device__ unsigned int __uni_sync(unsigned int mask, int predicate);
__device__ unsigned int __activemask();
template<typename T> __device__ T __shfl_sync(unsigned int mask, T var, int srcLane, int width = 32);
template<typename T> __device__ T __shfl_up_sync(unsigned int mask, T var, unsigned int delta, int width = 32);
template<typename T> __device__ T __shfl_down_sync(unsigned int mask, T var, unsigned int delta, int width = 32);
template<typename T> __device__ T __shfl_xor_sync(unsigned int mask, T var, int laneMask, int width = 32);
template<typename T> __device__ unsigned int __match_any_sync(unsigned int mask, T value);
template<typename T> __device__ unsigned int __match_all_sync(unsigned int mask, T value, int *pred);
__device__ unsigned int __reduce_add_sync(unsigned int mask, unsigned int value);
__device__ unsigned int __reduce_min_sync(unsigned int mask, unsigned int value);
__device__ unsigned int __reduce_max_sync(unsigned int mask, unsigned int value);
__device__ int __reduce_add_sync(unsigned int mask, int value);
__device__ int __reduce_min_sync(unsigned int mask, int value);
__device__ int __reduce_max_sync(unsigned int mask, int value);
__device__ unsigned int __reduce_and_sync(unsigned int mask, unsigned int value);
__device__ unsigned int __reduce_or_sync(unsigned int mask, unsigned int value);
__device__ unsigned int __reduce_xor_sync(unsigned int mask, unsigned int value);

// bit manipulation
__device__ int __popc(unsigned int x);
__device__ int __popcll(unsigned long long x);
__device__ int __clz(int x);
__device__ int __clzll(long long x);
__device__ int __ffs(int x);
__device__ int __ffsll(long long x);
__device__ unsigned int __brev(unsigned int x);
__device__ unsigned long long __brevll(unsigned long long x);
__device__ unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s);
__device__ unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift);
__device__ unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift);
__device__ unsigned int __fns(unsigned int mask, unsigned int base, int offset);
__device__ int __mul24(int x, int y);
__device__ int __mulhi(int x, int y);
__device__ unsigned int __umulhi(unsigned int x, unsigned int y);
__device__ unsigned long long __umul64hi(unsigned long long x, unsigned long long y);

// address-space conversion and cache-hinted loads/stores
__device__ size_t __cvta_generic_to_shared(const void *ptr);
__device__ size_t __cvta_generic_to_global(const void *ptr);
__device__ size_t __cvta_generic_to_constant(const void *ptr);
__device__ size_t __cvta_generic_to_local(const void *ptr);
__device__ void *__cvta_shared_to_generic(size_t addr);
__device__ void *__cvta_global_to_generic(size_t addr);
__device__ unsigned int __isShared(const void *ptr);
__device__ unsigned int __isGlobal(const void *ptr);
__device__ unsigned int __isConstant(const void *ptr);
__device__ unsigned int __isLocal(const void *ptr);
__device__ unsigned int __isClusterShared(const void *ptr);
__device__ void *__cluster_map_shared_rank(const void *ptr, unsigned int target_block_rank);
__device__ unsigned int __cluster_query_shared_rank(const void *ptr);
template<typename T> __device__ T __ldg(const T *ptr);
template<typename T> __device__ T __ldcg(const T *ptr);
template<typename T> __device__ T __ldca(const T *ptr);
template<typename T> __device__ T __ldcs(const T *ptr);
template<typename T> __device__ T __ldlu(const T *ptr);
template<typename T> __device__ T __ldcv(const T *ptr);
template<typename T> __device__ void __stwb(T *ptr, T value);
template<typename T> __device__ void __stcg(T *ptr, T value);
template<typename T> __device__ void __stcs(T *ptr, T value);
template<typename T> __device__ void __stwt(T *ptr, T value);

// atomics (generic over the operand type; the _block/_system scopes have the same shape)
#define __TKC_ATOMIC2(name) \
    template<typename T, typename U> __device__ T name(T *address, U val); \
    template<typename T, typename U> __device__ T name##_block(T *address, U val); \
    template<typename T, typename U> __device__ T name##_system(T *address, U val);
__TKC_ATOMIC2(atomicAdd)
__TKC_ATOMIC2(atomicSub)
__TKC_ATOMIC2(atomicExch)
__TKC_ATOMIC2(atomicMin)
__TKC_ATOMIC2(atomicMax)
__TKC_ATOMIC2(atomicAnd)
__TKC_ATOMIC2(atomicOr)
__TKC_ATOMIC2(atomicXor)
__TKC_ATOMIC2(atomicInc)
__TKC_ATOMIC2(atomicDec)
#undef __TKC_ATOMIC2
template<typename T, typename U, typename V> __device__ T atomicCAS(T *address, U compare, V val);
template<typename T, typename U, typename V> __device__ T atomicCAS_block(T *address, U compare, V val);
template<typename T, typename U, typename V> __device__ T atomicCAS_system(T *address, U compare, V val);

// ---------------------------------------------------------------- math (global namespace)
// Integer min/max as CUDA provides them; the template catches mixed-type calls
// (CUDA declares every signed/unsigned combination).
#define __TKC_MINMAX(T) \
    __host__ __device__ constexpr inline T min(T a, T b) { return a < b ? a : b; } \
    __host__ __device__ constexpr inline T max(T a, T b) { return a < b ? b : a; }
__TKC_MINMAX(int)
__TKC_MINMAX(unsigned int)
__TKC_MINMAX(long)
__TKC_MINMAX(unsigned long)
__TKC_MINMAX(long long)
__TKC_MINMAX(unsigned long long)
__TKC_MINMAX(float)
__TKC_MINMAX(double)
#undef __TKC_MINMAX
template<typename A, typename B> __host__ __device__ constexpr inline auto min(A a, B b) -> decltype(a < b ? a : b) { return a < b ? a : b; }
template<typename A, typename B> __host__ __device__ constexpr inline auto max(A a, B b) -> decltype(a < b ? b : a) { return a < b ? b : a; }
__host__ __device__ int abs(int);
__host__ __device__ long labs(long);
__host__ __device__ long long llabs(long long);
__host__ __device__ long abs(long);
__host__ __device__ long long abs(long long);
__host__ __device__ float abs(float);
__host__ __device__ double abs(double);
__device__ unsigned int umin(unsigned int, unsigned int);
__device__ unsigned int umax(unsigned int, unsigned int);
__device__ long long llmin(long long, long long);
__device__ long long llmax(long long, long long);
__device__ unsigned long long ullmin(unsigned long long, unsigned long long);
__device__ unsigned long long ullmax(unsigned long long, unsigned long long);

// one-argument float functions: fn(double), fn##f(float), fn(float) overload
#define __TKC_MATH1(fn) \
    __host__ __device__ double fn(double); \
    __host__ __device__ float fn##f(float); \
    __host__ __device__ float fn(float);
#define __TKC_MATH2(fn) \
    __host__ __device__ double fn(double, double); \
    __host__ __device__ float fn##f(float, float); \
    __host__ __device__ float fn(float, float);
__TKC_MATH1(sqrt) __TKC_MATH1(rsqrt) __TKC_MATH1(cbrt) __TKC_MATH1(exp) __TKC_MATH1(exp2) __TKC_MATH1(exp10)
__TKC_MATH1(expm1) __TKC_MATH1(log) __TKC_MATH1(log2) __TKC_MATH1(log10) __TKC_MATH1(log1p)
__TKC_MATH1(fabs) __TKC_MATH1(floor) __TKC_MATH1(ceil) __TKC_MATH1(round) __TKC_MATH1(trunc) __TKC_MATH1(rint)
__TKC_MATH1(nearbyint) __TKC_MATH1(sin) __TKC_MATH1(cos) __TKC_MATH1(tan) __TKC_MATH1(asin) __TKC_MATH1(acos)
__TKC_MATH1(atan) __TKC_MATH1(sinh) __TKC_MATH1(cosh) __TKC_MATH1(tanh) __TKC_MATH1(asinh) __TKC_MATH1(acosh)
__TKC_MATH1(atanh) __TKC_MATH1(erf) __TKC_MATH1(erfc) __TKC_MATH1(erfinv) __TKC_MATH1(lgamma) __TKC_MATH1(tgamma)
__TKC_MATH1(sinpi) __TKC_MATH1(cospi) __TKC_MATH1(normcdf) __TKC_MATH1(rcbrt)
__TKC_MATH2(pow) __TKC_MATH2(fmax) __TKC_MATH2(fmin) __TKC_MATH2(fmod) __TKC_MATH2(atan2) __TKC_MATH2(hypot)
__TKC_MATH2(copysign) __TKC_MATH2(remainder) __TKC_MATH2(fdim) __TKC_MATH2(nextafter)
// Integer arguments and mixed argument types promote to double, as <cmath> arranges.
#define __TKC_MATH1_INT(fn) \
    template<typename T> requires __is_integral(T) __host__ __device__ inline double fn(T x) { return fn(double(x)); }
#define __TKC_MATH2_MIX(fn) \
    template<typename A, typename B> requires (__is_arithmetic(A) && __is_arithmetic(B) && !(__is_same(A, B) && __is_floating_point(A))) \
    __host__ __device__ inline double fn(A a, B b) { return fn(double(a), double(b)); }
__TKC_MATH1_INT(sqrt) __TKC_MATH1_INT(cbrt) __TKC_MATH1_INT(exp) __TKC_MATH1_INT(exp2) __TKC_MATH1_INT(expm1)
__TKC_MATH1_INT(log) __TKC_MATH1_INT(log2) __TKC_MATH1_INT(log10) __TKC_MATH1_INT(log1p) __TKC_MATH1_INT(floor)
__TKC_MATH1_INT(ceil) __TKC_MATH1_INT(round) __TKC_MATH1_INT(trunc) __TKC_MATH1_INT(sin) __TKC_MATH1_INT(cos)
__TKC_MATH1_INT(tan) __TKC_MATH1_INT(tanh) __TKC_MATH1_INT(erf) __TKC_MATH1_INT(fabs)
__TKC_MATH2_MIX(pow) __TKC_MATH2_MIX(fmax) __TKC_MATH2_MIX(fmin) __TKC_MATH2_MIX(fmod) __TKC_MATH2_MIX(atan2)
__TKC_MATH2_MIX(hypot) __TKC_MATH2_MIX(copysign) __TKC_MATH2_MIX(remainder) __TKC_MATH2_MIX(fdim) __TKC_MATH2_MIX(nextafter)
#undef __TKC_MATH1
#undef __TKC_MATH2
#undef __TKC_MATH1_INT
#undef __TKC_MATH2_MIX
__host__ __device__ float fabs(float);
__host__ __device__ double fma(double, double, double);
__host__ __device__ float fmaf(float, float, float);
__host__ __device__ float fma(float, float, float);
__host__ __device__ double ldexp(double, int);
__host__ __device__ float ldexpf(float, int);
__host__ __device__ double frexp(double, int *);
__host__ __device__ float frexpf(float, int *);
__host__ __device__ void sincosf(float, float *, float *);
__host__ __device__ void sincos(double, double *, double *);
__host__ __device__ long lround(double);
__host__ __device__ long lroundf(float);
__host__ __device__ long long llround(double);
__host__ __device__ long long llroundf(float);
__host__ __device__ bool isnan(float);
__host__ __device__ bool isnan(double);
template<typename T> requires __is_integral(T) __host__ __device__ inline bool isnan(T) { return false; }
__host__ __device__ bool isinf(float);
__host__ __device__ bool isinf(double);
template<typename T> requires __is_integral(T) __host__ __device__ inline bool isinf(T) { return false; }
__host__ __device__ bool isfinite(float);
__host__ __device__ bool isfinite(double);
template<typename T> requires __is_integral(T) __host__ __device__ inline bool isfinite(T) { return true; }
__host__ __device__ bool signbit(float);
__host__ __device__ bool signbit(double);
__device__ int __isnanf(float);
__device__ int __isinff(float);
__device__ int __finitef(float);
// fast-math / rounding-mode intrinsics
__device__ float __expf(float);
__device__ float __exp10f(float);
__device__ float __logf(float);
__device__ float __log2f(float);
__device__ float __log10f(float);
__device__ float __powf(float, float);
__device__ float __sinf(float);
__device__ float __cosf(float);
__device__ float __tanf(float);
__device__ void __sincosf(float, float *, float *);
__device__ float __tanhf(float);
__device__ float __saturatef(float);
__device__ float __fdividef(float, float);
__device__ double __fdiv_rn(double, double);
#define __TKC_RND(op) \
    __device__ float op##_rn(float, float); __device__ float op##_rz(float, float); \
    __device__ float op##_ru(float, float); __device__ float op##_rd(float, float);
__TKC_RND(__fadd) __TKC_RND(__fsub) __TKC_RND(__fmul) __TKC_RND(__fdiv)
#undef __TKC_RND
__device__ double __dadd_rn(double, double);
__device__ double __dmul_rn(double, double);
__device__ float __fmaf_rn(float, float, float);
__device__ float __fmaf_rz(float, float, float);
__device__ double __fma_rn(double, double, double);
__device__ float __frcp_rn(float);
__device__ float __fsqrt_rn(float);
__device__ float __frsqrt_rn(float);
__device__ double __drcp_rn(double);
__device__ double __dsqrt_rn(double);
// bit casts and conversions
__device__ float __int_as_float(int);
__device__ int __float_as_int(float);
__device__ float __uint_as_float(unsigned int);
__device__ unsigned int __float_as_uint(float);
__device__ double __longlong_as_double(long long);
__device__ long long __double_as_longlong(double);
__device__ double __hiloint2double(int hi, int lo);
__device__ int __double2hiint(double);
__device__ int __double2loint(double);
#define __TKC_CVT(name, From, To) \
    __device__ To name##_rn(From); __device__ To name##_rz(From); __device__ To name##_ru(From); __device__ To name##_rd(From);
__TKC_CVT(__float2int, float, int) __TKC_CVT(__float2uint, float, unsigned int)
__TKC_CVT(__float2ll, float, long long) __TKC_CVT(__float2ull, float, unsigned long long)
__TKC_CVT(__int2float, int, float) __TKC_CVT(__uint2float, unsigned int, float)
__TKC_CVT(__ll2float, long long, float) __TKC_CVT(__ull2float, unsigned long long, float)
__TKC_CVT(__double2float, double, float) __TKC_CVT(__double2int, double, int)
__TKC_CVT(__double2uint, double, unsigned int) __TKC_CVT(__double2ll, double, long long)
__TKC_CVT(__int2double, int, double) __TKC_CVT(__ll2double, long long, double)
#undef __TKC_CVT
__device__ unsigned int __sad(int, int, unsigned int);
__device__ unsigned int __usad(unsigned int, unsigned int, unsigned int);
__device__ int __hadd(int, int);
__device__ int __rhadd(int, int);

// ---------------------------------------------------------------- assertions in device code
extern "C" __host__ __device__ void __assertfail(const char *message, const char *file, unsigned int line,
                                                 const char *function, size_t charSize);
extern "C" __host__ __device__ void __assert_fail(const char *assertion, const char *file, unsigned int line,
                                                  const char *function);

// ---------------------------------------------------------------- implicitly visible headers
// nvcc makes the runtime API and the C library's printf/malloc/memcpy visible without #include.
#include "std/cuda_runtime.h"
#include "std/cstdio"
#include "std/cstdlib"
#include "std/cstring"
#include "std/cuda_fp16.h"
#include "std/cuda_bf16.h"
#include "tkcheck_cuda_intrinsics.h"
// nvcc's implicit host headers bring the standard library's two-argument std::min / std::max
// into every .cu file (no #include needed; device code calls them with --expt-relaxed-constexpr)
#ifndef TKCHECK_STD_MINMAX
#define TKCHECK_STD_MINMAX 1
namespace std {
template<typename T> constexpr const T &min(const T &a, const T &b) { return b < a ? b : a; }
template<typename T> constexpr const T &max(const T &a, const T &b) { return a < b ? b : a; }
}
#endif

