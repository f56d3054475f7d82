// dsmem_st_async_exchange.cu -- a 2-CTA cluster exchanges its state every round by remote async
// stores: each thread writes its values straight into the PEER CTA's receive buffer with
// `st.async.shared::cluster.mbarrier::complete_tx::bytes.f32`, the bytes completing on the PEER's
// mbarrier (addresses of the peer's buffer and barrier from `mapa`); each CTA waits on its own
// barrier for the peer's bytes (plain CUDA + inline PTX, no TK).
//
// Cluster of 2 CTAs (__cluster_dims__(2,1,1)), 256 threads, ELEMS = 1024 floats a CTA (4 a
// thread). State s (registers); round r: v = 0.5 s + 0.01 (r + 1); v goes to the peer's recv[];
// then s = v + 0.25 * (the peer's v). ROUNDS = 6.
// Barrier: recv_bar (count 1: thread 0's mbarrier.arrive.expect_tx of 4096 bytes a phase; the
// peer's 1024 st.async complete the bytes). Round r waits parity r & 1; thread 0 re-arms the
// barrier for round r + 1 after its own wait of round r.
// Init: thread 0 initialises and arms recv_bar, `fence.mbarrier_init.release.cluster`, then
// `barrier.cluster.arrive.relaxed` / `barrier.cluster.wait` (the peer's st.async only after the
// init is visible cluster-wide). Between rounds `barrier.cluster.arrive.release` /
// `wait.acquire`: the peer has read recv[] before this CTA overwrites it; the same pair closes
// the kernel (no CTA exits while the peer may still touch its shared memory).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int THREADS = 256, PER = 4, ELEMS = THREADS * PER, ROUNDS = 6, CLUSTERS = 128;
constexpr int BLOCKS = 2 * CLUSTERS;
constexpr uint32_t BYTES = ELEMS * sizeof(float);

__device__ inline uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ inline uint32_t cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ inline uint32_t map_to_rank(const void *p, uint32_t rank) {
    uint32_t d;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(d) : "r"(smem_addr(p)), "r"(rank));
    return d;
}

__device__ inline void mbar_init(uint64_t *bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count) : "memory");
}

__device__ inline void mbar_expect_tx(uint64_t *bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
}

__device__ inline void mbar_wait(uint64_t *bar, uint32_t parity) {
    asm volatile(
        "{\n\t.reg .pred P;\n"
        "WAIT_%=:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\n\t"
        "@!P bra WAIT_%=;\n\t}"
        :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}

// remote async store of one float into a peer CTA's shared memory, completing 4 bytes on the
// peer's mbarrier (both addresses shared::cluster, from mapa)
__device__ inline void st_async_f32(uint32_t remote_dst, float v, uint32_t remote_bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];"
                 :: "r"(remote_dst), "f"(v), "r"(remote_bar) : "memory");
}

__device__ inline void cluster_sync_relaxed() {
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}

__device__ inline void cluster_sync_acq_rel() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__global__ __cluster_dims__(2, 1, 1) __launch_bounds__(THREADS)
void exchange_kernel(const float *x, float *y) {
    __shared__ alignas(16) float recv[ELEMS];
    __shared__ alignas(8) uint64_t recv_bar;
    const int t = threadIdx.x;
    const uint32_t peer = cluster_rank() ^ 1u;
    if (t == 0) {
        mbar_init(&recv_bar, 1);
        mbar_expect_tx(&recv_bar, BYTES);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync_relaxed();
    const uint32_t peer_recv = map_to_rank(recv, peer);
    const uint32_t peer_bar = map_to_rank(&recv_bar, peer);
    float s[PER];
    for (int k = 0; k < PER; k++) s[k] = x[(size_t)blockIdx.x * ELEMS + t + k * THREADS];
    for (int r = 0; r < ROUNDS; r++) {
        float v[PER];
        for (int k = 0; k < PER; k++) {
            v[k] = 0.5f * s[k] + 0.01f * (r + 1);
            st_async_f32(peer_recv + 4u * (t + k * THREADS), v[k], peer_bar);
        }
        mbar_wait(&recv_bar, r & 1);
        for (int k = 0; k < PER; k++) s[k] = v[k] + 0.25f * recv[t + k * THREADS];
        if (t == 0 && r + 1 < ROUNDS) mbar_expect_tx(&recv_bar, BYTES);
        cluster_sync_acq_rel();
    }
    for (int k = 0; k < PER; k++) y[(size_t)blockIdx.x * ELEMS + t + k * THREADS] = s[k];
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int n = BLOCKS * ELEMS;
    std::vector<float> hx(n), ref(n), hy(n);
    uint32_t seed = 7101u;
    for (auto &v : hx) v = 2.0f * lcg_uniform(seed);
    for (int c = 0; c < CLUSTERS; c++)
        for (int i = 0; i < ELEMS; i++) {
            float a = hx[(size_t)(2 * c) * ELEMS + i], b = hx[(size_t)(2 * c + 1) * ELEMS + i];
            for (int r = 0; r < ROUNDS; r++) {
                const float va = 0.5f * a + 0.01f * (r + 1), vb = 0.5f * b + 0.01f * (r + 1);
                a = va + 0.25f * vb;
                b = vb + 0.25f * va;
            }
            ref[(size_t)(2 * c) * ELEMS + i] = a;
            ref[(size_t)(2 * c + 1) * ELEMS + i] = b;
        }
    float *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, (size_t)n * 4));
    CUDA_CHECK(cudaMalloc(&dy, (size_t)n * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), (size_t)n * 4, cudaMemcpyHostToDevice));
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, (size_t)n * 4));  // NaN poison
        exchange_kernel<<<BLOCKS, THREADS>>>(dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, (size_t)n * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) {
            const double e = std::isfinite(hy[i]) ? fabs(hy[i] - ref[i]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err <= 1e-4;
    printf("dsmem_st_async_exchange clusters=%d elems=%d max_abs_err=%.3g\n", CLUSTERS, ELEMS, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy);
    return ok ? 0 : 1;
}
