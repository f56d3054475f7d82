// dsmem_red_histogram.cu -- a cluster-wide histogram in distributed shared memory: the 4 CTAs of a
// cluster each own a quarter of the bins in their shared memory, and every thread adds its keys
// straight into the owner CTA's bins with `red.shared::cluster.add.u32` at an address from `mapa`
// (no global atomics, no mbarrier). Cluster barriers (`barrier.cluster.arrive.release` /
// `wait.acquire`) order the phases: (1) every CTA zeroes its bins, cluster barrier, so that no
// peer adds into a bin before it is zeroed; (2) the remote adds, cluster barrier, so that every
// add has landed before an owner reads its bins (and no CTA's bins are read while a peer still
// adds); (3) each owner flushes its bins to global memory and stores its own bin total into rank
// 0's shared `totals_s[rank]` (`st.shared::cluster`), cluster barrier, rank 0 writes the cluster's
// grand total; the last barrier also keeps rank 0's shared memory alive until every remote store
// into it is done (plain CUDA + inline PTX, no TK).
//
// CLUSTERS = 66 clusters of 4 CTAs x 256 threads; cluster c histograms keys[c][0 .. NK) (NK =
// 65536 u32 keys, skewed so that some bins are hot) into BINS = 4096 bins: bin = key % BINS, owner
// rank = bin / 1024, local index = bin % 1024. Outputs hist[c][BINS] and total[c]; the host
// recomputes both exactly.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 256, CSIZE = 4, CLUSTERS = 66, NK = 65536, BINS = 4096, OWN = BINS / CSIZE;

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ uint32_t map_rank(const void *p, unsigned rank) {
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_u32(p)), "r"(rank));
    return r;
}
__device__ __forceinline__ void red_add_remote(uint32_t addr, unsigned v) {
    asm volatile("red.relaxed.cluster.shared::cluster.add.u32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void st_remote_u32(uint32_t addr, unsigned v) {
    asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void cluster_arrive() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__global__ void __cluster_dims__(CSIZE, 1, 1) __launch_bounds__(T)
dsmem_hist(const unsigned *keys, unsigned *hist, unsigned *total) {
    __shared__ unsigned bins_s[OWN];
    __shared__ unsigned totals_s[CSIZE];
    __shared__ unsigned part_s[T / 32];
    const int t = threadIdx.x;
    const unsigned rank = cluster_rank();
    const int c = blockIdx.x / CSIZE;
    for (int i = t; i < OWN; i += T) bins_s[i] = 0u;
    cluster_arrive();
    cluster_wait();
    // phase 2: this CTA's quarter of the cluster's keys, added into the owners' bins
    const unsigned *k = keys + (size_t)c * NK + (size_t)rank * (NK / CSIZE);
    for (int i = t; i < NK / CSIZE; i += T) {
        const unsigned bin = k[i] % BINS;
        red_add_remote(map_rank(&bins_s[bin % OWN], bin / OWN), 1u);
    }
    cluster_arrive();
    cluster_wait();
    // phase 3: flush own bins, total them, hand the total to rank 0
    unsigned mine = 0;
    for (int i = t; i < OWN; i += T) {
        const unsigned v = bins_s[i];
        hist[(size_t)c * BINS + rank * OWN + i] = v;
        mine += v;
    }
    for (int o = 16; o > 0; o >>= 1) mine += __shfl_xor_sync(0xffffffffu, mine, o);
    if ((t & 31) == 0) part_s[t / 32] = mine;
    __syncthreads();
    if (t == 0) {
        unsigned s = 0;
        for (int w = 0; w < T / 32; w++) s += part_s[w];
        st_remote_u32(map_rank(&totals_s[rank], 0), s);
    }
    cluster_arrive();
    cluster_wait();
    if (rank == 0 && t == 0) total[c] = totals_s[0] + totals_s[1] + totals_s[2] + totals_s[3];
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)CLUSTERS * NK;
    std::vector<unsigned> hk(n), ref((size_t)CLUSTERS * BINS, 0u), hh((size_t)CLUSTERS * BINS), ht(CLUSTERS);
    uint32_t seed = 9203u;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        const unsigned r = seed >> 8;
        hk[i] = (r & 7u) == 0 ? (r >> 3) % 16u : r;  // 1 in 8 keys in 16 hot bins
        ref[(i / NK) * BINS + hk[i] % BINS]++;
    }
    unsigned *dk, *dh, *dt;
    CUDA_CHECK(cudaMalloc(&dk, n * 4));
    CUDA_CHECK(cudaMalloc(&dh, (size_t)CLUSTERS * BINS * 4));
    CUDA_CHECK(cudaMalloc(&dt, CLUSTERS * 4));
    CUDA_CHECK(cudaMemcpy(dk, hk.data(), n * 4, cudaMemcpyHostToDevice));
    long bad = 0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dh, 0xff, (size_t)CLUSTERS * BINS * 4));
        CUDA_CHECK(cudaMemset(dt, 0xff, CLUSTERS * 4));
        dsmem_hist<<<CLUSTERS * CSIZE, T>>>(dk, dh, dt);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hh.data(), dh, (size_t)CLUSTERS * BINS * 4, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(ht.data(), dt, CLUSTERS * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < hh.size(); i++) bad += hh[i] != ref[i];
        for (int c = 0; c < CLUSTERS; c++) bad += ht[c] != (unsigned)NK;
    }
    printf("dsmem_red_histogram clusters=%d hist[0][0]=%u (want %u) total[0]=%u bad=%ld\n", CLUSTERS, hh[0], ref[0],
           ht[0], bad);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dk); cudaFree(dh); cudaFree(dt);
    return bad == 0 ? 0 : 1;
}
