// tkcheck: declaration-only model of the ThunderKittens (TK) API surface.
//
// tkcheck maps `#include "kittens.cuh"` to this file (libclang unsaved file) when the user does not
// point it at a real TK checkout. It exists so that libclang can resolve `st_bf<64, 64>`,
// `tma::load_async(...)`, `wait(bar, phase)`, `warpgroup::mma_AB(...)` ... in a user's kernel
// without the real headers, without a CUDA toolkit, and in well under a second.
//
// Written for tkcheck from TK's documented API (names, template parameters and call shapes);
// no TK source is copied. Nothing here computes anything: every function body is an empty stub
// (present only so clang does not warn about used-but-undefined internal functions). Where TK's
// exact overload set is long or version-dependent, a generic template stands in for it; the
// spelled name and the arguments of every call stay visible in libclang's AST, which is all the
// analysis needs. Execution scope (who issues the PTX) is NOT encoded here -- that knowledge
// lives in tkcheck/knowledge (CONTRACTS.md "Scope decides counts").
//
// Both the Hopper and the Blackwell surface are always declared. KITTENS_HOPPER /
// KITTENS_BLACKWELL are left to the user's build flags; only members whose presence depends on
// them in TK itself (the prototype templates' TMEM allocator) follow them.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#define TKCHECK_TK_MODEL 1

#include "tkcheck_cuda_builtins.h"
#include "std/cstddef"
#include "std/cstdint"
#include "std/type_traits"
#include "std/concepts"
#include "std/bit"
#include "std/utility"
#include "std/cuda_fp16.h"
#include "std/cuda_bf16.h"
#include "std/cuda_fp8.h"
#include "std/cuda_fp4.h"
#include "std/algorithm"
#include "std/cassert"
#include "std/cstdio"
#include "std/cstdlib"
#include "std/cuda.h"
#include "std/cuda_runtime.h"
#include "std/iostream"
#include "std/stdexcept"
#include "std/string"
#include "std/unistd.h"
#include "std/vector"
// Not included by TK itself, but reached transitively through the host standard library that
// real builds use; TK kernels and their harnesses rely on that.
#include "std/array"
#include "std/chrono"
#include "std/cmath"
#include "std/cstring"
#include "std/functional"
#include "std/iomanip"
#include "std/limits"
#include "std/map"
#include "std/memory"
#include "std/numeric"
#include "std/random"
#include "std/sstream"
#include "std/thread"
#include "std/tuple"

// ============================================================================ host-side macros
#define CUCHECK(cmd) do { CUresult __tkc_err = (cmd); if (__tkc_err != CUDA_SUCCESS) { const char *__tkc_s; cuGetErrorString(__tkc_err, &__tkc_s); fprintf(stderr, "Failed: CUDA error %s:%d '%s'\n", __FILE__, __LINE__, __tkc_s); exit(EXIT_FAILURE); } } while (0)
#define CUDACHECK(cmd) do { cudaError_t __tkc_err = (cmd); if (__tkc_err != cudaSuccess) { fprintf(stderr, "Failed: CUDA error %s:%d '%s'\n", __FILE__, __LINE__, cudaGetErrorString(__tkc_err)); exit(EXIT_FAILURE); } } while (0)
#define CHECK_CUDA_ERROR(val) ::kittens::check((val), #val, __FILE__, __LINE__)
#define KITTENS_ALIGN_AS(n) __align__(n)
#define KITTENS_DEFAULT_ALIGN KITTENS_ALIGN_AS(128)
// TK's convenience macro for "the plain type of this expression".
#define typeof(A) ::std::remove_cvref_t<decltype(A)>

