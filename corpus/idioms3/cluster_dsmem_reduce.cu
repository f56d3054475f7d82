// cluster_dsmem_reduce.cu -- a reduce-scatter across the 4 CTAs of a cluster through distributed
// shared memory (the all-reduce epilogue shape): each CTA writes its partial column sums into its
// own shared memory, the cluster barrier is split into arrive.release / wait.acquire, and each CTA
// then reads a quarter of the columns from all four CTAs (`mapa` + `ld.shared::cluster`) and
// writes their total. The partials are double-buffered by iteration, so one cluster barrier per
// iteration suffices: a CTA that passed iteration i's barrier knows every peer has finished
// reading iteration i - 1's buffer, the one it writes next. A closing cluster barrier keeps every
// CTA's shared memory alive until its peers' last remote reads are done. Plain CUDA + PTX,
// `__cluster_dims__(4, 1, 1)`.
//
// X: NBLK blocks of 4 * RPC rows x C = 512 columns; cluster k handles blocks k, k + nclusters, ...
//   CTA rank r sums rows r * RPC .. + RPC - 1 of the block: part[i & 1][col] (thread t: columns
//   t and t + 256). Out[blk][col] = sum of the 4 partials, CTA r writing columns r * 128 .. + 127.
// 256 threads, no warp specialisation.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int CL = 4, C = 512, RPC = 32, NT = 256;

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_arrive() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ float ld_dsmem(const float *p, uint32_t rank) {
    uint32_t remote;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_u32(p)), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
    return v;
}

__global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(NT, 1)
dsmem_reduce_kernel(const float *X, float *Out, int NBLK) {
    __shared__ float part[2][C];
    const uint32_t rank = cluster_rank();
    const int cid = blockIdx.x / CL, ncl = gridDim.x / CL, t = threadIdx.x;
    int i = 0;
    for (int blk = cid; blk < NBLK; blk += ncl, i++) {
        float *p = part[i & 1];
        const float *x = X + ((size_t)blk * CL * RPC + rank * RPC) * C;
        float a0 = 0.0f, a1 = 0.0f;
        for (int r = 0; r < RPC; r++) {
            a0 += x[(size_t)r * C + t];
            a1 += x[(size_t)r * C + t + NT];
        }
        p[t] = a0;
        p[t + NT] = a1;
        cluster_arrive();
        cluster_wait();
        if (t < C / CL) {
            const int col = rank * (C / CL) + t;
            float s = 0.0f;
            for (uint32_t q = 0; q < CL; q++) s += ld_dsmem(&p[col], q);
            Out[(size_t)blk * C + col] = s;
        }
    }
    cluster_arrive();
    cluster_wait();
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int NBLK = 2048;
    std::vector<float> hX((size_t)NBLK * CL * RPC * C);
    uint32_t seed = 3104u;
    for (auto &v : hX) v = 2.0f * lcg_uniform(seed);
    float *dX, *dO;
    CUDA_CHECK(cudaMalloc(&dX, hX.size() * 4));
    CUDA_CHECK(cudaMalloc(&dO, (size_t)NBLK * C * 4));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), hX.size() * 4, cudaMemcpyHostToDevice));
    std::vector<float> hO((size_t)NBLK * C);
    std::vector<double> ref((size_t)NBLK * C, 0.0);
    for (size_t b = 0; b < (size_t)NBLK; b++)
        for (int r = 0; r < CL * RPC; r++)
            for (int c = 0; c < C; c++) ref[b * C + c] += hX[(b * CL * RPC + r) * C + c];
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dO, 0xff, hO.size() * 4));  // NaN poison
        dsmem_reduce_kernel<<<132, NT>>>(dX, dO, NBLK);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hO.data(), dO, hO.size() * 4, cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < hO.size(); k++) {
            const double e = std::isfinite(hO[k]) ? fabs(hO[k] - ref[k]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err <= 1e-3;
    printf("cluster_dsmem_reduce NBLK=%d max_abs_err=%.6f\n", NBLK, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dO);
    return ok ? 0 : 1;
}
