// cg_memcpy_waitprior.cu -- a 3-stage prefetch ring written with cooperative groups' collective
// `cg::memcpy_async(block, ...)` and `cg::wait_prior<N>(block)` (which waits for all but the last
// N copies of the calling thread and then syncs the group), plus a per-tile block reduction with
// `cg::reduce` over 32-thread tiles and a scale in a shared scalar (plain CUDA, no TK).
//
// Each block smooths NT = 16 consecutive tiles of 1024 floats:
//   y[j] = (0.25 x[j-1] + 0.5 x[j] + 0.25 x[j+1]) / (1 + mean_j |x[j]|)   (ends clamped in a tile)
// 256 threads (4 elements each); shared buf[3][1024], red_s[8], scale_s.
// Prologue: tiles 0 and 1 copied into buf[0], buf[1]. Iteration i: the copy of tile i + 2 into
//   buf[(i + 2) % 3] (the stage read in iteration i - 1, freed by the block.sync() closing it),
//   then wait_prior<2> (tile i has landed; tiles i + 1, i + 2 may be in flight); near the end
//   fewer copies were issued, so wait_prior<1> for the second-to-last tile and wait_prior<0> for
//   the last. Then |x| sums: cg::reduce per 32-thread tile, lane 0 into red_s[warp],
//   block.sync(), thread 0 sums red_s and writes scale_s, block.sync(), every thread writes its 4
//   outputs, block.sync() (buf[i % 3], red_s and scale_s free again).
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cooperative_groups/reduce.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

namespace cg = cooperative_groups;

constexpr int TILE = 1024, NT = 16, STAGES = 3, THREADS = 256, PER = TILE / THREADS, BLOCKS = 512;
constexpr int N = BLOCKS * NT * TILE;

__global__ __launch_bounds__(THREADS)
void smooth_kernel(const float *x, float *y) {
    __shared__ alignas(16) float buf[STAGES][TILE];
    __shared__ float red_s[THREADS / 32];
    __shared__ float scale_s;
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const float *src = x + (size_t)blockIdx.x * NT * TILE;
    float *dst = y + (size_t)blockIdx.x * NT * TILE;
    for (int p = 0; p < STAGES - 1; p++) cg::memcpy_async(block, buf[p], src + p * TILE, sizeof(float) * TILE);
    for (int i = 0; i < NT; i++) {
        if (i + STAGES - 1 < NT) {
            cg::memcpy_async(block, buf[(i + STAGES - 1) % STAGES], src + (i + STAGES - 1) * TILE, sizeof(float) * TILE);
            cg::wait_prior<STAGES - 1>(block);
        } else if (i + 1 < NT) {
            cg::wait_prior<1>(block);
        } else {
            cg::wait(block);
        }
        const float *b = buf[i % STAGES];
        float a = 0.0f;
        for (int k = 0; k < PER; k++) a += fabsf(b[threadIdx.x + k * THREADS]);
        a = cg::reduce(warp, a, cg::plus<float>());
        if (warp.thread_rank() == 0) red_s[warp.meta_group_rank()] = a;
        block.sync();
        if (threadIdx.x == 0) {
            float s = 0.0f;
            for (int w = 0; w < THREADS / 32; w++) s += red_s[w];
            scale_s = 1.0f / (1.0f + s / TILE);
        }
        block.sync();
        const float sc = scale_s;
        for (int k = 0; k < PER; k++) {
            const int j = threadIdx.x + k * THREADS;
            const float l = b[j > 0 ? j - 1 : 0], c = b[j], r = b[j < TILE - 1 ? j + 1 : TILE - 1];
            dst[i * TILE + j] = (0.25f * l + 0.5f * c + 0.25f * r) * sc;
        }
        block.sync();
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    std::vector<float> hx(N), ref(N);
    uint32_t seed = 5501u;
    for (auto &v : hx) v = 4.0f * lcg_uniform(seed);
    for (int t = 0; t < N / TILE; t++) {
        const float *b = hx.data() + (size_t)t * TILE;
        double s = 0.0;
        for (int j = 0; j < TILE; j++) s += fabs((double)b[j]);
        const double sc = 1.0 / (1.0 + s / TILE);
        for (int j = 0; j < TILE; j++) {
            const double l = b[j > 0 ? j - 1 : 0], c = b[j], r = b[j < TILE - 1 ? j + 1 : TILE - 1];
            ref[(size_t)t * TILE + j] = (float)((0.25 * l + 0.5 * c + 0.25 * r) * sc);
        }
    }
    float *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, (size_t)N * 4));
    CUDA_CHECK(cudaMalloc(&dy, (size_t)N * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), (size_t)N * 4, cudaMemcpyHostToDevice));
    std::vector<float> hy(N);
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, (size_t)N * 4));  // NaN poison
        smooth_kernel<<<BLOCKS, THREADS>>>(dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, (size_t)N * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < hy.size(); i++) {
            const double e = std::isfinite(hy[i]) ? fabs(hy[i] - ref[i]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err <= 1e-4;
    printf("cg_memcpy_waitprior N=%d blocks=%d max_abs_err=%.3g\n", N, BLOCKS, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy);
    return ok ? 0 : 1;
}
