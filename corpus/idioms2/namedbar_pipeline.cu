// namedbar_pipeline.cu -- producer and consumer warps of one block handing a double-buffered
// shared-memory stage over through named barriers only (the CUTLASS NamedBarrier
// arrive / sync shape: the producer side arrives, the consumer side syncs), plain CUDA + PTX.
//
// 256 threads: warps 0..3 producers (p = 0..127), warps 4..7 consumers (q = 0..127).
// Block b, iteration i (0 .. NITER-1): producer p loads float4 X[b][i][p], writes
//   buf[i % 2][4p .. 4p+3] = x * x; consumer q reads buf[i % 2][q + 128 j] (j = 0..3: words
//   written by producers of other warps) and accumulates their sum; Y[b * 128 + q] = sum.
// Named barriers (bar.sync / bar.arrive, 256 threads each):
//   FULL0 + s  (ids 1, 2): producers bar.arrive after writing buf[s]; consumers bar.sync
//   EMPTY0 + s (ids 3, 4): consumers bar.arrive after reading buf[s]; producers bar.sync before
//              writing buf[s] again (from i >= 2 on: the first fill of each stage waits for nothing)
//   consumers arrive EMPTY only when the stage will be filled again (i + 2 < NITER), so every
//   arrival is matched and none is left at exit.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int NITER = 64;
constexpr int FULL0 = 1, EMPTY0 = 3;

__device__ __forceinline__ void nb_sync(int id, int n) {
    asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void nb_arrive(int id, int n) {
    asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(n) : "memory");
}

__global__ __launch_bounds__(256)
void nbar_kernel(const float4 *X, float *Y) {
    __shared__ float buf[2][512];
    const int warp = threadIdx.x / 32;
    if (warp < 4) {
        const int p = threadIdx.x;
        for (int i = 0; i < NITER; i++) {
            const int s = i % 2;
            if (i >= 2) nb_sync(EMPTY0 + s, 256);
            const float4 v = X[((size_t)blockIdx.x * NITER + i) * 128 + p];
            buf[s][4 * p + 0] = v.x * v.x;
            buf[s][4 * p + 1] = v.y * v.y;
            buf[s][4 * p + 2] = v.z * v.z;
            buf[s][4 * p + 3] = v.w * v.w;
            nb_arrive(FULL0 + s, 256);
        }
    } else {
        const int q = threadIdx.x - 128;
        float acc = 0.0f;
        for (int i = 0; i < NITER; i++) {
            const int s = i % 2;
            nb_sync(FULL0 + s, 256);
            for (int j = 0; j < 4; j++) acc += buf[s][q + 128 * j];
            if (i + 2 < NITER) nb_arrive(EMPTY0 + s, 256);
        }
        Y[blockIdx.x * 128 + q] = acc;
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int BLOCKS = 528;
    const size_t n = (size_t)BLOCKS * NITER * 512;
    std::vector<float> hX(n);
    uint32_t seed = 2505u;
    for (auto &v : hX) v = 2.0f * lcg_uniform(seed);
    float *dX, *dY;
    CUDA_CHECK(cudaMalloc(&dX, n * 4));
    CUDA_CHECK(cudaMalloc(&dY, BLOCKS * 128 * 4));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), n * 4, cudaMemcpyHostToDevice));
    std::vector<double> ref(BLOCKS * 128, 0.0);
    for (int b = 0; b < BLOCKS; b++)
        for (int i = 0; i < NITER; i++)
            for (int e = 0; e < 512; e++) {
                const double x = hX[((size_t)b * NITER + i) * 512 + e];
                ref[b * 128 + e % 128] += x * x;
            }
    std::vector<float> hY(BLOCKS * 128);
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dY, 0xff, BLOCKS * 128 * 4));  // NaN poison
        nbar_kernel<<<BLOCKS, 256>>>(reinterpret_cast<const float4 *>(dX), dY);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hY.data(), dY, hY.size() * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < hY.size(); i++) {
            double e = std::isfinite(hY[i]) ? fabs(hY[i] - ref[i]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    bool ok = max_err <= 1e-3;
    printf("namedbar_pipeline blocks=%d iters=%d max_abs_err=%.6f\n", BLOCKS, NITER, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dY);
    return ok ? 0 : 1;
}
