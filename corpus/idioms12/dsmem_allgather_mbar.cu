// dsmem_allgather_mbar.cu -- a round-based all-gather inside a 4-CTA cluster through distributed
// shared memory with REMOTE mbarrier arrivals and no per-round cluster barrier: in round r every
// thread computes one word, stores it into slot [rank][tid] of gather[r % 2] in EVERY CTA of the
// cluster (`mapa` + `st.shared::cluster`), then arrives on that CTA's full[r % 2] with
// `mbarrier.arrive.release.cluster.shared::cluster` (count 4 x 256: every thread of every CTA). It
// waits on its own full[r % 2] (`mbarrier.try_wait.parity.acquire.cluster`, parity (r / 2) & 1),
// combines the four gathered slots, and arrives remotely on every CTA's empty[r % 2], which a writer
// waits on (from round 2 on, parity (r / 2 - 1) & 1) before it overwrites that buffer in the
// peers. Thread 0 initialises the four barriers, `fence.mbarrier_init.release.cluster` and a
// cluster barrier publish them before any remote access; a closing cluster barrier keeps every CTA
// alive until the remote stores and arrivals aimed at it are done.
//
// 64 clusters x 4 CTAs x 128 threads, ROUNDS = 24 of s' = 3 s + sum_q gather[q][(tid + 7 q) % 128]
// with word = s * 2654435761 + 40503 r + rank; the host replays the rounds and checks every
// thread's final state over 3 launches.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int CL = 4, T = 128, NCL = 64, ROUNDS = 24;

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned map_peer(unsigned local, unsigned peer) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(local), "r"(peer));
    return r;
}
__device__ __forceinline__ void st_peer(unsigned raddr, unsigned v) {
    asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(raddr), "r"(v) : "memory");
}
__device__ __forceinline__ void arrive_peer(unsigned rbar) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(rbar) : "memory");
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
allgather_rounds(const unsigned *in, unsigned *out) {
    __shared__ unsigned gather[2][CL][T];
    __shared__ alignas(8) uint64_t full[2], empty[2];
    const int tid = threadIdx.x;
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (tid == 0) {
        for (int b = 0; b < 2; b++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&full[b])), "r"(CL * T) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&empty[b])), "r"(CL * T) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();
    unsigned s = in[blockIdx.x * T + tid];
    for (int r = 0; r < ROUNDS; r++) {
        const int b = r % 2;
        if (r >= 2) wait_parity(smem_u32(&empty[b]), (unsigned)((r / 2 - 1) & 1));
        const unsigned word = s * 2654435761u + 40503u * (unsigned)r + rank;
        for (unsigned p = 0; p < CL; p++) {
            st_peer(map_peer(smem_u32(&gather[b][rank][tid]), p), word);
            arrive_peer(map_peer(smem_u32(&full[b]), p));
        }
        wait_parity(smem_u32(&full[b]), (unsigned)((r / 2) & 1));
        unsigned acc = 0;
        for (int q = 0; q < CL; q++) acc += gather[b][q][(tid + 7 * q) % T];
        s = 3u * s + acc;
        for (unsigned p = 0; p < CL; p++) arrive_peer(map_peer(smem_u32(&empty[b]), p));
    }
    out[blockIdx.x * T + tid] = s;
    cluster_sync();
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const int blocks = NCL * CL, n = blocks * T;
    std::vector<unsigned> h(n), want(n), out(n);
    uint32_t seed = 5150u;
    for (auto &v : h) { seed = seed * 1664525u + 1013904223u; v = seed; }
    want = h;
    for (int c = 0; c < NCL; c++) {
        unsigned *st = &want[c * CL * T];
        std::vector<unsigned> g(CL * T);
        for (int r = 0; r < ROUNDS; r++) {
            for (int k = 0; k < CL; k++)
                for (int t = 0; t < T; t++) g[k * T + t] = st[k * T + t] * 2654435761u + 40503u * (unsigned)r + (unsigned)k;
            for (int k = 0; k < CL; k++)
                for (int t = 0; t < T; t++) {
                    unsigned acc = 0;
                    for (int q = 0; q < CL; q++) acc += g[q * T + (t + 7 * q) % T];
                    st[k * T + t] = 3u * st[k * T + t] + acc;
                }
        }
    }
    unsigned *din, *dout;
    CUDA_CHECK(cudaMalloc(&din, n * 4));
    CUDA_CHECK(cudaMalloc(&dout, n * 4));
    CUDA_CHECK(cudaMemcpy(din, h.data(), n * 4, cudaMemcpyHostToDevice));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dout, 0x5a, n * 4));
        allgather_rounds<<<blocks, T>>>(din, dout);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(out.data(), dout, n * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++)
            if (out[i] != want[i]) { bad++; if (first < 0) first = i; }
    }
    printf("dsmem_allgather_mbar clusters=%d rounds=%d wrong=%ld first_wrong=%ld\n", NCL, ROUNDS, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(din); cudaFree(dout);
    return bad == 0 ? 0 : 1;
}
