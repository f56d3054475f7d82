// bulk_reduce_add.cu -- column sums of a tall matrix, every block adding its partial sums into the
// global result with the bulk (non-tensor) TMA reduction
// `cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32` from a double-buffered shared
// staging row, the bulk groups committed per tile and waited with
// `cp.async.bulk.wait_group.read 1` before a staging buffer is written again and
// `cp.async.bulk.wait_group 0` before the block exits (plain CUDA + inline PTX, no TK).
//
// out[j] = sum over all ROWS rows of x[i][j], COLS = 4096. Each block sums RB = 32 rows, one
// column tile of TC = 1024 at a time (NT = 4 tiles); 256 threads, 4 columns each. Tile t is
// staged in stage[t & 1]: every thread writes its 4 sums, `fence.proxy.async.shared::cta` (the
// generic writes made visible to the async proxy), `__syncthreads()`, then thread 0 issues the
// reduction of the 4096 bytes into out[t * TC ...] and commits the group. Before tile t >= 2 reuses
// stage[t & 1], thread 0 waits until at most one group (tile t - 1's) is still reading, then
// `__syncthreads()`. The inputs are multiples of 1/64, so every sum is exact in float and the
// order of the additions does not matter.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int COLS = 4096, TC = 1024, NT = COLS / TC, RB = 32, THREADS = 256, PER = TC / THREADS, BLOCKS = 528;
constexpr int ROWS = BLOCKS * RB;
constexpr uint32_t TILE_BYTES = TC * sizeof(float);

__device__ inline uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ inline void async_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

__device__ inline void bulk_reduce_add(float *dst, const float *src, uint32_t bytes) {
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;"
                 :: "l"(dst), "r"(smem_addr(src)), "r"(bytes) : "memory");
}

__device__ inline void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

// at most one committed group may still be reading its shared source
__device__ inline void bulk_wait_read_all_but_one() { asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory"); }

// every committed group complete (its global writes performed)
__device__ inline void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

__global__ __launch_bounds__(THREADS)
void colsum_kernel(const float *x, float *out) {
    __shared__ alignas(128) float stage[2][TC];
    const float *rows = x + (size_t)blockIdx.x * RB * COLS;
    for (int t = 0; t < NT; t++) {
        const int b = t & 1;
        if (t >= 2) {
            if (threadIdx.x == 0) bulk_wait_read_all_but_one();
            __syncthreads();
        }
        for (int k = 0; k < PER; k++) {
            const int col = threadIdx.x + k * THREADS;
            float s = 0.0f;
            for (int r = 0; r < RB; r++) s += rows[(size_t)r * COLS + t * TC + col];
            stage[b][col] = s;
        }
        async_proxy_fence();
        __syncthreads();
        if (threadIdx.x == 0) {
            bulk_reduce_add(out + t * TC, stage[b], TILE_BYTES);
            bulk_commit();
        }
    }
    if (threadIdx.x == 0) bulk_wait_all();
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    std::vector<float> hx((size_t)ROWS * COLS), hy(COLS);
    std::vector<double> ref(COLS, 0.0);
    uint32_t seed = 6303u;
    for (auto &v : hx) {
        seed = seed * 1664525u + 1013904223u;
        v = (float)((int)(seed >> 24) - 128) / 64.0f;  // a multiple of 1/64 in [-2, 2)
    }
    for (size_t i = 0; i < hx.size(); i++) ref[i % COLS] += hx[i];
    float *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, hx.size() * 4));
    CUDA_CHECK(cudaMalloc(&dy, (size_t)COLS * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0, (size_t)COLS * 4));
        colsum_kernel<<<BLOCKS, THREADS>>>(dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, (size_t)COLS * 4, cudaMemcpyDeviceToHost));
        for (int j = 0; j < COLS; j++) {
            const double e = std::isfinite(hy[j]) ? fabs(hy[j] - ref[j]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err == 0.0;
    printf("bulk_reduce_add rows=%d cols=%d blocks=%d max_abs_err=%.3g\n", ROWS, COLS, BLOCKS, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy);
    return ok ? 0 : 1;
}
