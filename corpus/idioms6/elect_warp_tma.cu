// elect_warp_tma.cu -- every warp runs its own double-buffered bulk-copy pipeline: one lane chosen
// by `elect.sync` initialises the warp's two mbarriers and issues the warp's 1-D bulk copies
// (`cp.async.bulk ... mbarrier::complete_tx::bytes`) with their `mbarrier.arrive.expect_tx`; the
// whole warp waits on the warp's barrier and `__syncwarp()` is the only synchronisation between
// the lanes' reads of a stage and its refill (no block barrier anywhere; plain CUDA +
// inline PTX, no TK).
//
// Each warp computes, for its NCH = 24 chunks of 512 floats, y[j] = x[j] * a[chunk] + x[j]^3
// (a[chunk] = 1 + chunk / 16). 256 threads = 8 warps; shared per warp: buf[2][512] and
// bar[2] (count 1: the elected lane's arrive.expect_tx, 2048 bytes). Chunk c uses stage c & 1 and
// parity (c >> 1) & 1; the refill of stage (c + 1) & 1 is issued at the top of iteration c,
// after the `__syncwarp()` that closed iteration c - 1 (the lanes' last reads of that stage).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int CHUNK = 512, NCH = 24, WARPS = 8, THREADS = 32 * WARPS, BLOCKS = 264;
constexpr int PER = CHUNK / 32;
constexpr uint32_t CHUNK_BYTES = CHUNK * sizeof(float);
constexpr int N = BLOCKS * WARPS * NCH * CHUNK;

__device__ inline uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

// one lane of the (converged) warp gets true
__device__ inline bool elect_one() {
    uint32_t pred = 0;
    asm volatile(
        "{\n\t.reg .pred P;\n\t"
        "elect.sync _|P, 0xffffffff;\n\t"
        "selp.u32 %0, 1, 0, P;\n\t}"
        : "=r"(pred));
    return pred != 0;
}

__device__ inline void mbar_init(uint64_t *bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count) : "memory");
}

__device__ inline void mbar_expect_tx(uint64_t *bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
}

__device__ inline void bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
}

__device__ inline void mbar_wait(uint64_t *bar, uint32_t parity) {
    asm volatile(
        "{\n\t.reg .pred P;\n"
        "WAIT_%=:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\n\t"
        "@!P bra WAIT_%=;\n\t}"
        :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}

__global__ __launch_bounds__(THREADS)
void warp_pipeline_kernel(const float *x, float *y) {
    __shared__ alignas(128) float buf[WARPS][2][CHUNK];
    __shared__ alignas(8) uint64_t bar[WARPS][2];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const size_t base = ((size_t)blockIdx.x * WARPS + warp) * NCH * CHUNK;
    const float *src = x + base;
    float *dst = y + base;
    if (elect_one()) {
        mbar_init(&bar[warp][0], 1);
        mbar_init(&bar[warp][1], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncwarp();
    if (elect_one()) {
        mbar_expect_tx(&bar[warp][0], CHUNK_BYTES);
        bulk_load(buf[warp][0], src, CHUNK_BYTES, &bar[warp][0]);
    }
    for (int c = 0; c < NCH; c++) {
        const int s = c & 1;
        if (c + 1 < NCH && elect_one()) {
            mbar_expect_tx(&bar[warp][s ^ 1], CHUNK_BYTES);
            bulk_load(buf[warp][s ^ 1], src + (c + 1) * CHUNK, CHUNK_BYTES, &bar[warp][s ^ 1]);
        }
        mbar_wait(&bar[warp][s], (c >> 1) & 1);
        const float a = 1.0f + c / 16.0f;
        for (int k = 0; k < PER; k++) {
            const float v = buf[warp][s][lane + 32 * k];
            dst[c * CHUNK + lane + 32 * k] = v * a + v * v * v;
        }
        __syncwarp();
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
    uint32_t seed = 6202u;
    for (auto &v : hx) v = 2.0f * lcg_uniform(seed);
    for (int i = 0; i < N; i++) {
        const int c = (i / CHUNK) % NCH;
        const float a = 1.0f + c / 16.0f, v = hx[i];
        ref[i] = v * a + v * v * v;
    }
    float *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, (size_t)N * 4));
    CUDA_CHECK(cudaMalloc(&dy, (size_t)N * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), (size_t)N * 4, cudaMemcpyHostToDevice));
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, (size_t)N * 4));  // NaN poison
        warp_pipeline_kernel<<<BLOCKS, THREADS>>>(dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, (size_t)N * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) {
            const double e = std::isfinite(hy[i]) ? fabs(hy[i] - ref[i]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err <= 1e-4;
    printf("elect_warp_tma N=%d blocks=%d max_abs_err=%.3g\n", N, BLOCKS, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy);
    return ok ? 0 : 1;
}
