// splitk_atomic_ref.cu -- split-K matrix-vector product whose splits meet at a per-tile semaphore
// in global memory, written with libcu++'s `cuda::atomic_ref` on the publishing side and an inline
// `ld.acquire.gpu` poll on the owner's side (plain CUDA, no TK). The owner of a tile (split 0)
// keeps its own partial in shared memory and waits until the other splits have published theirs;
// the others store their partial rows to a workspace, raise the semaphore and leave.
//
// y[r] = sum_k A[r][k] x[k]; R = 4096 rows, K = 4096; a tile is 128 rows, K is cut in SPLITS = 4
// ranges of 1024; grid (R / 128, SPLITS) = 128 blocks (all resident at once on an H100/H200).
// 256 threads: the block stages its x range in x_s (__syncthreads), warp w computes rows
//   16 w .. 16 w + 15 (lanes stride the columns, shuffle reduction, lane 0 writes part_s[row]),
//   __syncthreads.
// Non-owners: threads 0..127 store part_s to ws[tile][split][0..128); __syncthreads (the stores
//   of every warp before thread 0's release); thread 0: atomic_ref(sem[tile]).fetch_add(1, release).
// Owner: thread 0 spins with ld.acquire.gpu until sem[tile] == SPLITS - 1; __syncthreads (the
//   other threads' reads after that acquire); threads 0..127 add the workspace rows to their own
//   and write y; thread 0 resets sem[tile] to 0 for the next launch (relaxed store: the launch
//   boundary orders it).
#include <cuda/atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int R = 4096, K = 4096, TR = 128, SPLITS = 4, KS = K / SPLITS, THREADS = 256, OWNER = 0;

__device__ __forceinline__ int ld_acquire_gpu(const int *p) {
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__global__ __launch_bounds__(THREADS)
void splitk_gemv_kernel(const float *A, const float *x, float *y, float *ws, int *sem) {
    __shared__ float x_s[KS];
    __shared__ float part_s[TR];
    const int tile = blockIdx.x, split = blockIdx.y;
    const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    for (int i = threadIdx.x; i < KS; i += THREADS) x_s[i] = x[split * KS + i];
    __syncthreads();
    for (int r = 0; r < 16; r++) {
        const int row = tile * TR + warp * 16 + r;
        const float *a = A + (size_t)row * K + split * KS;
        float v = 0.0f;
        for (int c = lane; c < KS; c += 32) v += a[c] * x_s[c];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) part_s[warp * 16 + r] = v;
    }
    __syncthreads();
    if (split != OWNER) {
        if (threadIdx.x < TR) ws[((size_t)tile * SPLITS + split) * TR + threadIdx.x] = part_s[threadIdx.x];
        __syncthreads();
        if (threadIdx.x == 0) {
            cuda::atomic_ref<int, cuda::thread_scope_device> count(sem[tile]);
            count.fetch_add(1, cuda::memory_order_release);
        }
        return;
    }
    if (threadIdx.x == 0) {
        while (ld_acquire_gpu(&sem[tile]) < SPLITS - 1) {
        }
    }
    __syncthreads();
    if (threadIdx.x < TR) {
        float s = part_s[threadIdx.x];
        for (int q = 0; q < SPLITS; q++)
            if (q != OWNER) s += ws[((size_t)tile * SPLITS + q) * TR + threadIdx.x];
        y[tile * TR + threadIdx.x] = s;
    }
    if (threadIdx.x == 0) {
        cuda::atomic_ref<int, cuda::thread_scope_device> reset(sem[tile]);
        reset.store(0, cuda::memory_order_relaxed);
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    std::vector<float> hA((size_t)R * K), hx(K);
    uint32_t seed = 5203u;
    for (auto &v : hA) v = lcg_uniform(seed);
    for (auto &v : hx) v = lcg_uniform(seed);
    std::vector<double> ref(R);
    for (int r = 0; r < R; r++) {
        double s = 0.0;
        for (int k = 0; k < K; k++) s += (double)hA[(size_t)r * K + k] * hx[k];
        ref[r] = s;
    }
    float *dA, *dx, *dy, *dws; int *dsem;
    CUDA_CHECK(cudaMalloc(&dA, hA.size() * 4));
    CUDA_CHECK(cudaMalloc(&dx, K * 4));
    CUDA_CHECK(cudaMalloc(&dy, R * 4));
    CUDA_CHECK(cudaMalloc(&dws, (size_t)(R / TR) * SPLITS * TR * 4));
    CUDA_CHECK(cudaMalloc(&dsem, (R / TR) * 4));
    CUDA_CHECK(cudaMemcpy(dA, hA.data(), hA.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), K * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dsem, 0, (R / TR) * 4));  // once: the owners reset their semaphores
    std::vector<float> hy(R);
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, R * 4));                                // NaN poison
        CUDA_CHECK(cudaMemset(dws, 0xff, (size_t)(R / TR) * SPLITS * TR * 4));  // and the workspace
        splitk_gemv_kernel<<<dim3(R / TR, SPLITS), THREADS>>>(dA, dx, dy, dws, dsem);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, R * 4, cudaMemcpyDeviceToHost));
        for (int r = 0; r < R; r++) {
            const double e = std::isfinite(hy[r]) ? fabs(hy[r] - ref[r]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err <= 1e-3;
    printf("splitk_atomic_ref R=%d K=%d splits=%d max_abs_err=%.3g\n", R, K, SPLITS, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dx); cudaFree(dy); cudaFree(dws); cudaFree(dsem);
    return ok ? 0 : 1;
}
