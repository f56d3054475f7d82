// coop_sense_barrier.cu -- a multi-phase kernel synchronised by a hand-written grid barrier: an
// arrival counter and a generation word in global memory (the last block to arrive resets the
// counter and advances the generation -- the generation's change is the reversed sense the others
// spin for with `ld.acquire.gpu` and `__nanosleep` back-off, `__threadfence()` around the
// arrival), launched with cudaLaunchCooperativeKernel so that every block is resident (plain CUDA
// + inline PTX, no cooperative_groups, no TK).
//
// ROUNDS = 4 rounds of y <- y * rsqrt(mean(y^2)) + 0.1 over N floats (grid-stride, 256 threads,
// grid = resident blocks, at most 2 an SM). Round: every warp writes its sum of squares to
// partial[block * 8 + warp] (global); barrier #1; thread 0 of every block adds all partials in
// the same order into a shared total (__syncthreads), every thread scales its share; barrier #2
// (no block rewrites partial[] while another still reads it).
// grid_barrier: __syncthreads (the block's partial stores before thread 0's arrival); thread 0
// reads the generation g, __threadfence, atomicAdd(count, 1); the last arrival resets count,
// __threadfence, advances gen; the others spin until gen != g; __threadfence; __syncthreads.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int THREADS = 256, WARPS = THREADS / 32, ROUNDS = 4, N = 1 << 21;

__device__ inline unsigned ld_acquire_gpu(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ void grid_barrier(unsigned *count, unsigned *gen) {
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned g = ld_acquire_gpu(gen);
        __threadfence();
        if (atomicAdd(count, 1u) == gridDim.x - 1) {
            atomicExch(count, 0u);
            __threadfence();
            atomicAdd(gen, 1u);
        } else {
            unsigned ns = 8;
            while (ld_acquire_gpu(gen) == g) {
                __nanosleep(ns);
                if (ns < 256) ns *= 2;
            }
        }
        __threadfence();
    }
    __syncthreads();
}

__global__ __launch_bounds__(THREADS)
void rounds_kernel(float *y, double *partial, unsigned *count, unsigned *gen) {
    __shared__ double total_s;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int stride = gridDim.x * THREADS;
    for (int r = 0; r < ROUNDS; r++) {
        double acc = 0.0;
        for (int i = blockIdx.x * THREADS + threadIdx.x; i < N; i += stride) acc += (double)y[i] * y[i];
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (lane == 0) partial[blockIdx.x * WARPS + warp] = acc;
        grid_barrier(count, gen);
        if (threadIdx.x == 0) {
            double tot = 0.0;
            for (int p = 0; p < (int)gridDim.x * WARPS; p++) tot += partial[p];
            total_s = tot;
        }
        __syncthreads();
        const float scale = (float)(1.0 / sqrt(total_s / N));
        for (int i = blockIdx.x * THREADS + threadIdx.x; i < N; i += stride) y[i] = y[i] * scale + 0.1f;
        grid_barrier(count, gen);
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    std::vector<float> hx(N), ref(N), hy(N);
    uint32_t seed = 7303u;
    for (auto &v : hx) v = 3.0f * lcg_uniform(seed);
    ref = hx;
    for (int r = 0; r < ROUNDS; r++) {
        double tot = 0.0;
        for (float v : ref) tot += (double)v * v;
        const float scale = (float)(1.0 / sqrt(tot / N));
        for (auto &v : ref) v = v * scale + 0.1f;
    }
    int dev = 0, sms = 0, per_sm = 0, coop = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rounds_kernel, THREADS, 0));
    if (!coop || per_sm < 1) { printf("no cooperative launch\nFAIL\n"); return 2; }
    const int blocks = sms * (per_sm < 2 ? per_sm : 2);
    float *dy; double *dpart; unsigned *dsync;
    CUDA_CHECK(cudaMalloc(&dy, (size_t)N * 4));
    CUDA_CHECK(cudaMalloc(&dpart, (size_t)blocks * WARPS * 8));
    CUDA_CHECK(cudaMalloc(&dsync, 2 * sizeof(unsigned)));
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemcpy(dy, hx.data(), (size_t)N * 4, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(dsync, 0, 2 * sizeof(unsigned)));
        unsigned *dcount = dsync, *dgen = dsync + 1;
        void *args[] = {&dy, &dpart, &dcount, &dgen};
        CUDA_CHECK(cudaLaunchCooperativeKernel((void *)rounds_kernel, dim3(blocks), dim3(THREADS), args, 0, 0));
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, (size_t)N * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) {
            const double e = std::isfinite(hy[i]) ? fabs(hy[i] - ref[i]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err <= 1e-4;
    printf("coop_sense_barrier n=%d blocks=%d max_abs_err=%.3g\n", N, blocks, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dy); cudaFree(dpart); cudaFree(dsync);
    return ok ? 0 : 1;
}
