// cg_cluster_exchange.cu -- an all-reduce over a 4-CTA cluster through distributed shared memory,
// written with cooperative groups' cluster API (`cg::this_cluster()`, `map_shared_rank`,
// `cluster.sync()`), over ITERS rounds with double-buffered exchange buffers.
//
// Cluster c, CTA rank r (0..3), round it: each of the 256 threads writes
//   vec_s[it % 2][j] = X[((c * 4 + r) * ITERS + it) * 256 + j] * (r + 1)
// then cluster.sync() #1 (every CTA's vec_s[it % 2] written and visible cluster-wide); threads
// 0..63 of rank r read element 64 r + j of all four CTAs' vec_s[it % 2] through map_shared_rank and
// write their sum to Y[(c * ITERS + it) * 256 + 64 r + j].
// Round it + 1 writes the other buffer, so it needs no barrier after the reads; round it + 2
// writes vec_s[it % 2] again only after every CTA passed round it + 1's cluster.sync(), which
// each reaches after its reads of round it. A closing cluster.sync() keeps every CTA resident
// until the peers' last remote reads of its shared memory are done.
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

namespace cg = cooperative_groups;

constexpr int CL = 4, VEC = 256, ITERS = 16;

__global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(VEC)
exchange_kernel(const float *X, float *Y) {
    __shared__ float vec_s[2][VEC];
    cg::cluster_group cluster = cg::this_cluster();
    const int r = (int)cluster.block_rank();
    const int c = blockIdx.x / CL;
    const int j = threadIdx.x;
    for (int it = 0; it < ITERS; it++) {
        const int b = it % 2;
        vec_s[b][j] = X[((size_t)(c * CL + r) * ITERS + it) * VEC + j] * (float)(r + 1);
        cluster.sync();
        if (j < VEC / CL) {
            const int e = (VEC / CL) * r + j;
            float s = 0.0f;
            for (int q = 0; q < CL; q++) {
                const float *peer = cluster.map_shared_rank(&vec_s[b][0], q);
                s += peer[e];
            }
            Y[((size_t)c * ITERS + it) * VEC + e] = s;
        }
    }
    cluster.sync();
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int NCL = 132;  // clusters
    const size_t nx = (size_t)NCL * CL * ITERS * VEC, ny = (size_t)NCL * ITERS * VEC;
    std::vector<float> hX(nx);
    uint32_t seed = 4202u;
    for (auto &v : hX) v = 2.0f * lcg_uniform(seed);
    float *dX, *dY;
    CUDA_CHECK(cudaMalloc(&dX, nx * 4));
    CUDA_CHECK(cudaMalloc(&dY, ny * 4));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), nx * 4, cudaMemcpyHostToDevice));
    std::vector<float> hY(ny);
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dY, 0xff, ny * 4));  // NaN poison
        exchange_kernel<<<NCL * CL, VEC>>>(dX, dY);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hY.data(), dY, ny * 4, cudaMemcpyDeviceToHost));
        for (int c = 0; c < NCL; c++)
            for (int it = 0; it < ITERS; it++)
                for (int e = 0; e < VEC; e++) {
                    double ref = 0.0;
                    for (int q = 0; q < CL; q++) ref += (double)hX[((size_t)(c * CL + q) * ITERS + it) * VEC + e] * (q + 1);
                    const double y = hY[((size_t)c * ITERS + it) * VEC + e];
                    const double err = std::isfinite(y) ? fabs(y - ref) : 1e30;
                    if (err > max_err) max_err = err;
                }
    }
    const bool ok = max_err <= 1e-4;
    printf("cg_cluster_exchange clusters=%d iters=%d max_abs_err=%.6f\n", NCL, ITERS, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dY);
    return ok ? 0 : 1;
}