namespace kittens {

// ============================================================================ element types
using bf16 = __nv_bfloat16;
using half = __half;
using bf16_2 = __nv_bfloat162;
using half_2 = __half2;
using fp8e4m3 = __nv_fp8_e4m3;
using fp8e5m2 = __nv_fp8_e5m2;
using fp8e8m0 = __nv_fp8_e8m0;
using fp8e4m3_2 = __nv_fp8x2_e4m3;
using fp8e5m2_2 = __nv_fp8x2_e5m2;
using fp8e8m0_2 = __nv_fp8x2_e8m0;
using fp8e4m3_4 = __nv_fp8x4_e4m3;
using fp8e5m2_4 = __nv_fp8x4_e5m2;
using fp8e8m0_4 = __nv_fp8x4_e8m0;
using fp4e2m1 = __nv_fp4_e2m1;
using fp4e2m1_2 = __nv_fp4x2_e2m1;
using fp4e2m1_4 = __nv_fp4x4_e2m1;

// ============================================================================ constants
constexpr int BASE_TILE_DIM = 16;
template<typename T> constexpr int TILE_COL_DIM = sizeof(T) == 1 ? 2 * BASE_TILE_DIM : BASE_TILE_DIM;
template<typename T> constexpr int TILE_ROW_DIM = BASE_TILE_DIM;
template<typename T> constexpr int TILE_ELEMENTS = TILE_COL_DIM<T> * TILE_ROW_DIM<T>;
constexpr int WARP_THREADS = 32;
constexpr int WARPGROUP_THREADS = 128;
constexpr int WARPGROUP_WARPS = 4;
#if defined(KITTENS_AMPERE) && !defined(KITTENS_HOPPER) && !defined(KITTENS_BLACKWELL)
constexpr int MAX_SHARED_MEMORY = 164 * 1024;
#else
constexpr int MAX_SHARED_MEMORY = 227 * 1024;
#endif
constexpr int MAX_TENSOR_ROWS = 128;  // TMEM lanes
constexpr int MAX_TENSOR_COLS = 512;  // TMEM 32-bit columns per CTA
static constexpr uint32_t MASK_ALL = 0xFFFFFFFFu;

struct transpose { static constexpr int N = 0; static constexpr int T = 1; };
struct axis { static constexpr int ROW = 0; static constexpr int COL = 1; };
struct dim { static constexpr int BATCH = 0; static constexpr int DEPTH = 1; static constexpr int ROW = 2; static constexpr int COL = 3; };
enum cache_policy { NORMAL = 0, EVICT_FIRST = 1, EVICT_LAST = 2 };
enum class reduce_op { ADD = 0, MIN = 1, MAX = 2 };
enum class memory_model { WEAK = 0, STRONG = 1 };

// ============================================================================ thread identity
__device__ static inline int warpid() { return 0; }       // threadIdx.x / 32
__device__ static inline int warpgroupid() { return 0; }  // threadIdx.x / 128
__device__ static inline int laneid() { return 0; }       // threadIdx.x % 32
__device__ static inline int smid() { return 0; }
__device__ static inline int3 clusterIdx() { return int3{}; }
__device__ static inline int3 clusterid() { return int3{}; }
__device__ static inline int3 nclusterid() { return int3{}; }
__device__ static inline int cluster_ctarank() { return 0; }
__device__ static inline int cluster_nctarank() { return 0; }

// ============================================================================ small utilities
template<typename T> __device__ static inline T packed_shfl_down_sync(uint32_t mask, const T &f, int delta) { return f; }
template<typename T> __device__ static inline T packed_shfl_sync(uint32_t mask, const T &f, int src) { return f; }
template<typename T> __host__ __device__ constexpr T cdiv(T a, T b) { return (a + b - 1) / b; }
struct KITTENS_DEFAULT_ALIGN alignment_dummy { int dummy; };
template<int SUPERGROUP_SIZE, bool ROW_MAJOR = true>
__device__ static inline int2 get_swizzled_2d_idx(const int num_rows, const int num_cols, const int linear_idx) { return int2{}; }
// Phase-bit bookkeeping of TK's pipelines: a 32-bit field, bit `ring_id` (half 0) or
// `ring_id + 16` (half 1) holds the parity a waiter passes to wait().
template<int half> __device__ static inline int get_phasebit(uint32_t bitfield, int ring_id) { return 0; }
template<int half> __device__ static inline void update_phasebit(uint32_t &bitfield, int ring_id) {}
template<int N> __device__ static inline int ring_advance(int ring, int distance = 1) { return (ring + distance) % N; }
template<int N> __device__ static inline int ring_retreat(int ring, int distance = 1) { return (ring + 16 * N - distance) % N; }

template<typename T> __host__ void check(T err, char const *const func, char const *const file, int const line) {}
__host__ static inline int num_sms(int device_id = -1) { return 0; }
template<bool CLUSTER = false, bool PDL = false> struct LaunchConfig {
    static constexpr unsigned int num_attributes = CLUSTER ? (PDL ? 3 : 2) : 1;
    cudaLaunchAttribute attributes[num_attributes];
    cudaLaunchConfig_t config;
    __host__ LaunchConfig(dim3 grid, dim3 block, size_t dynamic_shared_memory, cudaStream_t stream) noexcept requires(!CLUSTER);
    __host__ LaunchConfig(dim3 grid, dim3 block, size_t dynamic_shared_memory, cudaStream_t stream, dim3 cluster_preferred, dim3 cluster_minimum) noexcept requires(CLUSTER);
    __host__ LaunchConfig(dim3 grid, dim3 block, size_t dynamic_shared_memory, cudaStream_t stream, dim3 cluster) noexcept requires(CLUSTER);
    __host__ LaunchConfig(const LaunchConfig &other) noexcept;
    __host__ LaunchConfig &operator=(const LaunchConfig &other) noexcept;
    __host__ operator cudaLaunchConfig_t *() noexcept;
    __host__ operator const cudaLaunchConfig_t *() const noexcept;
};

// ============================================================================ base types & ops
namespace ducks {
struct default_type {};
namespace base_types {
template<typename T> concept T2 = std::is_same_v<T, float2> || std::is_same_v<T, bf16_2> || std::is_same_v<T, half_2> ||
    std::is_same_v<T, fp8e4m3_4> || std::is_same_v<T, fp8e5m2_4> || std::is_same_v<T, fp8e8m0_4> || std::is_same_v<T, fp4e2m1_4>;
template<typename T> concept T1 = std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, half> ||
    std::is_same_v<T, fp8e4m3> || std::is_same_v<T, fp8e5m2> || std::is_same_v<T, fp8e8m0> || std::is_same_v<T, fp4e2m1_2>;
}  // namespace base_types
}  // namespace ducks

namespace base_types {
template<typename T> struct constants {
    __device__ static constexpr T zero() { return T{}; }
    __device__ static constexpr T one() { return T{}; }
    __device__ static constexpr T pos_infty() { return T{}; }
    __device__ static constexpr T neg_infty() { return T{}; }
};
// packing<T>: a scalar type and its packed register form (2 x 16/32-bit, 4 x 8-bit).
template<typename T> struct packing {
    using unpacked_type = T;
    using packed_type = T;
    __device__ static constexpr int num() { return 1; }
    __device__ static constexpr T pack(const T &i) { return i; }
};
#define __TKC_PACKING(U, P, N_U, N_P) \
    template<> struct packing<U> { using unpacked_type = U; using packed_type = P; \
        __device__ static constexpr int num() { return N_U; } __device__ static constexpr P pack(const U &i) { return P{}; } }; \
    template<> struct packing<P> { using unpacked_type = U; using packed_type = P; \
        __device__ static constexpr int num() { return N_P; } __device__ static constexpr P pack(const U &i) { return P{}; } };
__TKC_PACKING(float, float2, 1, 2)
__TKC_PACKING(bf16, bf16_2, 1, 2)
__TKC_PACKING(half, half_2, 1, 2)
__TKC_PACKING(double, double2, 1, 2)
__TKC_PACKING(int, int2, 1, 2)
__TKC_PACKING(unsigned int, uint2, 1, 2)
__TKC_PACKING(short, short2, 1, 2)
__TKC_PACKING(unsigned short, ushort2, 1, 2)
__TKC_PACKING(unsigned char, uchar2, 1, 2)
__TKC_PACKING(fp8e4m3, fp8e4m3_4, 1, 4)
__TKC_PACKING(fp8e5m2, fp8e5m2_4, 1, 4)
__TKC_PACKING(fp8e8m0, fp8e8m0_4, 1, 4)
__TKC_PACKING(fp4e2m1_2, fp4e2m1_4, 1, 2)
#undef __TKC_PACKING
template<typename T, typename U> struct convertor {
    __host__ __device__ static inline T convert(const U &u) { return T{}; }
};
}  // namespace base_types

// Functors passed to TK's generic maps/reductions (unary_map<base_ops::exp>(...), ...).
namespace base_ops {
#define __TKC_OP0(name) struct name { template<typename T, typename... A> __device__ static constexpr T op(A... a) { return T{}; } };
#define __TKC_OP1(name) struct name { template<typename T> __device__ static inline T op(const T &x) { return x; } };
#define __TKC_OP2(name) struct name { template<typename T> __device__ static inline T op(const T &a, const T &b) { return a; } };
#define __TKC_OP3(name) struct name { template<typename T> __device__ static inline T op(const T &a, const T &b, const T &c) { return a; } };
__TKC_OP0(zero) __TKC_OP0(one) __TKC_OP0(pos_infty) __TKC_OP0(neg_infty)
__TKC_OP1(exp) __TKC_OP1(exp2) __TKC_OP1(log) __TKC_OP1(log2) __TKC_OP1(abs) __TKC_OP1(relu) __TKC_OP1(copy)
__TKC_OP2(copy2) __TKC_OP2(sum) __TKC_OP2(sub) __TKC_OP2(mul) __TKC_OP2(div) __TKC_OP2(max) __TKC_OP2(min)
__TKC_OP3(fma_AxBtC) __TKC_OP3(fma_AxCtB)
#undef __TKC_OP0
#undef __TKC_OP1
#undef __TKC_OP2
#undef __TKC_OP3
}  // namespace base_ops

template<typename T> struct multimem {
    template<reduce_op Op, memory_model M = memory_model::WEAK> __device__ static inline void ld_reduce(T &dst, const T *src) {}
    template<memory_model M = memory_model::WEAK> __device__ static inline void st(T *dst, const T &src) {}
    template<reduce_op Op> __device__ static inline void red(T *dst, const T &src) {}
};

// ============================================================================ type concepts
// Each TK type carries `using identifier = ducks::<kind>::identifier;` and is recognised by it.
namespace ducks {
#define __TKC_DUCK(kind) \
    namespace kind { struct identifier {}; \
    template<typename T> concept all = std::is_same_v<typename T::identifier, identifier>; }
__TKC_DUCK(st)
__TKC_DUCK(sv)
__TKC_DUCK(rt)
__TKC_DUCK(rv)
__TKC_DUCK(rt_base)
__TKC_DUCK(tt)
__TKC_DUCK(gl)
__TKC_DUCK(pgl)
__TKC_DUCK(cgl)
__TKC_DUCK(coord)
__TKC_DUCK(cst)
__TKC_DUCK(csv)
__TKC_DUCK(crt)
__TKC_DUCK(crv)
__TKC_DUCK(st_descriptor)
__TKC_DUCK(tensor_allocator)
namespace tma {
__TKC_DUCK(descriptor)
}
#undef __TKC_DUCK
namespace rt_layout {
struct row {};  // A operands, accumulators
struct col {};  // B operands of warp-level mma
template<typename T> concept all = std::is_same_v<T, row> || std::is_same_v<T, col>;
template<typename L> struct transpose { using type = col; };
template<> struct transpose<col> { using type = row; };
}  // namespace rt_layout
namespace rv_layout {
struct align { static constexpr int inner_dim = 2; };
struct ortho { static constexpr int inner_dim = 1; };
struct naive { static constexpr int inner_dim = 1; };
template<typename T> concept all = std::is_same_v<T, align> || std::is_same_v<T, ortho> || std::is_same_v<T, naive>;
}  // namespace rv_layout
namespace rt {
template<typename T> concept row_layout = all<T> && std::is_same_v<typename T::layout, rt_layout::row>;
template<typename T> concept col_layout = all<T> && std::is_same_v<typename T::layout, rt_layout::col>;
}
namespace crt {
template<typename T> concept row_layout = all<T> && std::is_same_v<typename T::layout, rt_layout::row>;
template<typename T> concept col_layout = all<T> && std::is_same_v<typename T::layout, rt_layout::col>;
}
namespace rv {
template<typename T> concept naive_layout = all<T> && std::is_same_v<typename T::layout, rv_layout::naive>;
template<typename T> concept align_layout = all<T> && std::is_same_v<typename T::layout, rv_layout::align>;
template<typename T> concept ortho_layout = all<T> && std::is_same_v<typename T::layout, rv_layout::ortho>;
template<typename T> concept tile_layout = align_layout<T> || ortho_layout<T>;
}
namespace tt {
template<typename T> concept half = all<T> && T::rows == MAX_TENSOR_ROWS / 2;
template<typename T> concept full = all<T> && T::rows == MAX_TENSOR_ROWS;
}
namespace st_descriptor {
template<typename T> concept input = st::all<T> || all<T>;
template<typename T> concept complex_input = cst::all<T>;
}
namespace gl {
template<int d> concept cdim = (d > 0);   // compile-time dimension
template<int d> concept rdim = (d == -1); // runtime dimension
}
// tkcheck groupings used to constrain the generic op declarations below.
template<typename T> concept tk_tile = st::all<T> || rt::all<T> || cst::all<T> || crt::all<T>;
template<typename T> concept tk_vec = sv::all<T> || rv::all<T> || csv::all<T> || crv::all<T>;
template<typename T> concept tk_data = tk_tile<T> || tk_vec<T> || tt::all<T>;
template<typename T> concept tk_global = gl::all<T> || pgl::all<T> || cgl::all<T>;
}  // namespace ducks

namespace detail {
template<typename T> concept tile = ducks::st::all<T> || ducks::rt::all<T> || ducks::cst::all<T> || ducks::crt::all<T>;
template<typename T> concept vec = ducks::sv::all<T> || ducks::rv::all<T> || ducks::csv::all<T> || ducks::crv::all<T>;
}

// ============================================================================ shared tiles / vectors
template<typename _T, size_t _length> struct sv;

template<typename ST, int _subtile_rows, int _subtile_cols> struct st_subtile;

// st<T, rows, cols>: a shared-memory tile of rows x cols elements (rows % 16 == 0; cols a multiple
// of 16, or 32 for 1-byte types). With swizzle (default) it is stored as column panels of
// swizzle_bytes/sizeof(T) elements, each address XOR-swizzled by ((addr % (swizzle_bytes*8)) >> 7) << 4.
template<typename _T, int _rows, int _cols, bool _swizzle = true, int _swizzle_bytes = 0>
struct KITTENS_DEFAULT_ALIGN st {
    using identifier = ducks::st::identifier;
    using T = typename base_types::packing<_T>::unpacked_type;
    using T2 = typename base_types::packing<_T>::packed_type;
    using dtype = T;
    static constexpr bool swizzle = _swizzle;
    static constexpr int underlying_rows = _rows;
    static constexpr int underlying_cols = _cols;
    static constexpr int underlying_num_elements = _rows * _cols;
    static constexpr int rows = _rows;
    static constexpr int cols = _cols;
    static constexpr int num_elements = rows * cols;
    static constexpr int height = rows / TILE_ROW_DIM<T>;  // in 16-row base tiles
    static constexpr int width = cols / TILE_COL_DIM<T>;   // in base-tile columns
    // Swizzle width: explicit, else chosen from the number of base-tile columns.
    static constexpr int swizzle_bytes = _swizzle_bytes > 0 ? _swizzle_bytes
        : (sizeof(dtype) <= 2 ? ((cols / TILE_COL_DIM<T>) % 4 == 0 ? 128 : (cols / TILE_COL_DIM<T>) % 2 == 0 ? 64 : 32)
           : sizeof(dtype) == 4 ? ((cols / TILE_COL_DIM<T>) % 2 == 0 ? 128 : 64) : -1);
    dtype data[rows * cols];
    __device__ static inline T *idx(T *ptr, int2 coord) { return ptr; }
    __device__ static inline uint32_t idx(uint32_t ptr, int2 coord) { return ptr; }
    __device__ inline dtype &operator[](const int2 &rowcol) { return data[0]; }
    __device__ inline const dtype &operator[](const int2 &rowcol) const { return data[0]; }
    __device__ inline dtype &operator[](int i) { return data[i]; }
    __device__ inline const dtype &operator[](int i) const { return data[i]; }
    template<int subtile_rows, int subtile_cols>
    __device__ inline st_subtile<st, subtile_rows, subtile_cols> subtile(int2 rowcol);
    // column-panel view of a swizzled tile (subtile_cols a multiple of the swizzle panel)
    template<int subtile_cols>
    __device__ inline st<_T, _rows, subtile_cols, _swizzle, swizzle_bytes> &subtile(int i) {
        return *reinterpret_cast<st<_T, _rows, subtile_cols, _swizzle, swizzle_bytes> *>(&data[0]);
    }
    using col_vec = sv<dtype, rows>;
    using row_vec = sv<dtype, cols>;
};

// A (rows x cols) window of a parent shared tile starting at (rowcol.x*rows, rowcol.y*cols);
// it addresses with the parent's layout and swizzle.
template<typename _ST, int _subtile_rows, int _subtile_cols>
struct st_subtile {
    using identifier = ducks::st::identifier;
    using ST = _ST;
    using T = typename ST::T;
    using T2 = typename ST::T2;
    using dtype = T;
    static constexpr bool swizzle = ST::swizzle;
    static constexpr int underlying_rows = ST::underlying_rows;
    static constexpr int underlying_cols = ST::underlying_cols;
    static constexpr int underlying_num_elements = ST::underlying_num_elements;
    static constexpr int rows = _subtile_rows;
    static constexpr int cols = _subtile_cols;
    static constexpr int num_elements = rows * cols;
    static constexpr int height = rows / TILE_ROW_DIM<T>;
    static constexpr int width = cols / TILE_COL_DIM<T>;
    static constexpr int swizzle_bytes = ST::swizzle_bytes;
    dtype *data;
    int row_offset, col_offset;
    __device__ st_subtile(ST &src, int2 rowcol) : data(&src.data[0]), row_offset(rowcol.x * rows), col_offset(rowcol.y * cols) {}
    __device__ inline T *idx(T *ptr, const int2 coord) const { return ptr; }
    __device__ inline uint32_t idx(uint32_t ptr, const int2 coord) const { return ptr; }
    __device__ inline dtype &operator[](const int2 &rowcol) { return data[0]; }
    __device__ inline const dtype &operator[](const int2 &rowcol) const { return data[0]; }
    using col_vec = sv<dtype, rows>;
    using row_vec = sv<dtype, cols>;
    __device__ inline void operator=(const dtype &value) {}
};

template<typename _T, int _rows, int _cols, bool _swizzle, int _swizzle_bytes>
template<int subtile_rows, int subtile_cols>
__device__ inline st_subtile<st<_T, _rows, _cols, _swizzle, _swizzle_bytes>, subtile_rows, subtile_cols>
st<_T, _rows, _cols, _swizzle, _swizzle_bytes>::subtile(int2 rowcol) {
    return st_subtile<st, subtile_rows, subtile_cols>(*this, rowcol);
}

template<int _rows, int _cols, bool _swizzle = true, int _swizzle_bytes = 0> using st_bf = st<bf16, _rows, _cols, _swizzle, _swizzle_bytes>;
template<int _rows, int _cols, bool _swizzle = true, int _swizzle_bytes = 0> using st_hf = st<half, _rows, _cols, _swizzle, _swizzle_bytes>;
template<int _rows, int _cols, bool _swizzle = true, int _swizzle_bytes = 0> using st_fl = st<float, _rows, _cols, _swizzle, _swizzle_bytes>;
template<int _rows, int _cols, bool _swizzle = true, int _swizzle_bytes = 0> using st_fp8e4m3 = st<fp8e4m3, _rows, _cols, _swizzle, _swizzle_bytes>;
template<int _rows, int _cols, bool _swizzle = true, int _swizzle_bytes = 0> using st_fp8e5m2 = st<fp8e5m2, _rows, _cols, _swizzle, _swizzle_bytes>;
template<int _rows, int _cols, bool _swizzle = true, int _swizzle_bytes = 0> using st_fp8e8m0 = st<fp8e8m0, _rows, _cols, _swizzle, _swizzle_bytes>;
template<int _rows, int _cols, bool _swizzle = true, int _swizzle_bytes = 0> using st_fp4e2m1_2 = st<fp4e2m1_2, _rows, _cols, _swizzle, _swizzle_bytes>;

// sv<T, length>: a shared-memory vector (allocation rounded up to 128 bytes on Hopper/Blackwell).
template<typename _T, size_t _length>
struct KITTENS_DEFAULT_ALIGN sv {
    using identifier = ducks::sv::identifier;
    using T = typename base_types::packing<_T>::unpacked_type;
    using T2 = typename base_types::packing<_T>::packed_type;
    using dtype = T;
    static constexpr int length = _length;
    static constexpr int tiles = length / TILE_ROW_DIM<T>;
    static constexpr int num_alloc_elements = ((length * sizeof(dtype) + 127) / 128) * (128 / sizeof(dtype));
    dtype data[num_alloc_elements];
    __device__ static inline T *idx(T *ptr, int i) { return ptr; }
    __device__ inline dtype &operator[](size_t i) { return data[i]; }
    __device__ inline const dtype &operator[](size_t i) const { return data[i]; }
    template<int sub_length> __device__ inline sv<_T, sub_length> &subvec(int i) { return *reinterpret_cast<sv<_T, sub_length> *>(&data[0]); }
    template<int sub_length> __device__ inline const sv<_T, sub_length> &subvec(int i) const { return *reinterpret_cast<const sv<_T, sub_length> *>(&data[0]); }
    __device__ inline void operator=(const dtype &value) {}
};
template<size_t _length> using sv_bf = sv<bf16, _length>;
template<size_t _length> using sv_hf = sv<half, _length>;
template<size_t _length> using sv_fl = sv<float, _length>;
template<size_t _length> using sv_fp8e4m3 = sv<fp8e4m3, _length>;
template<size_t _length> using sv_fp8e5m2 = sv<fp8e5m2, _length>;
template<size_t _length> using sv_fp8e8m0 = sv<fp8e8m0, _length>;
template<size_t _length> using sv_fp4e2m1_2 = sv<fp4e2m1_2, _length>;

// Complex shared tile / vector: a real and an imaginary component.
template<typename _T, int _rows, int _cols>
struct cst {
    using identifier = ducks::cst::identifier;
    using component = st<_T, _rows, _cols>;
    using T = typename component::T;
    using T2 = typename component::T2;
    using dtype = typename component::dtype;
    static constexpr int rows = component::rows;
    static constexpr int cols = component::cols;
    static constexpr int height = component::height;
    static constexpr int width = component::width;
    static constexpr int num_elements = component::num_elements;
    component real, imag;
};
template<int _rows, int _cols> using cst_bf = cst<bf16, _rows, _cols>;
template<int _rows, int _cols> using cst_hf = cst<half, _rows, _cols>;
template<int _rows, int _cols> using cst_fl = cst<float, _rows, _cols>;
template<typename _T, size_t _length>
struct csv {
    using identifier = ducks::csv::identifier;
    using component = sv<_T, _length>;
    using T = typename component::T;
    using dtype = typename component::dtype;
    static constexpr int length = component::length;
    static constexpr int tiles = component::tiles;
    component real, imag;
};
template<size_t _length> using csv_bf = csv<bf16, _length>;
template<size_t _length> using csv_hf = csv<half, _length>;
template<size_t _length> using csv_fl = csv<float, _length>;

// Hopper/Blackwell MMA shared-memory descriptor over a tile (MN_major: operand transposed).
template<typename _ST, int MN_major>
struct st_descriptor {
    using identifier = ducks::st_descriptor::identifier;
    using ST = _ST;
    using T = typename ST::T;
    static constexpr int rows = ST::rows;
    static constexpr int cols = ST::cols;
    static constexpr bool swizzle = ST::swizzle;
    uint64_t base_desc;
    __device__ inline st_descriptor(const ST &tile) : base_desc(0) {}
    __device__ inline st_descriptor(const st_descriptor &other) : base_desc(other.base_desc) {}
    __device__ inline uint64_t chunk_descriptor(int chunk_idx) const { return base_desc; }
};

// ============================================================================ register tiles / vectors
template<typename _T, ducks::rt_layout::all _layout>
struct rt_base {
    using identifier = ducks::rt_base::identifier;
    using layout = _layout;
    using T = typename base_types::packing<_T>::unpacked_type;
    using T2 = typename base_types::packing<_T>::packed_type;
    using dtype = T2;
    static constexpr int tile_size_row = TILE_ROW_DIM<T>;
    static constexpr int tile_size_col = TILE_COL_DIM<T>;
    static constexpr int rows = tile_size_row;
    static constexpr int cols = tile_size_col;
    static constexpr int num_elements = rows * cols;
    static constexpr int elements_per_thread = num_elements / 32;
    static constexpr int packed_per_thread = elements_per_thread / base_types::packing<dtype>::num();
    static constexpr int registers_per_thread = packed_per_thread * sizeof(dtype) / 4;
    using row_vec_layout = std::conditional_t<std::is_same_v<layout, ducks::rt_layout::row>, ducks::rv_layout::align, ducks::rv_layout::ortho>;
    using col_vec_layout = std::conditional_t<std::is_same_v<layout, ducks::rt_layout::row>, ducks::rv_layout::ortho, ducks::rv_layout::align>;
    dtype data[packed_per_thread];
};
template<ducks::rt_layout::all L = ducks::rt_layout::row> using rt_base_fl = rt_base<float, L>;
template<ducks::rt_layout::all L = ducks::rt_layout::row> using rt_base_bf = rt_base<bf16, L>;
template<ducks::rt_layout::all L = ducks::rt_layout::row> using rt_base_hf = rt_base<half, L>;

// rv<T, length, layout>: a register vector distributed across a warp.
template<typename _T, size_t _length, ducks::rv_layout::all _layout = ducks::rv_layout::naive>
struct rv {
    using identifier = ducks::rv::identifier;
    using layout = _layout;
    static constexpr bool is_naive = std::is_same_v<layout, ducks::rv_layout::naive>;
    using T = typename base_types::packing<_T>::unpacked_type;
    using T2 = typename base_types::packing<_T>::packed_type;
    using dtype = std::conditional_t<is_naive, T, T2>;
    static constexpr int length = _length;
    static constexpr int tiles = _length / TILE_ROW_DIM<T>;
    static constexpr int inner_dim = layout::inner_dim;
    static constexpr int outer_dim = is_naive ? (tiles + 1) / 2 : tiles;
    dtype data[outer_dim > 0 ? outer_dim : 1][inner_dim];
    __device__ inline dtype *operator[](size_t i) { return &data[i][0]; }
    __device__ inline const dtype *operator[](size_t i) const { return &data[i][0]; }
    __device__ inline dtype &operator[](int2 outin) { return data[outin.x][outin.y]; }
    __device__ inline const dtype &operator[](int2 outin) const { return data[outin.x][outin.y]; }
    __device__ inline void operator=(const T &value) {}
    template<typename U> __device__ inline void operator=(const rv<U, _length, _layout> &other) {}
};
template<int _l, ducks::rv_layout::all layout = ducks::rv_layout::naive> using rv_fl = rv<float, _l, layout>;
template<int _l, ducks::rv_layout::all layout = ducks::rv_layout::naive> using rv_bf = rv<bf16, _l, layout>;
template<int _l, ducks::rv_layout::all layout = ducks::rv_layout::naive> using rv_hf = rv<half, _l, layout>;

// rt<T, rows, cols, layout>: a register tile held by one warp (a warpgroup MMA accumulator of
// 64 x N is a rt_fl<16, N> per warp).
template<typename _T, int _rows, int _cols, ducks::rt_layout::all _layout = ducks::rt_layout::row>
struct rt {
    using identifier = ducks::rt::identifier;
    using layout = _layout;
    using T = typename base_types::packing<_T>::unpacked_type;
    using T2 = typename base_types::packing<_T>::packed_type;
    using dtype = T2;
    static constexpr int rows = _rows;
    static constexpr int cols = _cols;
    static constexpr int tile_size_row = rt_base<T, layout>::tile_size_row;
    static constexpr int tile_size_col = rt_base<T, layout>::tile_size_col;
    static constexpr int height = rows / tile_size_row;
    static constexpr int width = cols / tile_size_col;
    static constexpr int num_elements = rt_base<T, layout>::num_elements * width * height;
    static constexpr int elements_per_thread = rt_base<T, layout>::elements_per_thread * width * height;
    static constexpr int packed_per_thread = rt_base<T, layout>::packed_per_thread * width * height;
    static constexpr int packed_per_tile = rt_base<T, layout>::packed_per_thread;
    rt_base<T, layout> tiles[height > 0 ? height : 1][width > 0 ? width : 1];
    using row_vec = rv<T, cols, typename rt_base<T, layout>::row_vec_layout>;
    using col_vec = rv<T, rows, typename rt_base<T, layout>::col_vec_layout>;
    __device__ inline void operator=(const T &value) {}
    template<typename U> __device__ inline void operator=(const rt<U, _rows, _cols, _layout> &other) {}
};
template<int _r, int _c, ducks::rt_layout::all layout = ducks::rt_layout::row> using rt_fl = rt<float, _r, _c, layout>;
template<int _r, int _c, ducks::rt_layout::all layout = ducks::rt_layout::row> using rt_bf = rt<bf16, _r, _c, layout>;
template<int _r, int _c, ducks::rt_layout::all layout = ducks::rt_layout::row> using rt_hf = rt<half, _r, _c, layout>;
template<int _r, int _c, ducks::rt_layout::all layout = ducks::rt_layout::row> using rt_fp8e4m3 = rt<fp8e4m3, _r, _c, layout>;
template<int _r, int _c, ducks::rt_layout::all layout = ducks::rt_layout::row> using rt_fp8e5m2 = rt<fp8e5m2, _r, _c, layout>;
template<int _r, int _c, ducks::rt_layout::all layout = ducks::rt_layout::row> using rt_fp8e8m0 = rt<fp8e8m0, _r, _c, layout>;
template<int _r, int _c, ducks::rt_layout::all layout = ducks::rt_layout::row> using rt_fp4e2m1_2 = rt<fp4e2m1_2, _r, _c, layout>;

template<typename _T, int _rows, int _cols, ducks::rt_layout::all _layout = ducks::rt_layout::row>
struct crt {
    using identifier = ducks::crt::identifier;
    using component = rt<_T, _rows, _cols, _layout>;
    using layout = _layout;
    using T = typename component::T;
    using T2 = typename component::T2;
    using dtype = typename component::dtype;
    static constexpr int rows = component::rows;
    static constexpr int cols = component::cols;
    static constexpr int height = component::height;
    static constexpr int width = component::width;
    static constexpr int num_elements = component::num_elements;
    component real, imag;
};
template<int _r, int _c, ducks::rt_layout::all layout = ducks::rt_layout::row> using crt_fl = crt<float, _r, _c, layout>;
template<int _r, int _c, ducks::rt_layout::all layout = ducks::rt_layout::row> using crt_bf = crt<bf16, _r, _c, layout>;
template<int _r, int _c, ducks::rt_layout::all layout = ducks::rt_layout::row> using crt_hf = crt<half, _r, _c, layout>;
template<typename _T, size_t _length, ducks::rv_layout::all _layout = ducks::rv_layout::naive>
struct crv {
    using identifier = ducks::crv::identifier;
    using component = rv<_T, _length, _layout>;
    using layout = _layout;
    using T = typename component::T;
    using dtype = typename component::dtype;
    static constexpr int length = component::length;
    component real, imag;
};
template<int _l, ducks::rv_layout::all layout = ducks::rv_layout::naive> using crv_fl = crv<float, _l, layout>;
template<int _l, ducks::rv_layout::all layout = ducks::rv_layout::naive> using crv_bf = crv<bf16, _l, layout>;

template<typename T> using row_vec = typename T::row_vec;
template<typename T> using col_vec = typename T::col_vec;
using row_l = ducks::rt_layout::row;
using col_l = ducks::rt_layout::col;
using align_l = ducks::rv_layout::align;
using ortho_l = ducks::rv_layout::ortho;
using naive_l = ducks::rv_layout::naive;

// ============================================================================ tensor memory (Blackwell)
// tt<T, rows, cols>: a TMEM region (lanes x columns) addressed by a 32-bit TMEM address.
template<typename _T, int _rows, int _cols>
struct tt {
    using identifier = ducks::tt::identifier;
    using T = typename base_types::packing<_T>::unpacked_type;
    using T2 = typename base_types::packing<_T>::packed_type;
    using dtype = T;
    static constexpr int rows = _rows;
    static constexpr int cols = _cols;
    uint32_t addr;
    __device__ inline tt() : addr(0) {}
    __device__ inline tt(uint32_t a) : addr(a) {}
    template<ducks::tt::all TT> __device__ inline TT subtile(int row_offset, int col_offset) const { return TT(addr); }
    template<ducks::tt::all TT> __device__ inline TT subtile(int col_offset) const { return TT(addr); }
    template<int transpose> __device__ inline uint32_t chunk_addr(int chunk) const { return addr; }
};
template<int _rows, int _cols> using tt_bf = tt<bf16, _rows, _cols>;
template<int _rows, int _cols> using tt_hf = tt<half, _rows, _cols>;
template<int _rows, int _cols> using tt_fl = tt<float, _rows, _cols>;
template<int _rows, int _cols> using tt_fp8e4m3 = tt<fp8e4m3, _rows, _cols>;
template<int _rows, int _cols> using tt_fp8e5m2 = tt<fp8e5m2, _rows, _cols>;
template<int _rows, int _cols> using tt_fp8e8m0 = tt<fp8e8m0, _rows, _cols>;
template<int _rows, int _cols> using tt_fp4e2m1_2 = tt<fp4e2m1_2, _rows, _cols>;
template<int _cols> using half_tt_bf = tt<bf16, MAX_TENSOR_ROWS / 2, _cols>;
template<int _cols> using half_tt_hf = tt<half, MAX_TENSOR_ROWS / 2, _cols>;
template<int _cols> using half_tt_fl = tt<float, MAX_TENSOR_ROWS / 2, _cols>;
template<int _cols> using half_tt_fp8e4m3 = tt<fp8e4m3, MAX_TENSOR_ROWS / 2, _cols>;
template<int _cols> using half_tt_fp8e5m2 = tt<fp8e5m2, MAX_TENSOR_ROWS / 2, _cols>;
template<int _cols> using half_tt_fp8e8m0 = tt<fp8e8m0, MAX_TENSOR_ROWS / 2, _cols>;
template<int _cols> using half_tt_fp4e2m1_2 = tt<fp4e2m1_2, MAX_TENSOR_ROWS / 2, _cols>;
template<int _cols> using full_tt_bf = tt<bf16, MAX_TENSOR_ROWS, _cols>;
template<int _cols> using full_tt_hf = tt<half, MAX_TENSOR_ROWS, _cols>;
template<int _cols> using full_tt_fl = tt<float, MAX_TENSOR_ROWS, _cols>;
template<int _cols> using full_tt_fp8e4m3 = tt<fp8e4m3, MAX_TENSOR_ROWS, _cols>;
template<int _cols> using full_tt_fp8e5m2 = tt<fp8e5m2, MAX_TENSOR_ROWS, _cols>;
template<int _cols> using full_tt_fp8e8m0 = tt<fp8e8m0, MAX_TENSOR_ROWS, _cols>;
template<int _cols> using full_tt_fp4e2m1_2 = tt<fp4e2m1_2, MAX_TENSOR_ROWS, _cols>;

// tensor_allocator<nblocks_per_sm, ncta, managed>: owns this CTA's TMEM columns. When managed, its
// constructor allocates (warp 0, tcgen05.alloc) and its destructor frees; allocate<TT>(...) hands
// out tt views at a column offset (full tiles: (col); half tiles: (superlane, col)).
template<int _nblocks_per_sm, int _ncta, bool _managed = true>
struct tensor_allocator {
    using identifier = ducks::tensor_allocator::identifier;
    static constexpr int nblocks_per_sm = _nblocks_per_sm;
    static constexpr int cols = ((MAX_TENSOR_COLS / nblocks_per_sm) / 32) * 32;
    static constexpr int ncta = _ncta;
    static constexpr bool managed = _managed;
    uint32_t addr;
    template<ducks::tt::all TT, int col_offset> __device__ inline void check_bounds() {}
    __device__ inline void set_addr(uint32_t _addr) { addr = _addr; }
    __device__ inline uint32_t get_addr(int superlane, int col_offset) const { return addr; }
    __device__ inline uint32_t get_addr(int col_offset) const { return addr; }
    __device__ inline void provision(uint32_t &shared_addr) {}
    __device__ inline tensor_allocator() : addr(0) {}
    template<ducks::tt::all TT> __device__ inline TT allocate(int superlane, int col_offset) { return TT(addr); }
    template<ducks::tt::all TT> __device__ inline TT allocate(int col_offset) { return TT(addr); }
    __device__ inline void deprovision() {}
    __device__ inline ~tensor_allocator() {}
};
// Older spelling used by some kernels.
template<int _nblocks_per_sm, int _ncta, bool _managed = true> using tm_allocator = tensor_allocator<_nblocks_per_sm, _ncta, _managed>;

// ============================================================================ global layouts
namespace ducks {
namespace gl {
template<int _v> struct compiled_dim {
    static constexpr size_t v = _v;
    __host__ __device__ inline compiled_dim(const std::nullptr_t &) {}
    __host__ __device__ inline constexpr operator size_t() const { return v; }
};
struct runtime_dim {
    size_t v;
    __host__ __device__ inline runtime_dim(const size_t &_v) : v(_v) {}
    __host__ __device__ inline operator size_t() const { return v; }
};
template<int d> using make_dim_t = std::conditional_t<(d == -1), runtime_dim, compiled_dim<d>>;
// Constructor argument per dimension: size_t for a runtime (-1) dimension, nullptr for a fixed one.
template<int d> using make_arg_t = std::conditional_t<(d == -1), size_t, std::nullptr_t>;
}  // namespace gl
}  // namespace ducks

// coord<T>: (batch, depth, row, col) -- in units of T's rows/cols when T is a tile, of T::length
// when T is a vector, of elements for the default type. Brace lists {b, d, r, c}, {d, r, c},
// {r, c}, {c} convert implicitly.
template<typename _T = ducks::default_type>
struct coord {
    using identifier = ducks::coord::identifier;
    using BASE = _T;
    int b, d, r, c;
    __host__ __device__ inline coord(int _b, int _d, int _r, int _c) : b(_b), d(_d), r(_r), c(_c) {}
    __host__ __device__ inline coord(int _d, int _r, int _c) : b(0), d(_d), r(_r), c(_c) {}
    __host__ __device__ inline coord(int _r, int _c) : b(0), d(0), r(_r), c(_c) {}
    __host__ __device__ inline coord(int _c) : b(0), d(0), r(0), c(_c) {}
    __host__ __device__ inline coord() : b(0), d(0), r(0), c(0) {}
    template<typename U> __host__ __device__ inline coord(const coord<U> &other) : b(other.b), d(other.d), r(other.r), c(other.c) {}
    __host__ __device__ inline coord(const int4 &other) : b(other.x), d(other.y), r(other.z), c(other.w) {}
    __host__ __device__ inline operator int4() const { return int4{b, d, r, c}; }
    template<int row_axis, int col_axis> __device__ inline coord<ducks::default_type> unit_coord() const { return coord<ducks::default_type>(b, d, r, c); }
    template<int ax> __device__ inline int dim() const { return ax == 0 ? b : ax == 1 ? d : ax == 2 ? r : c; }
};
namespace ducks {
namespace coord {
template<typename T> concept tile = all<T> && (std::is_same_v<typename T::BASE, default_type> || detail::tile<typename T::BASE>);
template<typename T> concept vec = all<T> && (std::is_same_v<typename T::BASE, default_type> || detail::vec<typename T::BASE>);
}
}

namespace tma {
// Register a tile type for TMA with an explicit axis: gl<T, b, d, r, c, tma::descriptor<st_bf<64,64>, 1>>.
template<typename _T, int _axis = -9999> struct descriptor {
    using identifier = ducks::tma::descriptor::identifier;
    using T = _T;
    static constexpr int axis = _axis != -9999 ? _axis : (ducks::sv::all<_T> ? -1 : 2);
};
}  // namespace tma

// gl<T, b, d, r, c, TMA_Types...>: a 4-D global tensor; a dimension is fixed when > 0 and
// runtime when -1. Each TMA_Types entry (a st/sv type or tma::descriptor<>) gets a TMA
// descriptor built on the host; its swizzle comes from that tile type.
template<typename _T, int b, int d, int r, int c, typename... TMA_Types>
struct gl {
    using identifier = ducks::gl::identifier;
    using T = typename base_types::packing<_T>::unpacked_type;
    using T2 = typename base_types::packing<_T>::packed_type;
    using dtype = T;
    T *raw_ptr;
    static constexpr int __b__ = b, __d__ = d, __r__ = r, __c__ = c;
    ducks::gl::make_dim_t<b> batch_internal;
    ducks::gl::make_dim_t<d> depth_internal;
    ducks::gl::make_dim_t<r> rows_internal;
    ducks::gl::make_dim_t<c> cols_internal;
    template<int B = __b__> __host__ __device__ static constexpr std::enable_if_t<(B > 0), int> batch() { return B; }
    template<int B = __b__> __host__ __device__ std::enable_if_t<(B == -1), int> batch() const { return 0; }
    template<int D = __d__> __host__ __device__ static constexpr std::enable_if_t<(D > 0), int> depth() { return D; }
    template<int D = __d__> __host__ __device__ std::enable_if_t<(D == -1), int> depth() const { return 0; }
    template<int R = __r__> __host__ __device__ static constexpr std::enable_if_t<(R > 0), int> rows() { return R; }
    template<int R = __r__> __host__ __device__ std::enable_if_t<(R == -1), int> rows() const { return 0; }
    template<int C = __c__> __host__ __device__ static constexpr std::enable_if_t<(C > 0), int> cols() { return C; }
    template<int C = __c__> __host__ __device__ std::enable_if_t<(C == -1), int> cols() const { return 0; }
    __host__ __device__ inline size_t numel() const { return 0; }
    CUtensorMap tma_descs[sizeof...(TMA_Types) > 0 ? sizeof...(TMA_Types) : 1];
    __host__ __device__ gl() = delete;
    __host__ inline gl(T *_data, ducks::gl::make_arg_t<b> _batch, ducks::gl::make_arg_t<d> _depth,
                       ducks::gl::make_arg_t<r> _rows, ducks::gl::make_arg_t<c> _cols)
        : raw_ptr(_data), batch_internal(_batch), depth_internal(_depth), rows_internal(_rows), cols_internal(_cols) {}
    __host__ __device__ inline gl(const gl &other)
        : raw_ptr(other.raw_ptr), batch_internal(other.batch_internal), depth_internal(other.depth_internal),
          rows_internal(other.rows_internal), cols_internal(other.cols_internal) {}
    template<typename U, int axis> __device__ inline const CUtensorMap *get_tma() const { return &tma_descs[0]; }
    template<typename U, int axis = 2> __device__ inline void prefetch_tma() const {}
    __device__ inline T &operator[](const coord<ducks::default_type> &idx) const { return raw_ptr[0]; }
    template<int ax> __device__ inline size_t shape() const { return 0; }
    template<int ax> __device__ inline size_t stride() const { return 0; }
};
template<typename _T, int d, int r, int c, typename... TMA_Types> using gl3 = gl<_T, 1, d, r, c, TMA_Types...>;
template<typename _T, int r, int c, typename... TMA_Types> using gl2 = gl<_T, 1, 1, r, c, TMA_Types...>;
template<typename _T, int c, typename... TMA_Types> using gl1 = gl<_T, 1, 1, 1, c, TMA_Types...>;
template<int N> __host__ auto make_unsafe_gl_arg(int param) { if constexpr (N > 0) return nullptr; else return param; }
template<ducks::gl::all GL, bool safe = true> __host__ inline GL make_gl(uint64_t data, int b, int d, int r, int c) {
    return GL(reinterpret_cast<typename GL::dtype *>(data), make_unsafe_gl_arg<GL::__b__>(b), make_unsafe_gl_arg<GL::__d__>(d),
              make_unsafe_gl_arg<GL::__r__>(r), make_unsafe_gl_arg<GL::__c__>(c));
}

// Complex global layout (real + imaginary gl).
template<ducks::gl::all _GL>
struct cgl {
    using identifier = ducks::cgl::identifier;
    using component = _GL;
    using T = typename component::T;
    using dtype = typename component::dtype;
    component real, imag;
};

// pgl: the same global layout replicated on NUM_DEVICES GPUs (optionally with a multicast address).
template<ducks::gl::all _GL, int NUM_DEVICES = 8, bool MULTICAST = true, typename... TMA_Types>
struct pgl {
    using identifier = ducks::pgl::identifier;
    using GL = _GL;
    using T = typename GL::dtype;
    using dtype = T;
    static constexpr int num_devices = NUM_DEVICES;
    static constexpr bool multicast = MULTICAST;
    T *mc_ptr;
    GL gls[NUM_DEVICES];
    __host__ __device__ inline GL &operator[](int idx) { return gls[idx]; }
    __host__ __device__ inline const GL &operator[](int idx) const { return gls[idx]; }
    __device__ inline T *mc_ptr_at(const coord<ducks::default_type> &idx) const { return mc_ptr; }
    template<typename U, int axis> __device__ inline const CUtensorMap *get_tma() const { return nullptr; }
    template<int ax> __device__ inline size_t shape() const { return 0; }
    template<int ax> __device__ inline size_t stride() const { return 0; }
    __host__ __device__ inline int batch() const { return 0; }
    __host__ __device__ inline int depth() const { return 0; }
    __host__ __device__ inline int rows() const { return 0; }
    __host__ __device__ inline int cols() const { return 0; }
};
template<int NUM_DEVICES> using barrier_t = pgl<gl<int, -1, -1, -1, -1>, NUM_DEVICES, true>;
template<ducks::pgl::all PGL, bool safe = true, typename... A> __host__ PGL make_pgl(A &&...args);

// Host-side multi-GPU plumbing (virtual memory / multicast objects, IPC handles).
namespace detail {
namespace vmm {
typedef CUmemGenericAllocationHandle handle;
#define __TKC_HOST_GENERIC(name) template<typename... A> __host__ void name(A &&...args);
__TKC_HOST_GENERIC(vm_alloc) __TKC_HOST_GENERIC(vm_map) __TKC_HOST_GENERIC(vm_set_access) __TKC_HOST_GENERIC(vm_retrieve_handle)
__TKC_HOST_GENERIC(vm_unmap) __TKC_HOST_GENERIC(vm_free) __TKC_HOST_GENERIC(vm_alloc_map_set_access) __TKC_HOST_GENERIC(multicast_check)
__TKC_HOST_GENERIC(multicast_create_handle) __TKC_HOST_GENERIC(multicast_bind_device) __TKC_HOST_GENERIC(multicast_bind_memory)
__TKC_HOST_GENERIC(multicast_bind_address) __TKC_HOST_GENERIC(multicast_unbind_device)
}  // namespace vmm
namespace ipc {
enum flavor { LEGACY = 0, VMM = 1 };
template<flavor _flavor> struct handle { using identifier = int; int fd; void *ptr; };
__TKC_HOST_GENERIC(check_support) __TKC_HOST_GENERIC(export_handle) __TKC_HOST_GENERIC(import_handle) __TKC_HOST_GENERIC(free_handle)
#undef __TKC_HOST_GENERIC
}  // namespace ipc
}  // namespace detail

// ============================================================================ shared-memory allocation
namespace detail {
template<typename A, size_t... dims> struct array_of { using type = A; };
template<typename A, size_t d0, size_t... ds> struct array_of<A, d0, ds...> { using type = typename array_of<A, ds...>::type[d0]; };
template<typename A, size_t... dims> using array_of_t = typename array_of<A, dims...>::type;
}
// shared_allocator: bump allocator over dynamic shared memory. allocate<T>() returns T&;
// allocate<T, N, M...>() returns a reference to a T[N][M...] array. Each allocation is first
// aligned to default_alignment (or to the explicit leading template argument).
template<int default_alignment = 1024>
struct shared_allocator {
    int *ptr;
    __device__ shared_allocator(int *_ptr) : ptr(_ptr) {}
    template<typename A, size_t... dims> __device__ inline detail::array_of_t<A, dims...> &allocate() {
        return *reinterpret_cast<detail::array_of_t<A, dims...> *>(ptr);
    }
    template<int alignment, typename A, size_t... dims> __device__ inline detail::array_of_t<A, dims...> &allocate() {
        return *reinterpret_cast<detail::array_of_t<A, dims...> *>(ptr);
    }
};
using tma_allocator = shared_allocator<1024>;
using tma_swizzle_allocator = tma_allocator;

// ============================================================================ barriers
// semaphore: an mbarrier (8 bytes, opaque). Initialise with init_semaphore(bar, arrivals, tx=0).
struct semaphore {
private:
    uint64_t value;
};
// barrier<num_warps>: a named hardware barrier (bar.sync id, 32*num_warps).
template<int num_warps> struct barrier {
    int barrier_id;
    __device__ __forceinline__ barrier(int _id) : barrier_id(_id) {}
    __device__ __forceinline__ barrier operator[](int i) { return barrier(barrier_id + i); }
};

// Thread scope: every thread that reaches these issues the mbarrier instruction.
__device__ static inline void init_semaphore(semaphore &bar, int thread_count, int transaction_count = 0) {}
__device__ static inline void invalidate_semaphore(semaphore &bar) {}
__device__ static inline void arrive(semaphore &sem) {}
__device__ static inline void arrive(semaphore &sem, uint32_t count) {}
template<int num_warps> __device__ static inline void arrive(barrier<num_warps> bar) {}
__device__ static inline void wait(semaphore &sem, int kPhaseBit) {}
__device__ static inline bool try_wait(semaphore &sem, int kPhaseBit) { return true; }
__device__ static inline void careful_wait(semaphore &sem, int kPhaseBit) {}
__device__ static inline int test_wait(semaphore &sem, int kPhaseBit) { return 1; }
__device__ static inline void arrive_and_wait(semaphore &sem, int kPhaseBit) {}
template<int num_warps> __device__ static inline void arrive_and_wait(barrier<num_warps> bar) {}
template<int N = 0> __device__ static inline void load_async_wait() {}

// size_bytes<T...>: bytes a TMA copy of each T delivers (tiles/vectors: elements * sizeof(dtype);
// anything else: sizeof), summed.
namespace detail {
template<typename T> struct size_info { static constexpr uint32_t bytes = sizeof(std::remove_reference_t<T>); };
template<ducks::st::all ST> struct size_info<ST> {
    static constexpr uint32_t elements = ST::num_elements;
    static constexpr uint32_t bytes = ST::num_elements * sizeof(typename ST::dtype);
};
template<ducks::sv::all SV> struct size_info<SV> {
    static constexpr uint32_t elements = SV::length;
    static constexpr uint32_t bytes = SV::length * sizeof(typename SV::dtype);
};
}  // namespace detail
template<typename... Args> inline constexpr uint32_t size_bytes = (0u + ... + detail::size_info<Args>::bytes);

// tcgen05 (Blackwell) ordering and completion helpers
__device__ static inline void tensor_before_thread_sync() {}
__device__ static inline void tensor_after_thread_sync() {}
__device__ static inline void tensor_load_wait() {}
__device__ static inline void tensor_store_wait() {}
template<int ncta = 1> __device__ static inline void tensor_commit(semaphore &sem, uint16_t dst_cta_mask = 0b11) {}
namespace detail {
namespace tcgen05 {
template<int ncta = 1> __device__ static inline void commit(semaphore &sem, uint16_t dst_cta_mask = 0b11) {}
template<typename D, typename AB, int M, int N, bool trans_a, bool trans_b, bool neg = false>
__device__ static inline constexpr uint32_t instruction_descriptor() { return 0; }
}  // namespace tcgen05
__device__ static inline uint64_t matrix_descriptor_encode(uint64_t x) { return x; }
template<typename T> __device__ static inline uint64_t matrix_descriptor_raw(T *addr, uint32_t leading_dim_offset, uint32_t stride_dim_offset, uint32_t swizzle_mode) { return 0; }
}  // namespace detail

// multi-GPU signalling over a barrier_t
template<int NUM_DEVICES> __device__ static inline void signal(const barrier_t<NUM_DEVICES> &bar, const coord<ducks::default_type> &idx, const int dst_dev_idx, const int val) {}
template<int NUM_DEVICES> __device__ static inline void signal_all(const barrier_t<NUM_DEVICES> &bar, const coord<ducks::default_type> &idx, const int val) {}
template<int NUM_DEVICES> __device__ static inline void wait(const barrier_t<NUM_DEVICES> &bar, const coord<ducks::default_type> &idx, const int dev_idx, const int expected) {}
template<int NUM_DEVICES> __device__ static inline void barrier_all(const barrier_t<NUM_DEVICES> &bar, const coord<ducks::default_type> &idx, const int dev_idx) {}

// ============================================================================ PTX move helpers, cache policy, CLC, PDL
template<typename T> struct move {
    __device__ static inline void lds(T &dst, uint32_t src) {}
    __device__ static inline void sts(uint32_t dst, const T &src) {}
    __device__ static inline void ldg(T &dst, T *src) {}
    __device__ static inline void stg(T *dst, const T &src) {}
    __device__ static inline void ldsm4(T &d1, T &d2, T &d3, T &d4, uint32_t src) {}
    __device__ static inline void ldsm4t(T &d1, T &d2, T &d3, T &d4, uint32_t src) {}
    __device__ static inline void stsm4(uint32_t dst, T &s1, T &s2, T &s3, T &s4) {}
    __device__ static inline void stsm4t(uint32_t dst, T &s1, T &s2, T &s3, T &s4) {}
};
template<cache_policy policy> __device__ inline uint64_t make_cache_policy() { return 0; }
namespace clc {
struct handle { uint4 internal_value; };
struct result { uint32_t success, x, y, z; };
__device__ static inline void schedule(handle &h, semaphore &sem) {}
__device__ static inline result query(handle &h) { return result{}; }
}  // namespace clc
namespace pdl {
__device__ static inline void arrive() {}
__device__ static inline void wait() {}
}  // namespace pdl

// ============================================================================ op families
// The same op names exist at several scopes (kittens:: thread/legacy-warp scope, warp::,
// warpgroup::, group<N>::). Each family is written once as a macro and stamped into each scope.
namespace detail {
// Default coordinate type of a global<->register transfer done by a group of NW warps.
template<typename T, int NW> struct group_coord_base { using type = T; };
template<ducks::rt::all T, int NW> struct group_coord_base<T, NW> { using type = rt<typename T::T, NW * T::rows, T::cols, typename T::layout>; };
template<ducks::rv::all T, int NW> struct group_coord_base<T, NW> { using type = rv<typename T::T, NW * T::length, typename T::layout>; };
template<typename T, int NW> using group_coord_t = coord<typename group_coord_base<std::remove_cv_t<T>, NW>::type>;
// Scalar produced by reducing a vector/tile.
template<typename T> using scalar_t = typename base_types::packing<typename T::dtype>::unpacked_type;
// Vector produced by reducing a tile along axis ax (axis::COL -> one value per row).
template<typename T, int ax> using axis_vec_t = std::conditional_t<ax == axis::COL, typename T::col_vec, typename T::row_vec>;
template<typename T> struct swapped_layout { using type = T; };
template<typename T2, int R, int C, typename L> struct swapped_layout<rt<T2, R, C, L>> { using type = rt<T2, R, C, typename ducks::rt_layout::transpose<L>::type>; };
}  // namespace detail

// ---- memory ops: global <-> shared/register, shared <-> register, TMEM <-> register
#define __TKC_MEMORY_OPS(NW) \
    template<ducks::tk_data D, ducks::tk_data S> __device__ static inline void load(D &dst, const S &src) {} \
    template<ducks::tk_data D, ducks::tk_data S> __device__ static inline void store(D &dst, const S &src) {} \
    template<ducks::tk_data D, ducks::tk_data S> __device__ static inline void load(D &dst, const S &src, int2 row_col) {} \
    template<ducks::tk_data D, ducks::tk_data S> __device__ static inline void store(D &dst, const S &src, int2 row_col) {} \
    template<ducks::tk_data D, ducks::tk_global G, typename C = detail::group_coord_t<D, NW>> \
    __device__ static inline void load(D &dst, const G &src, const C &idx) {} \
    template<int axis, ducks::tk_data D, ducks::tk_global G, typename C = detail::group_coord_t<D, NW>> \
    __device__ static inline void load(D &dst, const G &src, const C &idx) {} \
    template<int axis, bool assume_aligned, ducks::tk_data D, ducks::tk_global G, typename C = detail::group_coord_t<D, NW>> \
    __device__ static inline void load(D &dst, const G &src, const C &idx) {} \
    /* template parameters: source type first, then the global layout (TK's order) */ \
    template<ducks::tk_data S, ducks::tk_global G, typename C = detail::group_coord_t<S, NW>> \
    __device__ static inline void store(const G &dst, const S &src, const C &idx) {} \
    template<int axis, ducks::tk_data S, ducks::tk_global G, typename C = detail::group_coord_t<S, NW>> \
    __device__ static inline void store(const G &dst, const S &src, const C &idx) {} \
    template<int axis, bool assume_aligned, ducks::tk_data S, ducks::tk_global G, typename C = detail::group_coord_t<S, NW>> \
    __device__ static inline void store(const G &dst, const S &src, const C &idx) {} \
    /* cp.async global -> shared (completed by load_async_wait) */ \
    template<ducks::tk_data D, ducks::tk_global G, typename C = coord<D>> \
    __device__ static inline void load_async(D &dst, const G &src, const C &idx) {} \
    template<int axis, bool assume_aligned, ducks::tk_data D, ducks::tk_global G, typename C = coord<D>> \
    __device__ static inline void load_async(D &dst, const G &src, const C &idx) {} \
    template<ducks::tk_data D, ducks::tk_global G, typename C = coord<D>> \
    __device__ static inline void load_async_small(D &dst, const G &src, const C &idx) {} \
    /* tcgen05.ld / tcgen05.st: TMEM -> registers, registers -> TMEM (completed by tensor_load_wait/tensor_store_wait) */ \
    template<ducks::tk_data D, ducks::tk_data S> __device__ static inline void load_async(D &dst, const S &src) {} \
    template<ducks::tk_data D, ducks::tk_data S> __device__ static inline void store_async(D &dst, const S &src) {}

// ---- element-wise maps, broadcasts, reductions, conversions on rt/rv/st/sv
#define __TKC_FILL_OP(name) template<ducks::tk_data T> __device__ static inline void name(T &dst) {}
#define __TKC_UNARY_OP(name) \
    template<ducks::tk_data T, typename S> __device__ static inline void name(T &dst, const S &src) {} \
    template<ducks::tk_data T> __device__ static inline T name(const T &src) { return src; }
#define __TKC_BINARY_OP(name) \
    template<ducks::tk_data T, typename A, typename B> __device__ static inline void name(T &dst, const A &lhs, const B &rhs) {}
#define __TKC_BROADCAST_OP(name) \
    template<ducks::tk_data T, typename S, typename V> __device__ static inline void name(T &dst, const S &src, const V &vec) {}
#define __TKC_REDUCE_OP(name) \
    /* (dst, src) with a scalar dst, or (dst, src, accum) / (dst, lhs, rhs) */ \
    template<typename D, ducks::tk_data S> requires (!ducks::tk_data<D>) __device__ static inline void name(D &dst, const S &src) {} \
    template<typename D, ducks::tk_data S, typename A> __device__ static inline void name(D &dst, const S &src, const A &accum) {} \
    template<int ax, typename D, ducks::tk_data S, typename... A> __device__ static inline void name(D &dst, const S &src, const A &...accum) {} \
    template<ducks::tk_vec V> __device__ static inline detail::scalar_t<V> name(const V &src) { return {}; } \
    template<ducks::tk_vec V, typename A> requires (!ducks::tk_data<A>) __device__ static inline detail::scalar_t<V> name(const V &src, const A &accum) { return {}; } \
    template<int ax, ducks::tk_tile T> __device__ static inline detail::axis_vec_t<T, ax> name(const T &src) { return {}; }
#define __TKC_ROWCOL_REDUCE_OP(name) \
    template<ducks::tk_data D, ducks::tk_data S> __device__ static inline void name(D &dst, const S &src) {} \
    template<ducks::tk_data D, ducks::tk_data S> __device__ static inline void name(D &dst, const S &src, const D &accum) {}
#define __TKC_MASK_OP(name) \
    template<ducks::tk_data D, ducks::tk_data S, typename... A> __device__ static inline void name(D &dst, const S &src, const A &...args) {}

#define __TKC_ELEMENTWISE_OPS \
    __TKC_FILL_OP(zero) __TKC_FILL_OP(one) __TKC_FILL_OP(pos_infty) __TKC_FILL_OP(neg_infty) \
    __TKC_UNARY_OP(exp) __TKC_UNARY_OP(exp2) __TKC_UNARY_OP(log) __TKC_UNARY_OP(log2) __TKC_UNARY_OP(abs) __TKC_UNARY_OP(relu) \
    template<ducks::tk_data T, typename U> __device__ static inline void copy(T &dst, const U &src) {} \
    __TKC_BINARY_OP(add) __TKC_BINARY_OP(sub) __TKC_BINARY_OP(mul) __TKC_BINARY_OP(div) \
    template<ducks::tk_tile T, typename U> __device__ static inline T max(const T &lhs, const U &rhs) { return lhs; } \
    template<ducks::tk_tile T, typename U> __device__ static inline T min(const T &lhs, const U &rhs) { return lhs; } \
    template<ducks::tk_vec T, ducks::tk_data U> __device__ static inline T max(const T &lhs, const U &rhs) { return lhs; } \
    template<ducks::tk_vec T, ducks::tk_data U> __device__ static inline T min(const T &lhs, const U &rhs) { return lhs; } \
    __TKC_REDUCE_OP(max) __TKC_REDUCE_OP(min) __TKC_REDUCE_OP(sum) __TKC_REDUCE_OP(prod) \
    __TKC_ROWCOL_REDUCE_OP(row_max) __TKC_ROWCOL_REDUCE_OP(row_min) __TKC_ROWCOL_REDUCE_OP(row_sum) __TKC_ROWCOL_REDUCE_OP(row_prod) \
    __TKC_ROWCOL_REDUCE_OP(col_max) __TKC_ROWCOL_REDUCE_OP(col_min) __TKC_ROWCOL_REDUCE_OP(col_sum) __TKC_ROWCOL_REDUCE_OP(col_prod) \
    __TKC_BROADCAST_OP(add_row) __TKC_BROADCAST_OP(sub_row) __TKC_BROADCAST_OP(mul_row) __TKC_BROADCAST_OP(div_row) \
    __TKC_BROADCAST_OP(add_col) __TKC_BROADCAST_OP(sub_col) __TKC_BROADCAST_OP(mul_col) __TKC_BROADCAST_OP(div_col) \
    template<ducks::tk_data T, typename V> __device__ static inline void broadcast_row(T &dst, const V &row_values) {} \
    template<ducks::tk_data T, typename V> __device__ static inline void broadcast_col(T &dst, const V &col_values) {} \
    template<ducks::tk_data T, typename V> __device__ static inline T broadcast_row(const V &row_values) { return T{}; } \
    template<ducks::tk_data T, typename V> __device__ static inline T broadcast_col(const V &col_values) { return T{}; } \
    template<ducks::tk_data T, typename... A> __device__ static inline void broadcast(T &dst, const A &...args) {} \
    /* generic maps and reductions parameterised by a base_ops functor */ \
    template<typename op, ducks::tk_data T, typename... A> __device__ static inline void unary_map(T &dst, const A &...args) {} \
    template<typename op, ducks::tk_data T, typename... A> __device__ static inline void bin_map(T &dst, const A &...args) {} \
    template<typename op, ducks::tk_data T, typename... A> __device__ static inline void unary_op(T &dst, const A &...args) {} \
    template<typename op, ducks::tk_data T, typename... A> __device__ static inline void bin_op(T &dst, const A &...args) {} \
    template<typename op, ducks::tk_data T, typename... A> __device__ static inline void row_map(T &dst, const A &...args) {} \
    template<typename op, ducks::tk_data T, typename... A> __device__ static inline void col_map(T &dst, const A &...args) {} \
    template<typename op, typename D, typename... A> __device__ static inline void row_reduce(D &dst, const A &...args) {} \
    template<typename op, typename V, typename T, bool reset, typename... A> __device__ static inline void row_reduce(V &dst, const A &...args) {} \
    template<typename op, typename D, typename... A> __device__ static inline void col_reduce(D &dst, const A &...args) {} \
    template<typename op, typename V, typename T, bool reset, typename... A> __device__ static inline void col_reduce(V &dst, const A &...args) {} \
    template<typename op, typename D, typename... A> __device__ static inline void reduce(D &dst, const A &...args) {} \
    template<typename op, typename V, bool reset, typename D, typename... A> __device__ static inline void reduce(D &dst, const A &...args) {} \
    template<ducks::tk_data T, typename S, typename F> __device__ static inline void apply(T &dst, const S &src, F &&f) {} \
    template<ducks::tk_data T, typename F> __device__ static inline T apply(const T &src, F &&f) { return src; } \
    /* layout conversions and masks */ \
    template<ducks::tk_data D, ducks::tk_data S> __device__ static inline void swap_layout(D &dst, const S &src) {} \
    template<ducks::tk_data T> __device__ static inline typename detail::swapped_layout<T>::type &swap_layout_inplace(T &tile) { return *reinterpret_cast<typename detail::swapped_layout<T>::type *>(&tile); } \
    template<ducks::tk_data D, ducks::tk_data S> __device__ static inline void transpose_sep(D &dst, const S &src) {} \
    template<ducks::tk_data T> __device__ static inline T &transpose_inplace(T &tile) { return tile; } \
    template<int subtile_rows, ducks::rt::all RT> __device__ static inline rt<typename RT::T, subtile_rows, RT::cols, typename RT::layout> &subtile_inplace(RT &src, int idx) { \
        return *reinterpret_cast<rt<typename RT::T, subtile_rows, RT::cols, typename RT::layout> *>(&src); } \
    __TKC_MASK_OP(make_causal) __TKC_MASK_OP(make_causal_t) __TKC_MASK_OP(tril) __TKC_MASK_OP(triu) \
    __TKC_MASK_OP(right_fill) __TKC_MASK_OP(left_fill) __TKC_MASK_OP(upper_fill) __TKC_MASK_OP(lower_fill) \
    __TKC_MASK_OP(upper_right_fill) \
    template<ducks::tk_data T> __device__ static inline bool hasnan(const T &src) { return false; }

// ---- matrix multiply-accumulate.
//   warpgroup::mma_AB(d_rt, a_rt_or_st, b_st)           Hopper wgmma (async; mma_commit_group/mma_async_wait)
//   warp::mma_AB(d_rt, a_rt, b_rt, c_rt)                 warp-level mma.sync (d = a*b + c)
//   mma_AB(d_tt, a_st_or_tt, b_st[, sem])                Blackwell tcgen05 (completion via tensor_commit/sem)
//   mma<trans_a, trans_b>(...), mma2_* (2-CTA), mm_* (overwrite instead of accumulate)
#define __TKC_MMA_NAME(name) \
    template<ducks::tk_data D, typename A, typename B, typename... R> __device__ static inline void name(D &d, const A &a, const B &b, R &&...rest) {}
#define __TKC_MMA_OPS \
    __TKC_MMA_NAME(mma_AB) __TKC_MMA_NAME(mma_ABt) __TKC_MMA_NAME(mma_AtB) __TKC_MMA_NAME(mma_AtBt) \
    __TKC_MMA_NAME(mm_AB) __TKC_MMA_NAME(mm_ABt) __TKC_MMA_NAME(mm_AtB) __TKC_MMA_NAME(mm_AtBt) \
    __TKC_MMA_NAME(mma2_AB) __TKC_MMA_NAME(mma2_ABt) __TKC_MMA_NAME(mma2_AtB) __TKC_MMA_NAME(mma2_AtBt) \
    __TKC_MMA_NAME(mm2_AB) __TKC_MMA_NAME(mm2_ABt) __TKC_MMA_NAME(mm2_AtB) __TKC_MMA_NAME(mm2_AtBt) \
    template<int trans_a, int trans_b, ducks::tk_data D, typename A, typename B, typename... R> __device__ static inline void mma(D &d, const A &a, const B &b, R &&...rest) {} \
    template<int trans_a, int trans_b, ducks::tk_data D, typename A, typename B, typename... R> __device__ static inline void mm(D &d, const A &a, const B &b, R &&...rest) {} \
    template<int trans_a, int trans_b, ducks::tk_data D, typename A, typename B, typename... R> __device__ static inline void mma2(D &d, const A &a, const B &b, R &&...rest) {} \
    template<int trans_a, int trans_b, ducks::tk_data D, typename A, typename B, typename... R> __device__ static inline void mm2(D &d, const A &a, const B &b, R &&...rest) {} \
    template<ducks::tk_data D> __device__ static inline void mma_fence(D &dst) {} \
    template<typename T = ducks::default_type> __device__ static inline void mma_fence() {} \
    template<typename T = ducks::default_type> __device__ static inline void mma_commit_group() {} \
    template<int N = 0> __device__ static inline void mma_async_wait() {}

// ---- TMA (cp.async.bulk.tensor) and bulk copies; `bar` receives complete_tx of the bytes copied.
#define __TKC_TMA_STORE_OP(name) \
    template<int axis, cache_policy policy, ducks::st::all ST, ducks::tk_global GL, typename COORD = coord<ST>> \
    __device__ static inline void name(const GL &dst, const ST &src, const COORD &idx) {} \
    template<ducks::st::all ST, ducks::tk_global GL, typename COORD = coord<ST>> \
    __device__ static inline void name(const GL &dst, const ST &src, const COORD &idx) {} \
    template<cache_policy policy, ducks::sv::all SV, ducks::tk_global GL, typename COORD = coord<SV>> \
    __device__ static inline void name(const GL &dst, const SV &src, const COORD &idx) {} \
    template<ducks::sv::all SV, ducks::tk_global GL, typename COORD = coord<SV>> \
    __device__ static inline void name(const GL &dst, const SV &src, const COORD &idx) {}
#define __TKC_TMA_LOAD_OPS(...) \
    template<int axis, cache_policy policy, ducks::st::all ST, ducks::tk_global GL, typename COORD = coord<ST>> \
    __device__ static inline void load_async(ST &dst, const GL &src, const COORD &idx, semaphore &bar __VA_ARGS__) {} \
    template<ducks::st::all ST, ducks::tk_global GL, typename COORD = coord<ST>> \
    __device__ static inline void load_async(ST &dst, const GL &src, const COORD &idx, semaphore &bar __VA_ARGS__) {} \
    template<cache_policy policy, ducks::sv::all SV, ducks::tk_global GL, typename COORD = coord<SV>> \
    __device__ static inline void load_async(SV &dst, const GL &src, const COORD &idx, semaphore &bar __VA_ARGS__) {} \
    template<ducks::sv::all SV, ducks::tk_global GL, typename COORD = coord<SV>> \
    __device__ static inline void load_async(SV &dst, const GL &src, const COORD &idx, semaphore &bar __VA_ARGS__) {}
#define __TKC_TMA_OPS \
    /* mbarrier.arrive.expect_tx: one arrival + `bytes` expected transaction bytes */ \
    __device__ static inline void expect_bytes(semaphore &bar, uint32_t bytes) {} \
    template<typename T, typename... A> __device__ static inline void expect(semaphore &bar, const T &first, const A &...rest) {} \
    template<typename T> __device__ static inline void expect(semaphore &bar) {} \
    __device__ static inline void store_commit_group() {} \
    template<int N = 0> __device__ static inline void store_async_wait() {} \
    template<int N = 0> __device__ static inline void store_async_read_wait() {} \
    /* non-tensor bulk copies */ \
    __device__ static inline void load_async(void *dst, void *src, uint32_t size_bytes, semaphore &bar) {} \
    template<typename T> __device__ static inline void load_async(T &dst, T &src, uint32_t size_bytes, semaphore &bar) {} \
    __device__ static inline void store_async(void *dst, void *src, uint32_t size_bytes) {} \
    template<typename T> __device__ static inline void store_async(T &dst, T &src, uint32_t size_bytes) {} \
    /* tensor copies of a tile/vector at a coordinate of a global layout */ \
    __TKC_TMA_LOAD_OPS() \
    __TKC_TMA_STORE_OP(store_async) __TKC_TMA_STORE_OP(store_add_async) \
    __TKC_TMA_STORE_OP(store_min_async) __TKC_TMA_STORE_OP(store_max_async) \
    template<int axis, cache_policy policy, ducks::st::all ST, ducks::tk_global GL, typename COORD = coord<ST>> \
    __device__ static inline void prefetch(ST &dst, const GL &src, const COORD &idx) {} \
    template<ducks::st::all ST, ducks::tk_global GL, typename COORD = coord<ST>> \
    __device__ static inline void prefetch(ST &dst, const GL &src, const COORD &idx) {} \
    template<cache_policy policy, ducks::sv::all SV, ducks::tk_global GL, typename COORD = coord<SV>> \
    __device__ static inline void prefetch(SV &dst, const GL &src, const COORD &idx) {} \
    template<ducks::sv::all SV, ducks::tk_global GL, typename COORD = coord<SV>> \
    __device__ static inline void prefetch(SV &dst, const GL &src, const COORD &idx) {}
// Cluster scope: multicast loads (cta mask), remote expect/arrive, cluster-scope waits, DSMEM copies.
#define __TKC_TMA_CLUSTER_OPS \
    __device__ static inline void wait(semaphore &bar, int kPhaseBit) {} \
    __device__ static inline bool try_wait(semaphore &bar, int kPhaseBit) { return true; } \
    __device__ static inline void careful_wait(semaphore &bar, int kPhaseBit) {} \
    __device__ static inline void expect_bytes(semaphore &bar, uint32_t bytes) {} \
    __device__ static inline void expect_bytes(semaphore &bar, uint32_t bytes, int dst_cta) {} \
    template<typename T, typename... A> __device__ static inline void expect(semaphore &bar, const T &first, const A &...rest) {} \
    template<typename T> __device__ static inline void expect(semaphore &bar, int dst_cta) {} \
    __device__ static inline void arrive(semaphore &bar, int dst_cta, uint32_t count = 1) {} \
    __device__ static inline void load_async(void *dst, void *src, uint32_t size_bytes, semaphore &bar, uint16_t cta_mask) {} \
    template<typename T> __device__ static inline void load_async(T &dst, T &src, uint32_t size_bytes, semaphore &bar, uint16_t cta_mask) {} \
    __TKC_TMA_LOAD_OPS(, uint16_t cluster_mask, int dst_mbar_cta = -1) \
    /* shared::cta -> another CTA's shared memory, completing on that CTA's barrier */ \
    __device__ static inline void store_async(void *dst, void *src, int dst_cta, uint32_t size_bytes, semaphore &bar) {} \
    template<typename T> __device__ static inline void store_async(T &dst, T &src, int dst_cta, semaphore &bar) {} \
    __device__ static inline void store_async(void *dst, void *src, int cluster_size, int dst_cta, uint32_t size_bytes, semaphore &bar) {} \
    template<typename T> __device__ static inline void store_async(T &dst, T &src, int cluster_size, int dst_cta, semaphore &bar) {}
// Whole-cluster barrier (barrier.cluster.arrive/wait): every thread of every CTA must take part.
#define __TKC_CLUSTER_BARRIER_OPS \
    __device__ static inline void arrive() {} \
    __device__ static inline void arrive_aligned() {} \
    __device__ static inline void wait() {} \
    __device__ static inline void wait_aligned() {} \
    __device__ static inline void sync() {}

// ============================================================================ kittens:: scope ops
// Thread scope (tma::, mbarrier ops, tcgen05 MMAs) and the pre-`warp::` (legacy, warp-scope)
// spelling of the tile ops, e.g. `kittens::zero(acc)`, `load(reg, smem)`.
__TKC_MEMORY_OPS(1)
__TKC_ELEMENTWISE_OPS
__TKC_MMA_OPS
template<int ncta = 1, ducks::tt::all TT, ducks::st::all ST> __device__ static inline void load_mxnv_scale_async(TT &dst, const ST &src) {}
template<int ncta = 1, ducks::tt::all TT, ducks::st::all ST> __device__ static inline void load_mxnv_scale_async(TT &dst, const ST &src, semaphore &sem) {}
template<ducks::tt::all TT, ducks::st::all ST> __device__ static inline void load_mxnv_scale_async2(TT &dst, const ST &src) {}
template<ducks::tt::all TT, ducks::st::all ST> __device__ static inline void load_mxnv_scale_async2(TT &dst, const ST &src, semaphore &sem) {}
template<ducks::tk_data T> __device__ static inline void print(const T &x) {}
// The legacy op names above would otherwise hide the global math functions of the same name from
// unqualified lookup inside namespace kittens (e.g. `max(a, b)` on ints in user code that opens
// namespace kittens); TK itself has no namespace-scope ops with these names.
using ::max;
using ::min;
using ::abs;
using ::exp;
using ::exp2;
using ::log;
using ::log2;
using ::div;

namespace tma {
__TKC_TMA_OPS
namespace cluster {
__TKC_TMA_CLUSTER_OPS
__TKC_CLUSTER_BARRIER_OPS
}  // namespace cluster
}  // namespace tma

// ============================================================================ groups of warps
// group<N>: N consecutive warps acting together (warp = group<1>, warpgroup = group<4>).
// Ops under a group are issued for the whole group; single-thread PTX (mbarrier arrive /
// expect / TMA) is issued by the group's lane 0 (see CONTRACTS.md for the version skew).
template<int _GROUP_WARPS>
struct group {
    static constexpr int GROUP_WARPS = _GROUP_WARPS;
    static constexpr int GROUP_THREADS = GROUP_WARPS * WARP_THREADS;
    __device__ static inline int laneid() { return 0; }   // threadIdx.x % GROUP_THREADS
    __device__ static inline int warpid() { return 0; }   // laneid() / 32
    __device__ static inline int groupid() { return 0; }  // threadIdx.x / GROUP_THREADS
    // named barrier: bar.sync id, GROUP_THREADS / bar.arrive id, GROUP_THREADS
    __device__ static inline void sync(int id) {}
    __device__ static inline void arrive(int id) {}
    // warp only: bar.warp.sync MASK. (Older TK: sync<id>() was a named-barrier sync.)
    template<uint32_t MASK = 0xFFFFFFFF> __device__ static inline void sync() {}
    __device__ static inline void arrive(barrier<GROUP_WARPS> bar) {}
    __device__ static inline void arrive_and_wait(barrier<GROUP_WARPS> bar) {}
    template<int N = 0> __device__ static inline void load_async_wait(int bar_id) {}
    template<int N = 0> __device__ static inline void load_async_wait() {}
    // mbarrier ops issued by the group's lane 0 (wait/try_wait/test_wait: every thread)
    __device__ static inline void init_semaphore(semaphore &bar, int thread_count, int transaction_count = 0) {}
    __device__ static inline void invalidate_semaphore(semaphore &bar) {}
    __device__ static inline void arrive(semaphore &sem) {}
    __device__ static inline void arrive(semaphore &sem, uint32_t count) {}
    template<int num_warps> __device__ static inline void arrive(kittens::barrier<num_warps> bar) {}
    __device__ static inline void wait(semaphore &sem, int kPhaseBit) {}
    __device__ static inline bool try_wait(semaphore &sem, int kPhaseBit) { return true; }
    __device__ static inline int test_wait(semaphore &sem, int kPhaseBit) { return 1; }
    __device__ static inline void arrive_and_wait(semaphore &sem, int kPhaseBit) {}
    __device__ static inline bool elect_leader() { return true; }
    __device__ static inline bool elect_leader_from_active() { return true; }
    // setmaxnreg (warpgroup-wide; effective only under a register cap at kernel entry)
    template<int n_reg> __device__ static inline void increase_registers() {}
    template<int n_reg> __device__ static inline void decrease_registers() {}
    __device__ static inline void producer_registers() {}
    template<int NCWG> __device__ static inline void consumer_registers() {}

