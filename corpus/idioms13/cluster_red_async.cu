// cluster_red_async.cu -- a cluster reduce-scatter through REMOTE ASYNCHRONOUS REDUCTIONS: in every
// round each of the 4 CTAs of a cluster holds 256 partial values, one a thread; the 256 bins are
// owned 64 a CTA, and thread tid adds its value into bin (tid % 64) of owner CTA tid / 64 with
// `red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32`, whose completion
// (4 bytes) is counted on the OWNER's mbarrier `full` (both addresses from `mapa`). The owner arms
// `full` once a round with `mbarrier.arrive.expect_tx` for the 4 x 64 x 4 bytes it will receive
// (count 1: thread 0), waits with `mbarrier.try_wait.parity.acquire.cluster` (parity r & 1), writes
// its 64 bins out and zeroes them; one cluster barrier a round keeps the next round's reductions
// off the bins until they are zeroed. Thread 0 initialises `full`,
// `fence.mbarrier_init.release.cluster` and a cluster barrier publish it (and the zeroed bins)
// before any remote reduction; the last round's cluster barrier is the closing one.
//
// 48 clusters x 4 CTAs x 256 threads, ROUNDS = 16; the host sums the four CTAs' values of every
// bin and checks every (cluster, round, bin) over 3 launches.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int CL = 4, T = 256, NCL = 48, ROUNDS = 16, OWN = T / CL;
constexpr unsigned ROUND_BYTES = CL * OWN * 4;

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned map_peer(unsigned local, unsigned peer) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(local), "r"(peer));
    return r;
}
__device__ __forceinline__ void red_async_add(unsigned raddr, unsigned v, unsigned rbar) {
    asm volatile("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%0], %1, [%2];"
                 ::"r"(raddr), "r"(v), "r"(rbar) : "memory");
}
__device__ __forceinline__ void arm(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void wait_parity(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n .reg .pred p;\n WAIT_%=:\n"
        " mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n"
        " @!p bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(T)
reduce_scatter(const unsigned *in, unsigned *out) {
    __shared__ unsigned bins[OWN];
    __shared__ alignas(8) uint64_t full;
    const int tid = threadIdx.x;
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const int cluster = blockIdx.x / CL;
    if (tid < OWN) bins[tid] = 0;
    if (tid == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&full)), "r"(1) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();
    const unsigned owner = (unsigned)tid / OWN;
    const unsigned rbin = map_peer(smem_u32(&bins[tid % OWN]), owner);
    const unsigned rbar = map_peer(smem_u32(&full), owner);
    for (int r = 0; r < ROUNDS; r++) {
        if (tid == 0) arm(smem_u32(&full), ROUND_BYTES);
        const unsigned v = in[(blockIdx.x * ROUNDS + r) * T + tid];
        red_async_add(rbin, v, rbar);
        wait_parity(smem_u32(&full), (unsigned)(r & 1));
        if (tid < OWN) {
            out[(cluster * ROUNDS + r) * T + rank * OWN + tid] = bins[tid];
            bins[tid] = 0;
        }
        cluster_sync();
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const int blocks = NCL * CL, n = blocks * ROUNDS * T, m = NCL * ROUNDS * T;
    std::vector<unsigned> h(n), want(m, 0u), out(m);
    uint32_t seed = 777u;
    for (auto &v : h) { seed = seed * 1664525u + 1013904223u; v = seed >> 4; }
    for (int b = 0; b < blocks; b++)
        for (int r = 0; r < ROUNDS; r++)
            for (int t = 0; t < T; t++) want[((b / CL) * ROUNDS + r) * T + t] += h[(b * ROUNDS + r) * T + t];
    unsigned *din, *dout;
    CUDA_CHECK(cudaMalloc(&din, n * 4));
    CUDA_CHECK(cudaMalloc(&dout, m * 4));
    CUDA_CHECK(cudaMemcpy(din, h.data(), n * 4, cudaMemcpyHostToDevice));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dout, 0x5a, m * 4));
        reduce_scatter<<<blocks, T>>>(din, dout);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(out.data(), dout, m * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < m; i++)
            if (out[i] != want[i]) { bad++; if (first < 0) first = i; }
    }
    printf("cluster_red_async clusters=%d rounds=%d wrong=%ld first_wrong=%ld\n", NCL, ROUNDS, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(din); cudaFree(dout);
    return bad == 0 ? 0 : 1;
}
