// cluster_flag_ring.cu -- a producer CTA streams chunks into its consumer CTA's shared memory
// inside a 2-CTA cluster with no mbarrier and no per-chunk cluster barrier: the producer's threads
// store the chunk straight into the consumer's ring slot (`st.shared::cluster.f32` at an address
// from `mapa`), `__syncthreads()`, then thread 0 raises the slot's FULL flag in the consumer's
// shared memory with `st.release.cluster.shared::cluster.u32`; the consumer's thread 0 polls its
// own flag with `ld.acquire.cluster.shared::cta.u32`, `__syncthreads()`, the block reads the slot,
// `__syncthreads()`, and thread 0 hands the slot back by a release store to the EMPTY flag in the
// producer's shared memory, which the producer's thread 0 polls (acquire) before it refills that
// slot. Flags carry sequence numbers, never reset (plain CUDA + inline PTX, no TK).
//
// Cluster c (`__cluster_dims__(2, 1, 1)`, 132 clusters) handles NCH = 24 chunks of CH = 1024
// floats: rank 0 computes v = x * x + 0.5 for chunk j and ships it; rank 1 writes
// Y[c][j][i] = v[i] - 0.25 v[CH - 1 - i] (each element needs another thread's value).
// 256 threads, 4 elements a thread. Ring on rank 1: ring_s[NSLOT = 2][CH]; flags full_s[2] on
// rank 1, empty_s[2] on rank 0 (u32, zeroed by each CTA, then a cluster barrier before any remote
// access). Chunk j uses slot j % 2 and sequence n = j / 2 + 1: the producer waits empty_s[s] >= n - 1
// before writing, publishes full = n; the consumer waits full_s[s] >= n, hands back empty = n.
// A closing cluster barrier keeps rank 0's shared memory (its EMPTY flags, written remotely by
// rank 1 until its last chunk) alive until both CTAs are done.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int CH = 1024, NCH = 24, NSLOT = 2, THREADS = 256, CLUSTERS = 132;

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ uint32_t map_rank(const void *p, unsigned rank) {
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_u32(p)), "r"(rank));
    return r;
}
__device__ __forceinline__ void st_remote_f32(uint32_t addr, float v) {
    asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(addr), "f"(v) : "memory");
}
__device__ __forceinline__ void flag_release_remote(uint32_t addr, unsigned v) {
    asm volatile("st.release.cluster.shared::cluster.u32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned flag_acquire_local(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.cluster.shared::cta.u32 %0, [%1];" : "=r"(v) : "r"(smem_u32(p)) : "memory");
    return v;
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(THREADS)
flag_ring(const float *x, float *y) {
    __shared__ alignas(16) float ring_s[NSLOT][CH];
    __shared__ unsigned full_s[NSLOT], empty_s[NSLOT];
    const int t = threadIdx.x;
    const unsigned rank = cluster_rank();
    const int c = blockIdx.x / 2;
    if (t < NSLOT) {
        full_s[t] = 0;
        empty_s[t] = 0;
    }
    cluster_sync();
    if (rank == 0) {
        for (int j = 0; j < NCH; j++) {
            const int s = j % NSLOT;
            const unsigned n = j / NSLOT + 1;
            float v[4];
            for (int e = 0; e < 4; e++) {
                const float xv = x[((size_t)c * NCH + j) * CH + t + 256 * e];
                v[e] = xv * xv + 0.5f;
            }
            if (t == 0) {
                while (flag_acquire_local(&empty_s[s]) < n - 1) { }
            }
            __syncthreads();
            for (int e = 0; e < 4; e++) st_remote_f32(map_rank(&ring_s[s][t + 256 * e], 1), v[e]);
            __syncthreads();
            if (t == 0) flag_release_remote(map_rank(&full_s[s], 1), n);
        }
    } else {
        for (int j = 0; j < NCH; j++) {
            const int s = j % NSLOT;
            const unsigned n = j / NSLOT + 1;
            if (t == 0) {
                while (flag_acquire_local(&full_s[s]) < n) { }
            }
            __syncthreads();
            float out[4];
            for (int e = 0; e < 4; e++) {
                const int i = t + 256 * e;
                out[e] = ring_s[s][i] - 0.25f * ring_s[s][CH - 1 - i];
            }
            __syncthreads();
            if (t == 0) flag_release_remote(map_rank(&empty_s[s], 0), n);
            for (int e = 0; e < 4; e++) y[((size_t)c * NCH + j) * CH + t + 256 * e] = out[e];
        }
    }
    cluster_sync();
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const size_t n = (size_t)CLUSTERS * NCH * CH;
    std::vector<float> hx(n), ref(n), hy(n);
    uint32_t seed = 8505u;
    for (auto &v : hx) v = 2.0f * lcg_uniform(seed);
    for (size_t ch = 0; ch < (size_t)CLUSTERS * NCH; ch++)
        for (int i = 0; i < CH; i++) {
            const float a = hx[ch * CH + i], b = hx[ch * CH + CH - 1 - i];
            ref[ch * CH + i] = (a * a + 0.5f) - 0.25f * (b * b + 0.5f);
        }
    float *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&dy, n * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, n * 4));  // NaN poison
        flag_ring<<<2 * CLUSTERS, THREADS>>>(dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) {
            const double e = std::isfinite(hy[i]) ? fabs(hy[i] - ref[i]) / (1.0 + fabs(ref[i])) : 1e30;
            max_err = fmax(max_err, e);
        }
    }
    const bool ok = max_err <= 1e-5;
    printf("cluster_flag_ring clusters=%d chunks=%d max_rel_err=%.3g\n", CLUSTERS, NCH, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy);
    return ok ? 0 : 1;
}