    __TKC_MEMORY_OPS(GROUP_WARPS)
    __TKC_ELEMENTWISE_OPS
    __TKC_MMA_OPS
    template<ducks::tk_data T> __device__ static inline void print(const T &x) {}

    struct tma {
        __TKC_TMA_OPS
        struct cluster {
            __TKC_TMA_CLUSTER_OPS
        };
    };
    struct clc {
        __device__ static inline void schedule(kittens::clc::handle &h, semaphore &sem) {}
        __device__ static inline kittens::clc::result query(kittens::clc::handle &h) { return kittens::clc::result{}; }
    };
    struct pdl {
        __device__ static inline void arrive() {}
        __device__ static inline void wait() {}
    };
};
using warp = group<1>;
using warpgroup = group<4>;

// All threads of the block / cluster.
namespace everyone {
__device__ static inline void sync(int id) {}  // bar.sync id (all threads of the block)
namespace tma {
namespace cluster {
__TKC_CLUSTER_BARRIER_OPS
}  // namespace cluster
}  // namespace tma
}  // namespace everyone

// ============================================================================ operators on rt / rv
#define __TKC_OPERATORS(CONCEPT) \
    template<CONCEPT T, typename U> __device__ static inline T operator+(const T &lhs, const U &rhs) { return lhs; } \
    template<CONCEPT T, typename U> __device__ static inline T operator-(const T &lhs, const U &rhs) { return lhs; } \
    template<CONCEPT T, typename U> __device__ static inline T operator*(const T &lhs, const U &rhs) { return lhs; } \
    template<CONCEPT T, typename U> __device__ static inline T operator/(const T &lhs, const U &rhs) { return lhs; } \
    template<CONCEPT T, typename U> __device__ static inline void operator+=(T &lhs, const U &rhs) {} \
    template<CONCEPT T, typename U> __device__ static inline void operator-=(T &lhs, const U &rhs) {} \
    template<CONCEPT T, typename U> __device__ static inline void operator*=(T &lhs, const U &rhs) {} \
    template<CONCEPT T, typename U> __device__ static inline void operator/=(T &lhs, const U &rhs) {}
__TKC_OPERATORS(ducks::rt::all)
__TKC_OPERATORS(ducks::rv::all)
#undef __TKC_OPERATORS

}  // namespace kittens

#undef __TKC_FILL_OP
#undef __TKC_UNARY_OP
#undef __TKC_BINARY_OP
#undef __TKC_BROADCAST_OP
#undef __TKC_REDUCE_OP
#undef __TKC_ROWCOL_REDUCE_OP
#undef __TKC_MASK_OP
#undef __TKC_ELEMENTWISE_OPS
#undef __TKC_MEMORY_OPS
#undef __TKC_MMA_NAME
#undef __TKC_MMA_OPS
#undef __TKC_TMA_STORE_OP
#undef __TKC_TMA_LOAD_OPS
#undef __TKC_TMA_OPS
#undef __TKC_TMA_CLUSTER_OPS
#undef __TKC_CLUSTER_BARRIER_OPS
