// tk_streamk_flags.cu -- a stream-K style split of each output tile's K range over two CTAs with
// ThunderKittens: the helper CTA hands its partial tile to the tile's owner through a global
// workspace and a global flag (plain stores, __threadfence, atomicExch; the owner polls with an
// atomic read, then __threadfence), and the owner stores the result through a double-buffered
// TMA store staging ring (tma::store_async, store_async_read_wait<1> before reusing a buffer).
//
// O[t] = sum_{k < K} (k + 1) * A[t][k] for T output tiles of 64 x 64 floats (A holds T * K tiles).
// 128 threads = one warpgroup; 2 P CTAs, pair p = (owner 2p, helper 2p + 1) handles tiles
// t = p, p + P, ...; the owner takes k in [0, K/2), the helper [K/2, K).
// Loads: thread 0 issues one TMA load a k-step into a_s[k % 2] completing on full[k % 2]
//   (expect 16 KiB); all threads wait full[s] with ph (flipped when s wraps), load their 16 rows
//   and __syncthreads before the stage is loaded again (the prefetch of step k + 1 is issued
//   after that barrier, so it never overwrites a stage being read).
// Hand-off: helper: warpgroup::store to W[t], __threadfence, __syncthreads, thread 0
//   atomicExch(flag[t], 1). Owner: thread 0 spins until atomicAdd(flag[t], 0) == 1, __threadfence,
//   __syncthreads, every thread reads W[t].
// Epilogue (owner's j-th tile): thread 0 store_async_read_wait<1> (the store of tile j - 2 has
//   read o_s[j % 2]), __syncthreads, warpgroup::store to o_s[j % 2], __syncthreads, thread 0
//   tma::store_async; store_async_wait before exit.
#include "kittens.cuh"
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

using namespace kittens;

using tile_t = st_fl<64, 64>;
using tile_gl = gl<float, 1, 1, -1, -1, tile_t>;
constexpr int K = 8;

struct sk_globals {
    tile_gl A, W, O;
    int *flags;
    int T;
};

constexpr size_t SMEM_BYTES = 4 * sizeof(tile_t) + 1024;

__global__ __launch_bounds__(128, 1)
void streamk_kernel(const __grid_constant__ sk_globals g) {
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    tile_t (&a_s)[2] = al.allocate<tile_t, 2>();
    tile_t (&o_s)[2] = al.allocate<tile_t, 2>();
    __shared__ semaphore full[2];
    const int P = gridDim.x / 2, p = blockIdx.x / 2;
    const bool owner = (blockIdx.x % 2) == 0;
    const int k0 = owner ? 0 : K / 2;
    if (threadIdx.x == 0) {
        init_semaphore(full[0], 0, 1);
        init_semaphore(full[1], 0, 1);
    }
    __syncthreads();
    rt_fl<16, 64> acc, x;
    int s = 0, ph = 0, j = 0;
    for (int t = p; t < g.T; t += P, j++) {
        warp::zero(acc);
        if (threadIdx.x == 0) {
            tma::expect_bytes(full[s], size_bytes<tile_t>);
            tma::load_async(a_s[s], g.A, {0, 0, t * K + k0, 0}, full[s]);
        }
        for (int k = k0; k < k0 + K / 2; k++) {
            wait(full[s], ph);
            warpgroup::load(x, a_s[s]);
            warp::mul(x, x, (float)(k + 1));
            warp::add(acc, acc, x);
            __syncthreads();
            if (++s == 2) { s = 0; ph ^= 1; }
            if (threadIdx.x == 0 && k + 1 < k0 + K / 2) {
                tma::expect_bytes(full[s], size_bytes<tile_t>);
                tma::load_async(a_s[s], g.A, {0, 0, t * K + k + 1, 0}, full[s]);
            }
        }
        if (!owner) {
            warpgroup::store(g.W, acc, {0, 0, t, 0});
            __threadfence();
            __syncthreads();
            if (threadIdx.x == 0) atomicExch(&g.flags[t], 1);
        } else {
            if (threadIdx.x == 0) {
                while (atomicAdd(&g.flags[t], 0) == 0) {}
                __threadfence();
            }
            __syncthreads();
            warpgroup::load(x, g.W, {0, 0, t, 0});
            warp::add(acc, acc, x);
            if (threadIdx.x == 0) tma::store_async_read_wait<1>();
            __syncthreads();
            warpgroup::store(o_s[j % 2], acc);
            __syncthreads();
            if (threadIdx.x == 0) tma::store_async(g.O, o_s[j % 2], {0, 0, t, 0});
        }
    }
    if (threadIdx.x == 0) tma::store_async_wait();
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int T = 256, P = 64;
    const size_t tile_elems = 64 * 64;
    std::vector<float> hA((size_t)T * K * tile_elems);
    uint32_t seed = 4404u;
    for (auto &v : hA) v = 2.0f * lcg_uniform(seed);
    float *dA, *dW, *dO;
    int *dF;
    CUDA_CHECK(cudaMalloc(&dA, hA.size() * 4));
    CUDA_CHECK(cudaMalloc(&dW, T * tile_elems * 4));
    CUDA_CHECK(cudaMalloc(&dO, T * tile_elems * 4));
    CUDA_CHECK(cudaMalloc(&dF, T * 4));
    CUDA_CHECK(cudaMemcpy(dA, hA.data(), hA.size() * 4, cudaMemcpyHostToDevice));
    sk_globals g{tile_gl{dA, nullptr, nullptr, T * K * 64, 64}, tile_gl{dW, nullptr, nullptr, T * 64, 64},
                 tile_gl{dO, nullptr, nullptr, T * 64, 64}, dF, T};
    CUDA_CHECK(cudaFuncSetAttribute(streamk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    std::vector<float> hO(T * tile_elems);
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dO, 0xff, T * tile_elems * 4));  // NaN poison
        CUDA_CHECK(cudaMemset(dW, 0xff, T * tile_elems * 4));
        CUDA_CHECK(cudaMemset(dF, 0, T * 4));
        streamk_kernel<<<2 * P, 128, SMEM_BYTES>>>(g);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hO.data(), dO, hO.size() * 4, cudaMemcpyDeviceToHost));
        for (int t = 0; t < T; t++)
            for (size_t e = 0; e < tile_elems; e++) {
                double ref = 0.0;
                for (int k = 0; k < K; k++) ref += (double)(k + 1) * hA[((size_t)t * K + k) * tile_elems + e];
                const double y = hO[t * tile_elems + e];
                const double err = std::isfinite(y) ? fabs(y - ref) : 1e30;
                if (err > max_err) max_err = err;
            }
    }
    const bool ok = max_err <= 1e-3;
    printf("tk_streamk_flags T=%d K=%d max_abs_err=%.6f\n", T, K, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dW); cudaFree(dO); cudaFree(dF);
    return ok ? 0 : 1;
}
