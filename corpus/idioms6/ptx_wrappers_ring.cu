// ptx_wrappers_ring.cu -- a producer/consumer ring of 1-D bulk copies written only with libcu++'s
// `cuda::ptx::` wrappers (no inline asm): `cuda::ptx::mbarrier_init`,
// `cuda::ptx::mbarrier_arrive_expect_tx`, `cuda::ptx::cp_async_bulk` (global -> shared, completing
// on an mbarrier), `cuda::ptx::mbarrier_try_wait_parity` spun in a loop by the caller and
// `cuda::ptx::mbarrier_arrive` for the release (plain CUDA, no TK).
//
// Each block transforms NCH = 16 consecutive chunks of 2048 floats: y[j] = x[j] * x[j] + 0.5 x[j].
// 160 threads: warp 0 is the producer (its thread 0 issues), warps 1-4 the consumers (16 elements
// per thread and chunk). Shared: buf[4][2048] (a 4-stage ring), full[4] (count 1: the producer's
// arrive.expect_tx, 8192 bytes), empty[4] (count 4: lane 0 of each consumer warp after the warp
// read the stage). Chunk c uses stage c % 4 with parity (c / 4) & 1; the producer waits on
// empty[s] with the opposite parity (a fresh barrier counts as released).
#include <cuda/ptx>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

namespace ptx = cuda::ptx;

constexpr int CHUNK = 2048, NCH = 16, STAGES = 4, CWARPS = 4, THREADS = 32 * (CWARPS + 1), BLOCKS = 264;
constexpr int PER = CHUNK / (32 * CWARPS);
constexpr uint32_t CHUNK_BYTES = CHUNK * sizeof(float);
constexpr int N = BLOCKS * NCH * CHUNK;

__device__ inline void wait_parity(uint64_t *bar, uint32_t parity) {
    while (!ptx::mbarrier_try_wait_parity(bar, parity)) {
    }
}

__global__ __launch_bounds__(THREADS)
void ring_kernel(const float *x, float *y) {
    __shared__ alignas(128) float buf[STAGES][CHUNK];
    __shared__ alignas(8) uint64_t full[STAGES];
    __shared__ alignas(8) uint64_t empty[STAGES];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const float *src = x + (size_t)blockIdx.x * NCH * CHUNK;
    float *dst = y + (size_t)blockIdx.x * NCH * CHUNK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            ptx::mbarrier_init(&full[s], 1);
            ptx::mbarrier_init(&empty[s], CWARPS);
        }
    }
    __syncthreads();
    if (warp == 0) {
        if (lane == 0) {
            const uint32_t bytes = CHUNK_BYTES;  // the wrappers take the size by reference
            for (int c = 0; c < NCH; c++) {
                const int s = c % STAGES;
                const uint32_t ph = (c / STAGES) & 1;
                wait_parity(&empty[s], ph ^ 1);
                ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[s], bytes);
                ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, buf[s], src + c * CHUNK, bytes, &full[s]);
            }
        }
    } else {
        const int t = threadIdx.x - 32;
        for (int c = 0; c < NCH; c++) {
            const int s = c % STAGES;
            const uint32_t ph = (c / STAGES) & 1;
            wait_parity(&full[s], ph);
            float v[PER];
            for (int k = 0; k < PER; k++) v[k] = buf[s][t + k * 32 * CWARPS];
            __syncwarp();
            if (lane == 0) ptx::mbarrier_arrive(&empty[s]);
            for (int k = 0; k < PER; k++) dst[c * CHUNK + t + k * 32 * CWARPS] = v[k] * v[k] + 0.5f * v[k];
        }
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
    uint32_t seed = 6101u;
    for (auto &v : hx) v = 4.0f * lcg_uniform(seed);
    for (int i = 0; i < N; i++) ref[i] = hx[i] * hx[i] + 0.5f * hx[i];
    float *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, (size_t)N * 4));
    CUDA_CHECK(cudaMalloc(&dy, (size_t)N * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), (size_t)N * 4, cudaMemcpyHostToDevice));
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, (size_t)N * 4));  // NaN poison
        ring_kernel<<<BLOCKS, THREADS>>>(dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, (size_t)N * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) {
            const double e = std::isfinite(hy[i]) ? fabs(hy[i] - ref[i]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err <= 1e-4;
    printf("ptx_wrappers_ring N=%d blocks=%d max_abs_err=%.3g\n", N, BLOCKS, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy);
    return ok ? 0 : 1;
}
