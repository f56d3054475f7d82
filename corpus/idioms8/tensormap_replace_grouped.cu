// tensormap_replace_grouped.cu -- a grouped (ragged, pointer-array) row reduction whose TMA loads
// use a tensor map each block builds on the device: warp 0 copies a template CUtensorMap (a
// `__grid_constant__` parameter) into shared memory, one lane patches it with
// `tensormap.replace.tile.global_address` (the group's own base pointer) and
// `tensormap.replace.tile.global_dim` (the group's own row count), the whole warp publishes it to a
// global workspace with `tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu
// .sync.aligned`, and the issuing thread acquires it with `fence.proxy.tensormap::generic.acquire
// .gpu` before its first `cp.async.bulk.tensor` through that global map (the CUTLASS ptr-array
// grouped-GEMM shape; plain CUDA + inline PTX, no TK).
//
// G = 8 groups, group g has R(g) = 256 (g + 1) rows of C = 64 floats in its own allocation
// X_g; Y_g[r] = sum_c X_g[r][c] w[c]. Grid (G, SPLIT = 4): block (g, s) reduces chunks
// s, s + SPLIT, ... of group g (a chunk = 32 rows x 64 columns, 8 KiB, one TMA box, no swizzle).
// 128 threads; thread q takes row q / 4, columns 16 (q % 4) .. + 15 of a chunk (shuffle over 4 lanes).
// Shared: tm_s (128 B, 128-aligned: the map being patched), x_s[2][32][64] (double buffer),
// full[2] (count 1: thread 0's arrive.expect_tx of 8192 bytes). Workspace: ws[g][s] (one 128-byte
// map a block, so no two blocks write one map).
// Loop over the block's chunks i: thread 0 issues chunk i + 1 into x_s[(i + 1) & 1] (read in
// iteration i - 1, closed by its __syncthreads), everyone waits full[i & 1] with parity
// (i >> 1) & 1, reduces, __syncthreads.
// Build: nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a tensormap_replace_grouped.cu -lcuda
#include <cuda.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int G = 8, SPLIT = 4, C = 64, CH_ROWS = 32, THREADS = 128;
constexpr unsigned CH_BYTES = CH_ROWS * C * 4;

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t *b, unsigned n) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(b)), "r"(n) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *b, unsigned parity) {
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W;\n}"
                 :: "r"(smem_u32(b)), "r"(parity) : "memory");
}
__device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map, uint64_t *bar, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
                 :: "r"(smem_u32(dst)), "l"(map), "r"(smem_u32(bar)), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void tmap_replace_address(void *tm, const void *p) {
    asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;"
                 :: "r"(smem_u32(tm)), "l"(p) : "memory");
}
__device__ __forceinline__ void tmap_replace_rows(void *tm, int rows) {
    asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 1, %1;"
                 :: "r"(smem_u32(tm)), "r"(rows) : "memory");
}
__device__ __forceinline__ void tmap_publish(CUtensorMap *gmap, const void *tm) {
    asm volatile("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;"
                 :: "l"(gmap), "r"(smem_u32(tm)) : "memory");
}
__device__ __forceinline__ void tmap_acquire(const CUtensorMap *gmap) {
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(gmap) : "memory");
}

struct Groups { const float *x[G]; float *y[G]; int rows[G]; };

