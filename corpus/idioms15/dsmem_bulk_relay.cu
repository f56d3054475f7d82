// dsmem_bulk_relay.cu -- a two-CTA cluster pipeline with no TMA multicast: CTA rank 0 prepares each
// chunk in its own shared memory and pushes it into CTA rank 1's shared memory with the
// shared-to-shared bulk copy `cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes`,
// completing on rank 1's `full[s]` barrier. Rank 0's thread 0 arms that REMOTE barrier itself
// (`mbarrier.arrive.expect_tx.release.cluster.shared::cluster` on the `mapa` address, count 1),
// then issues the copy; rank 1's threads wait `full[s]` (parity of the lap), use the chunk, and after
// `__syncthreads()` rank 1's thread 0 hands the stage back with a remote
// `mbarrier.arrive.release.cluster.shared::cluster` on rank 0's `empty[s]` (count 1). The staging
// buffer on rank 0 is written by generic stores, so each writer thread runs
// `fence.proxy.async.shared::cta` before the block barrier after which thread 0 issues the copy.
// Barrier init: `fence.mbarrier_init.release.cluster` + a cluster barrier before any remote op; a
// closing cluster barrier keeps rank 0 alive until rank 1's last remote arrival.
//
// 66 clusters of 2 CTAs x 128 threads; cluster p streams NCH = 48 chunks of 1024 floats through
// STAGES = 3 stages: prep on rank 0: stage = 3 x + 1; use on rank 1: y[j] = stage[j] + stage[1023 - j].
// Plain CUDA + inline PTX, no TK. The host checks every output over 3 launches.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 128, STAGES = 3, CHUNK = 1024, NCH = 48, NCLUSTER = 66;
constexpr unsigned CHUNK_BYTES = CHUNK * 4;

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned cta_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ unsigned peer_addr(unsigned local, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(local), "r"(rank));
    return r;
}
__device__ __forceinline__ void cluster_sync_all() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ void wait_parity(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n .reg .pred p;\n WAIT_%=:\n"
        " mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n"
        " @!p bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void remote_arrive_expect(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void remote_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void push_chunk(unsigned dst, unsigned src, unsigned bytes, unsigned bar) {
    asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "r"(src), "r"(bytes), "r"(bar) : "memory");
}

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(T) relay(const float *x, float *y) {
    __shared__ alignas(128) float stage[STAGES][CHUNK];
    __shared__ alignas(8) uint64_t full[STAGES];
    __shared__ alignas(8) uint64_t empty[STAGES];
    const int tid = threadIdx.x, pair = blockIdx.x / 2;
    const unsigned rank = cta_rank();
    if (tid == 0) {
        for (int s = 0; s < STAGES; s++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&full[s])), "r"(1) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&empty[s])), "r"(1) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync_all();
    if (rank == 0) {
        const unsigned peer_stage = peer_addr(smem_u32(&stage[0][0]), 1);
        const unsigned peer_full = peer_addr(smem_u32(&full[0]), 1);
        for (int i = 0; i < NCH; i++) {
            const int s = i % STAGES;
            const unsigned ph = (unsigned)((i / STAGES) & 1);
            wait_parity(smem_u32(&empty[s]), ph ^ 1u);
            const float *xs = x + ((size_t)pair * NCH + i) * CHUNK;
            for (int j = tid; j < CHUNK; j += T) stage[s][j] = 3.f * xs[j] + 1.f;
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncthreads();
            if (tid == 0) {
                remote_arrive_expect(peer_full + 8u * s, CHUNK_BYTES);
                push_chunk(peer_stage + CHUNK_BYTES * s, smem_u32(&stage[s][0]), CHUNK_BYTES, peer_full + 8u * s);
            }
        }
    } else {
        const unsigned peer_empty = peer_addr(smem_u32(&empty[0]), 0);
        for (int i = 0; i < NCH; i++) {
            const int s = i % STAGES;
            const unsigned ph = (unsigned)((i / STAGES) & 1);
            wait_parity(smem_u32(&full[s]), ph);
            float *ys = y + ((size_t)pair * NCH + i) * CHUNK;
            for (int j = tid; j < CHUNK; j += T) ys[j] = stage[s][j] + stage[s][CHUNK - 1 - j];
            __syncthreads();
            if (tid == 0) remote_arrive(peer_empty + 8u * s);
        }
    }
    cluster_sync_all();
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)NCLUSTER * NCH * CHUNK;
    std::vector<float> h(n), want(n), got(n);
    uint32_t seed = 777u;
    for (auto &v : h) { seed = seed * 1664525u + 1013904223u; v = (float)((seed >> 9) % 2048u) - 1024.f; }
    for (size_t c = 0; c < n / CHUNK; c++)
        for (int j = 0; j < CHUNK; j++)
            want[c * CHUNK + j] = (3.f * h[c * CHUNK + j] + 1.f) + (3.f * h[c * CHUNK + CHUNK - 1 - j] + 1.f);
    float *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&dy, n * 4));
    CUDA_CHECK(cudaMemcpy(dx, h.data(), n * 4, cudaMemcpyHostToDevice));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, n * 4));
        relay<<<2 * NCLUSTER, T>>>(dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(got.data(), dy, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
            if (got[i] != want[i]) { bad++; if (first < 0) first = (long)i; }
    }
    printf("dsmem_bulk_relay clusters=%d chunks=%d wrong=%ld first_wrong=%ld\n", NCLUSTER, NCH, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy);
    return bad == 0 ? 0 : 1;
}
