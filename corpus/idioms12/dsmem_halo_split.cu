// dsmem_halo_split.cu -- a 1-D periodic stencil whose array is spread over the shared memories of
// a 4-CTA cluster, with the halo read straight out of the neighbour CTAs' shared memory (`mapa` +
// `ld.shared::cluster`) and ONE split cluster barrier per iteration: every thread arrives
// (`barrier.cluster.arrive.release`) as soon as it has written its new values, overlaps its share
// of the CTA's checksum with the barrier, and waits (`barrier.cluster.wait.acquire`) at the top of
// the next iteration, before it reads the neighbours' halo. Values are double-buffered: in
// iteration it a CTA writes buf[(it + 1) % 2] and its neighbours read its buf[it % 2], so the one
// barrier orders both the halo reads after the writes they need (RAW) and the overwrite of a
// buffer after the neighbours' reads of it one iteration earlier (WAR). An arrive before the loop
// publishes the initial values; the wait after it keeps every CTA alive until its neighbours'
// last remote reads are done.
//
// 32 clusters x 4 CTAs x 256 threads, 1024 words a CTA (4 a thread), ITERS = 40 steps of
// v'[i] = v[i-1] + 2 v[i] + 3 v[i+1] (mod 2^32), periodic over the cluster's 4096 words; the host
// replays them and checks every word and the checksums over 3 launches.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int CL = 4, T = 256, PER = 4, SEG = T * PER, CLW = CL * SEG, NCL = 32, ITERS = 40;

__device__ __forceinline__ unsigned cta_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ unsigned ld_peer(const unsigned *local, unsigned peer) {
    unsigned a = (unsigned)__cvta_generic_to_shared(local), ra, v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(peer));
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(ra) : "memory");
    return v;
}
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }

__global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(T)
halo_stencil(const unsigned *in, unsigned *out, unsigned *sums) {
    __shared__ unsigned buf[2][SEG];
    const int tid = threadIdx.x;
    const unsigned rank = cta_rank(), left = (rank + CL - 1) % CL, right = (rank + 1) % CL;
    const int base = blockIdx.x * SEG;
    for (int k = 0; k < PER; k++) buf[0][tid * PER + k] = in[base + tid * PER + k];
    cluster_arrive();
    unsigned sum = 0;
    for (int it = 0; it < ITERS; it++) {
        const int cur = it % 2, nxt = cur ^ 1;
        cluster_wait();
        unsigned v[PER + 2];
        v[0] = tid == 0 ? ld_peer(&buf[cur][SEG - 1], left) : buf[cur][tid * PER - 1];
        for (int k = 0; k < PER; k++) v[k + 1] = buf[cur][tid * PER + k];
        v[PER + 1] = tid == T - 1 ? ld_peer(&buf[cur][0], right) : buf[cur][tid * PER + PER];
        for (int k = 0; k < PER; k++) buf[nxt][tid * PER + k] = v[k] + 2u * v[k + 1] + 3u * v[k + 2];
        cluster_arrive();
        for (int k = 0; k < PER; k++) sum += buf[nxt][tid * PER + k] * (unsigned)(it + 1);
    }
    cluster_wait();
    for (int k = 0; k < PER; k++) out[base + tid * PER + k] = buf[ITERS % 2][tid * PER + k];
    atomicAdd(&sums[blockIdx.x], sum);
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const int n = NCL * CLW, blocks = NCL * CL;
    std::vector<unsigned> h(n), want(n), out(n), wsum(blocks, 0u), osum(blocks);
    uint32_t seed = 2024u;
    for (auto &v : h) { seed = seed * 1664525u + 1013904223u; v = seed; }
    want = h;
    for (int c = 0; c < NCL; c++) {
        std::vector<unsigned> a(want.begin() + c * CLW, want.begin() + (c + 1) * CLW), b(CLW);
        for (int it = 0; it < ITERS; it++) {
            for (int i = 0; i < CLW; i++) {
                b[i] = a[(i + CLW - 1) % CLW] + 2u * a[i] + 3u * a[(i + 1) % CLW];
                wsum[c * CL + i / SEG] += b[i] * (unsigned)(it + 1);
            }
            a.swap(b);
        }
        for (int i = 0; i < CLW; i++) want[c * CLW + i] = a[i];
    }
    unsigned *din, *dout, *dsum;
    CUDA_CHECK(cudaMalloc(&din, n * 4));
    CUDA_CHECK(cudaMalloc(&dout, n * 4));
    CUDA_CHECK(cudaMalloc(&dsum, blocks * 4));
    CUDA_CHECK(cudaMemcpy(din, h.data(), n * 4, cudaMemcpyHostToDevice));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dout, 0x5a, n * 4));
        CUDA_CHECK(cudaMemset(dsum, 0, blocks * 4));
        halo_stencil<<<blocks, T>>>(din, dout, dsum);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(out.data(), dout, n * 4, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(osum.data(), dsum, blocks * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++)
            if (out[i] != want[i]) { bad++; if (first < 0) first = i; }
        for (int b = 0; b < blocks; b++)
            if (osum[b] != wsum[b]) { bad++; if (first < 0) first = n + b; }
    }
    printf("dsmem_halo_split clusters=%d iters=%d wrong=%ld first_wrong=%ld\n", NCL, ITERS, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(din); cudaFree(dout); cudaFree(dsum);
    return bad == 0 ? 0 : 1;
}
