// grid_sync_reduce.cu -- a two-phase normalisation through grid-wide barriers of cooperative
// groups, launched with cudaLaunchCooperativeKernel (every block resident at once).
//
// y[i] = x[i]^2 / sum_j x[j]^2 over N floats; grid = 2 blocks per SM (at most), 256 threads.
// Phase 1: each block reduces its grid-stride share into partial[blockIdx.x]: per-thread sum,
//   warp shuffle, the 8 warp sums through red_s[8] (__syncthreads between writing and reading),
//   thread 0 writes the block's partial.
// grid.sync() #1: every partial is written and visible.
// Phase 2: block 0 reduces the partials the same way into *total (red_s reused: grid.sync() is a
//   block barrier too, so thread 0's phase-1 reads of red_s come before the new writes).
// grid.sync() #2: *total is visible; every block scales its share.
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

namespace cg = cooperative_groups;

constexpr int THREADS = 256, WARPS = THREADS / 32;

__device__ float block_sum(float v, float *red_s) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) red_s[threadIdx.x / 32] = v;
    __syncthreads();
    float s = 0.0f;
    if (threadIdx.x == 0)
        for (int w = 0; w < WARPS; w++) s += red_s[w];
    return s;  // meaningful in thread 0
}

__global__ __launch_bounds__(THREADS)
void gridnorm_kernel(const float *X, float *Y, float *partial, float *total, int n) {
    __shared__ float red_s[WARPS];
    cg::grid_group grid = cg::this_grid();
    const int stride = gridDim.x * THREADS;
    float acc = 0.0f;
    for (int i = blockIdx.x * THREADS + threadIdx.x; i < n; i += stride) acc += X[i] * X[i];
    const float bs = block_sum(acc, red_s);
    if (threadIdx.x == 0) partial[blockIdx.x] = bs;
    grid.sync();
    if (blockIdx.x == 0) {
        float p = 0.0f;
        for (int b = threadIdx.x; b < gridDim.x; b += THREADS) p += partial[b];
        const float t = block_sum(p, red_s);
        if (threadIdx.x == 0) *total = t;
    }
    grid.sync();
    const float inv = 1.0f / *total;
    for (int i = blockIdx.x * THREADS + threadIdx.x; i < n; i += stride) Y[i] = X[i] * X[i] * inv;
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    int n = 1 << 22;
    std::vector<float> hX(n);
    uint32_t seed = 4101u;
    for (auto &v : hX) v = 2.0f * lcg_uniform(seed);
    int dev = 0, sms = 0, per_sm = 0, coop = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gridnorm_kernel, THREADS, 0));
    if (!coop || per_sm < 1) { printf("no cooperative launch\nFAIL\n"); return 2; }
    int blocks = sms * (per_sm < 2 ? per_sm : 2);
    float *dX, *dY, *dP, *dT;
    CUDA_CHECK(cudaMalloc(&dX, n * 4));
    CUDA_CHECK(cudaMalloc(&dY, n * 4));
    CUDA_CHECK(cudaMalloc(&dP, blocks * 4));
    CUDA_CHECK(cudaMalloc(&dT, 4));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), n * 4, cudaMemcpyHostToDevice));
    double ss = 0.0;
    for (float v : hX) ss += (double)v * v;
    std::vector<float> hY(n);
    double max_rel = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dY, 0xff, n * 4));  // NaN poison
        CUDA_CHECK(cudaMemset(dP, 0xff, blocks * 4));
        CUDA_CHECK(cudaMemset(dT, 0, 4));
        void *args[] = {&dX, &dY, &dP, &dT, &n};
        CUDA_CHECK(cudaLaunchCooperativeKernel((void *)gridnorm_kernel, blocks, THREADS, args, 0, 0));
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hY.data(), dY, n * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) {
            const double ref = (double)hX[i] * hX[i] / ss;
            const double e = std::isfinite(hY[i]) ? fabs(hY[i] - ref) / (ref + 1e-12) : 1e30;
            if (e > max_rel && ref > 1e-12) max_rel = e;
        }
    }
    const bool ok = max_rel <= 1e-3;
    printf("grid_sync_reduce n=%d blocks=%d max_rel_err=%.3g\n", n, blocks, max_rel);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dY); cudaFree(dP); cudaFree(dT);
    return ok ? 0 : 1;
}