__global__ __launch_bounds__(THREADS)
void grouped_rowdot(const __grid_constant__ CUtensorMap tmpl, const __grid_constant__ Groups grp,
                    const float *w, CUtensorMap *ws) {
    __shared__ alignas(128) CUtensorMap tm_s;
    __shared__ alignas(128) float x_s[2][CH_ROWS][C];
    __shared__ uint64_t full[2];
    const int q = threadIdx.x, lane = q % 32, warp = q / 32;
    const int g = blockIdx.x, s = blockIdx.y;
    CUtensorMap *gmap = ws + g * SPLIT + s;
    if (q == 0) {
        mbar_init(&full[0], 1);
        mbar_init(&full[1], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (warp == 0) {
        reinterpret_cast<uint32_t *>(&tm_s)[lane] = reinterpret_cast<const uint32_t *>(&tmpl)[lane];
        __syncwarp();
        if (lane == 0) {
            tmap_replace_address(&tm_s, grp.x[g]);
            tmap_replace_rows(&tm_s, grp.rows[g]);
        }
        __syncwarp();
        tmap_publish(gmap, &tm_s);
    }
    __syncthreads();
    const int nch = grp.rows[g] / CH_ROWS;
    const int r = q / 4, c0 = 16 * (q % 4);
    float wv[16];
    for (int j = 0; j < 16; j++) wv[j] = w[c0 + j];
    if (q == 0) {
        tmap_acquire(gmap);
        if (s < nch) {
            mbar_expect_tx(&full[0], CH_BYTES);
            tma_load_2d(&x_s[0][0][0], gmap, &full[0], 0, s * CH_ROWS);
        }
    }
    for (int i = 0, ch = s; ch < nch; i++, ch += SPLIT) {
        if (q == 0 && ch + SPLIT < nch) {
            mbar_expect_tx(&full[(i + 1) & 1], CH_BYTES);
            tma_load_2d(&x_s[(i + 1) & 1][0][0], gmap, &full[(i + 1) & 1], 0, (ch + SPLIT) * CH_ROWS);
        }
        mbar_wait(&full[i & 1], (i >> 1) & 1);
        float acc = 0.0f;
        for (int j = 0; j < 16; j++) acc += x_s[i & 1][r][c0 + j] * wv[j];
        acc += __shfl_xor_sync(0xffffffffu, acc, 1);
        acc += __shfl_xor_sync(0xffffffffu, acc, 2);
        if (q % 4 == 0) grp.y[g][ch * CH_ROWS + r] = acc;
        __syncthreads();
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    Groups grp;
    std::vector<std::vector<float>> hx(G), hy(G);
    std::vector<float> hw(C);
    uint32_t seed = 8202u;
    for (auto &v : hw) v = lcg_uniform(seed);
    for (int g = 0; g < G; g++) {
        grp.rows[g] = 256 * (g + 1);
        hx[g].resize((size_t)grp.rows[g] * C);
        hy[g].resize(grp.rows[g]);
        for (auto &v : hx[g]) v = 2.0f * lcg_uniform(seed);
        float *dx, *dy;
        CUDA_CHECK(cudaMalloc(&dx, hx[g].size() * 4));
        CUDA_CHECK(cudaMalloc(&dy, hy[g].size() * 4));
        CUDA_CHECK(cudaMemcpy(dx, hx[g].data(), hx[g].size() * 4, cudaMemcpyHostToDevice));
        grp.x[g] = dx; grp.y[g] = dy;
    }
    float *dw;
    CUtensorMap *dws;
    CUDA_CHECK(cudaMalloc(&dw, C * 4));
    CUDA_CHECK(cudaMalloc(&dws, G * SPLIT * sizeof(CUtensorMap)));
    CUDA_CHECK(cudaMemcpy(dw, hw.data(), C * 4, cudaMemcpyHostToDevice));
    // the template describes group 0; every block patches address and rows
    CUtensorMap tmpl;
    cuuint64_t dims[2] = {C, (cuuint64_t)grp.rows[0]}, strides[1] = {C * 4};
    cuuint32_t box[2] = {C, CH_ROWS}, estr[2] = {1, 1};
    CUresult cr = cuTensorMapEncodeTiled(&tmpl, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)grp.x[0], dims, strides, box, estr,
                                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                       CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (cr != CUDA_SUCCESS) { printf("encode failed %d\nFAIL\n", (int)cr); return 2; }
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dws, 0, G * SPLIT * sizeof(CUtensorMap)));  // a stale map is all zero
        for (int g = 0; g < G; g++) CUDA_CHECK(cudaMemset(grp.y[g], 0xff, hy[g].size() * 4));  // NaN poison
        grouped_rowdot<<<dim3(G, SPLIT), THREADS>>>(tmpl, grp, dw, dws);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        for (int g = 0; g < G; g++) {
            CUDA_CHECK(cudaMemcpy(hy[g].data(), grp.y[g], hy[g].size() * 4, cudaMemcpyDeviceToHost));
            for (int r = 0; r < grp.rows[g]; r++) {
                double ref = 0.0;
                for (int c = 0; c < C; c++) ref += (double)hx[g][(size_t)r * C + c] * hw[c];
                const double e = std::isfinite(hy[g][r]) ? fabs(hy[g][r] - ref) / (1.0 + fabs(ref)) : 1e30;
                max_err = fmax(max_err, e);
            }
        }
    }
    const bool ok = max_err <= 1e-4;
    printf("tensormap_replace_grouped groups=%d max_rel_err=%.3g\n", G, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
