// tkcheck stand-in for CUDA's <mma.h> (nvcuda::wmma). Declaration-only, written for tkcheck
// from the CUDA programming guide's WMMA section: device code that includes it parses; tkcheck
// does not model WMMA operations (they are not asynchronous).
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision { struct tf32 {}; struct b1 {}; struct u4 {}; struct s4 {}; }
template<typename Use, int m, int n, int k, typename T, typename Layout = void> struct fragment {
    enum { num_elements = 8 };
    T x[8];
};
template<typename Use, int m, int n, int k, typename T, typename Layout, typename P>
__device__ void load_matrix_sync(fragment<Use, m, n, k, T, Layout> &a, const P *p, unsigned ldm);
template<typename Use, int m, int n, int k, typename T, typename Layout, typename P>
__device__ void load_matrix_sync(fragment<Use, m, n, k, T, Layout> &a, const P *p, unsigned ldm, layout_t l);
template<int m, int n, int k, typename T, typename P>
__device__ void store_matrix_sync(P *p, const fragment<accumulator, m, n, k, T, void> &a, unsigned ldm, layout_t l);
template<typename Use, int m, int n, int k, typename T, typename Layout, typename V>
__device__ void fill_fragment(fragment<Use, m, n, k, T, Layout> &a, const V &v);
template<int m, int n, int k, typename TA, typename LA, typename TB, typename LB, typename TC, typename TD>
__device__ void mma_sync(fragment<accumulator, m, n, k, TD, void> &d, const fragment<matrix_a, m, n, k, TA, LA> &a,
                         const fragment<matrix_b, m, n, k, TB, LB> &b, const fragment<accumulator, m, n, k, TC, void> &c,
                         bool satf = false);
}
}
