// smem_spsc_queue.cu -- a lock-free single-producer / single-consumer queue in shared memory
// between two warps: a ring of QCAP 32-float slots and two volatile indices, `tail` (written by
// the producer warp's lane 0) and `head` (written by the consumer warp's lane 0); the hand-off
// is ordered only by `__threadfence_block()` and `__syncwarp()` -- no named barrier, no mbarrier,
// no __syncthreads after the start (plain CUDA, no TK).
//
// 64 threads a block: warp 0 produces, warp 1 consumes; NITEMS = 256 items a block. Item i (32
// floats, one a lane) goes to slot i % QCAP (QCAP = 4). Producer: all lanes spin until
// tail - head < QCAP, write the slot (x^2 + 1), __syncwarp, __threadfence_block, lane 0 stores
// tail = i + 1. Consumer: all lanes spin until tail > i, __threadfence_block, read the slot,
// __syncwarp, __threadfence_block, lane 0 stores head = i + 1; each lane keeps a running sum and
// writes out[i][lane] = the sum of items 0..i of its column.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int QCAP = 4, NITEMS = 256, BLOCKS = 1056, THREADS = 64;

__global__ __launch_bounds__(THREADS)
void spsc_kernel(const float *x, float *out) {
    __shared__ float q[QCAP][32];
    __shared__ volatile unsigned head, tail;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        head = 0;
        tail = 0;
    }
    __syncthreads();
    const float *src = x + (size_t)blockIdx.x * NITEMS * 32;
    float *dst = out + (size_t)blockIdx.x * NITEMS * 32;
    if (warp == 0) {
        for (unsigned i = 0; i < NITEMS; i++) {
            const float v = src[i * 32 + lane];
            while (i - head >= QCAP) { }
            q[i % QCAP][lane] = v * v + 1.0f;
            __syncwarp();
            __threadfence_block();
            if (lane == 0) tail = i + 1;
        }
    } else {
        float acc = 0.0f;
        for (unsigned i = 0; i < NITEMS; i++) {
            while (tail <= i) { }
            __threadfence_block();
            const float v = q[i % QCAP][lane];
            __syncwarp();
            __threadfence_block();
            if (lane == 0) head = i + 1;
            acc += v;
            dst[i * 32 + lane] = acc;
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
    const size_t n = (size_t)BLOCKS * NITEMS * 32;
    std::vector<float> hx(n), ref(n), hy(n);
    uint32_t seed = 7404u;
    for (auto &v : hx) v = 2.0f * lcg_uniform(seed);
    for (int b = 0; b < BLOCKS; b++)
        for (int l = 0; l < 32; l++) {
            float acc = 0.0f;
            for (int i = 0; i < NITEMS; i++) {
                const size_t k = ((size_t)b * NITEMS + i) * 32 + l;
                acc += hx[k] * hx[k] + 1.0f;
                ref[k] = acc;
            }
        }
    float *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&dy, n * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, n * 4));  // NaN poison
        spsc_kernel<<<BLOCKS, THREADS>>>(dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) {
            const double e = std::isfinite(hy[i]) ? fabs(hy[i] - ref[i]) / (1.0 + fabs(ref[i])) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err <= 1e-5;
    printf("smem_spsc_queue blocks=%d items=%d max_rel_err=%.3g\n", BLOCKS, NITEMS, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy);
    return ok ? 0 : 1;
}
