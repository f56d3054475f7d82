// cluster_multicast.cu -- a 2-CTA cluster sharing one input stream: each CTA loads half of every
// chunk with a multicast 1-D bulk copy (`cp.async.bulk ... .multicast::cluster`) into the same
// ring stage of both CTAs; both halves complete bytes on each CTA's own full barrier. A stage is
// free again only when the consumers of BOTH CTAs are done with it: each consumer warp arrives on
// its own CTA's empty barrier and, through `mapa`, on the peer's (a remote
// `mbarrier.arrive.release.cluster`). Plain CUDA + PTX, `__cluster_dims__(2, 1, 1)`.
//
// Chunk c (CH = 2048 floats) is read by both CTAs of cluster c % nclusters; CTA rank r writes
// Y[r][c][i] = X[c][i] * (r + 1) + X[c][CH - 1 - i] (each element needs both halves).
// 160 threads: warp 0 lane 0 producer; warps 1..4 consumers (ct = 0..127).
// Shared: x_s[2][CH] (ring of 2 stages; CTA r's producer writes half r of both CTAs' x_s[s]).
// Barriers (per CTA): full[s] (count 1: own producer's arrive.expect_tx of CH * 4 bytes, the
//   bytes of both halves: own multicast and the peer's); empty[s] (count 8: lane 0 of each of the 4
//   consumer warps of each of the 2 CTAs). Producer waits empty[s] with ((it / 2) & 1) ^ 1
//   (acquire.cluster), consumers wait full[s] with (it / 2) & 1.
// Barrier init is published to the peer with fence.mbarrier_init + a cluster barrier
// (arrive.release / wait.acquire) before any multicast or remote arrive; a closing cluster barrier
// keeps each CTA alive until the peer's last remote arrivals on its empty barriers have landed.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int CH = 2048, HALF = CH / 2, STAGES = 2, NCONS = 128, CWARPS = 4;

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync_all() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
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
// arrive on the barrier at the same offset in CTA `rank` of the cluster
__device__ __forceinline__ void mbar_arrive_remote(uint64_t *bar, uint32_t rank) {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_u32(bar)), "r"(rank));
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(smem_u32(bar)), "r"(parity) : "memory");
    } while (!done);
}
__device__ __forceinline__ void mbar_wait_cluster(uint64_t *bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(smem_u32(bar)), "r"(parity) : "memory");
    } while (!done);
}
// bytes from global into the same offset of every CTA in mask, each completing on its own barrier
__device__ __forceinline__ void bulk_load_multicast(void *dst, const void *src, uint32_t bytes, uint64_t *bar, uint16_t mask) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;"
                 :: "r"(smem_u32(dst)), "l"(src), "r"(bytes), "r"(smem_u32(bar)), "h"(mask) : "memory");
}

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(160, 1)
cluster_mcast_kernel(const float *X, float *Y, int NCH) {
    __shared__ alignas(128) float x_s[STAGES][CH];
    __shared__ alignas(8) uint64_t full[STAGES], empty[STAGES];
    const uint32_t rank = cluster_rank(), peer = rank ^ 1;
    const int cid = blockIdx.x / 2, ncl = gridDim.x / 2;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 2 * CWARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync_all();
    const int n = (NCH - cid + ncl - 1) / ncl;

    if (threadIdx.x < 32) {
        if (threadIdx.x == 0) {
            for (int it = 0; it < n; it++) {
                const int s = it % STAGES;
                const size_t c = cid + (size_t)it * ncl;
                mbar_wait_cluster(&empty[s], ((it / STAGES) & 1) ^ 1);
                mbar_arrive_expect_tx(&full[s], CH * 4);
                bulk_load_multicast(&x_s[s][rank * HALF], X + c * CH + rank * HALF, HALF * 4, &full[s], 0x3);
            }
        }
    } else {
        const int ct = threadIdx.x - 32;
        const float scale = (float)(rank + 1);
        for (int it = 0; it < n; it++) {
            const int s = it % STAGES;
            const size_t c = cid + (size_t)it * ncl;
            mbar_wait(&full[s], (it / STAGES) & 1);
            float *y = Y + ((size_t)rank * NCH + c) * CH;
            for (int j = 0; j < CH / NCONS; j++) {
                const int i = ct + NCONS * j;
                y[i] = x_s[s][i] * scale + x_s[s][CH - 1 - i];
            }
            __syncwarp();
            if ((ct & 31) == 0) {
                mbar_arrive(&empty[s]);
                mbar_arrive_remote(&empty[s], peer);
            }
        }
    }
    cluster_sync_all();
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int NCH = 4096;
    std::vector<float> hX((size_t)NCH * CH);
    uint32_t seed = 3103u;
    for (auto &v : hX) v = 4.0f * lcg_uniform(seed);
    float *dX, *dY;
    CUDA_CHECK(cudaMalloc(&dX, hX.size() * 4));
    CUDA_CHECK(cudaMalloc(&dY, 2 * hX.size() * 4));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), hX.size() * 4, cudaMemcpyHostToDevice));
    std::vector<float> hY(2 * hX.size());
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dY, 0xff, hY.size() * 4));  // NaN poison
        cluster_mcast_kernel<<<132, 160>>>(dX, dY, NCH);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hY.data(), dY, hY.size() * 4, cudaMemcpyDeviceToHost));
        for (int r = 0; r < 2; r++)
            for (size_t c = 0; c < (size_t)NCH; c++)
                for (int i = 0; i < CH; i++) {
                    const double ref = (double)hX[c * CH + i] * (r + 1) + hX[c * CH + CH - 1 - i];
                    const double y = hY[((size_t)r * NCH + c) * CH + i];
                    const double e = std::isfinite(y) ? fabs(y - ref) : 1e30;
                    if (e > max_err) max_err = e;
                }
    }
    const bool ok = max_err <= 1e-4;
    printf("cluster_multicast NCH=%d max_abs_err=%.6f\n", NCH, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dY);
    return ok ? 0 : 1;
}
