// bulk_store_ring.cu -- a persistent streaming kernel on non-tensor bulk copies, plain CUDA + PTX
// (no TK, no tensor map): 1-D `cp.async.bulk` loads into a 3-stage ring that complete bytes on an
// mbarrier (complete_tx), and an epilogue ring of two staging buffers written back by
// `cp.async.bulk` stores in bulk groups, a buffer reused only after `cp.async.bulk.wait_group.read 1`.
//
// Y[c][i] = 2 * X[c][i] * X[c][CH - 1 - i] + 1 for NCH chunks of CH = 1024 floats; block b handles
// chunks b, b + gridDim.x, ... (it = 0, 1, ...).
// 160 threads: warp 0 lane 0 producer; warps 1..4 consumers (ct = 0..127); consumer ct == 0 also
//   issues the stores.
// Shared: in_s[3][CH] (ring), out_s[2][CH] (staging).
// Barriers: full[s] (count 1: the producer's arrive.expect_tx of CH * 4 bytes; the bulk load
//   completes the bytes), empty[s] (count 4: lane 0 of each consumer warp after __syncwarp).
//   Producer waits empty[s] with parity ((it / 3) & 1) ^ 1 (fresh barrier: the first round passes),
//   consumers wait full[s] with (it / 3) & 1.
// Named barriers among the 128 consumers: STAGE_FREE (id 1): after the issuer's wait_group.read 1
//   (the store of it - 2, which read out_s[it & 1], is done reading); STAGE_FULL (id 2): after every
//   consumer wrote out_s[it & 1] and ran fence.proxy.async, before the issuer's store.
// The issuer waits for all its bulk groups (wait_group 0) before it exits.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int CH = 1024, STAGES = 3, NCONS = 128;
constexpr int STAGE_FREE = 1, STAGE_FULL = 2;

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(smem_u32(bar)), "r"(parity) : "memory");
    } while (!done);
}
__device__ __forceinline__ void bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(smem_u32(dst)), "l"(src), "r"(bytes), "r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void bulk_store(void *dst, const void *src, uint32_t bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                 :: "l"(dst), "r"(smem_u32(src)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory"); }
template <int N>
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory"); }
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void named_sync(int id, int n) { asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(n) : "memory"); }

__global__ __launch_bounds__(160, 1)
void bulk_ring_kernel(const float *X, float *Y, int NCH) {
    __shared__ alignas(128) float in_s[STAGES][CH];
    __shared__ alignas(128) float out_s[2][CH];
    __shared__ alignas(8) uint64_t full[STAGES], empty[STAGES];
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 4);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const int n = (NCH - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x;

    if (threadIdx.x < 32) {
        if (threadIdx.x == 0) {
            for (int it = 0; it < n; it++) {
                const int s = it % STAGES;
                const size_t c = blockIdx.x + (size_t)it * gridDim.x;
                mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
                mbar_arrive_expect_tx(&full[s], CH * 4);
                bulk_load(in_s[s], X + c * CH, CH * 4, &full[s]);
            }
        }
    } else {
        const int ct = threadIdx.x - 32;
        for (int it = 0; it < n; it++) {
            const int s = it % STAGES, b = it & 1;
            const size_t c = blockIdx.x + (size_t)it * gridDim.x;
            if (ct == 0 && it >= 2) bulk_wait_read<1>();
            named_sync(STAGE_FREE, NCONS);
            mbar_wait(&full[s], (it / STAGES) & 1);
            for (int j = 0; j < CH / NCONS; j++) {
                const int i = ct + NCONS * j;
                out_s[b][i] = 2.0f * in_s[s][i] * in_s[s][CH - 1 - i] + 1.0f;
            }
            __syncwarp();
            if ((ct & 31) == 0) mbar_arrive(&empty[s]);
            fence_proxy_async();
            named_sync(STAGE_FULL, NCONS);
            if (ct == 0) {
                bulk_store(Y + c * CH, out_s[b], CH * 4);
                bulk_commit();
            }
        }
        if (ct == 0) bulk_wait<0>();
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int NCH = 8192;
    std::vector<float> hX((size_t)NCH * CH);
    uint32_t seed = 3101u;
    for (auto &v : hX) v = 4.0f * lcg_uniform(seed);
    float *dX, *dY;
    CUDA_CHECK(cudaMalloc(&dX, hX.size() * 4));
    CUDA_CHECK(cudaMalloc(&dY, hX.size() * 4));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), hX.size() * 4, cudaMemcpyHostToDevice));
    std::vector<float> hY(hX.size());
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dY, 0xff, hX.size() * 4));  // NaN poison
        bulk_ring_kernel<<<132, 160>>>(dX, dY, NCH);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hY.data(), dY, hY.size() * 4, cudaMemcpyDeviceToHost));
        for (size_t c = 0; c < (size_t)NCH; c++)
            for (int i = 0; i < CH; i++) {
                const double ref = 2.0 * hX[c * CH + i] * hX[c * CH + CH - 1 - i] + 1.0;
                const double y = hY[c * CH + i];
                const double e = std::isfinite(y) ? fabs(y - ref) : 1e30;
                if (e > max_err) max_err = e;
            }
    }
    const bool ok = max_err <= 1e-4;
    printf("bulk_store_ring NCH=%d max_abs_err=%.6f\n", NCH, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dY);
    return ok ? 0 : 1;
}
