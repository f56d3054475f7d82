// perwarp_pipeline.cu -- Hopper element-wise y = 2x + 1 over a matrix of 16 x 64 bf16 tiles with
// a private pipeline per warp and no warp specialisation: every warp loads, computes and stores
// its own tiles (grid-stride over all warps of the grid; 64 blocks x 4 warps, 16 tiles each).
//
// 128 threads = 4 warps per block; warp w owns
//   a_s[w][STAGES=2]  st_bf<16,64> input ring, bar[w][STAGES] its mbarriers,
//   o_s[w]            st_bf<16,64> output staging (one tile, reused every iteration).
// Barriers: lane 0 of warp w initialises bar[w][s] (0, 1), published to its warp with
//   `__syncwarp()` (no other warp touches them). Each completion: warp::tma::expect (lane 0
//   inside the op) + one TMA load of 2048 bytes.
// Prefetch one tile ahead: before the loop lane 0 fills slot 0 (warp::tma::*); iteration i
//   fills slot (i + 1) % 2 for tile i + 1 (when there is one), then the warp waits bar[w][i % 2]
//   with parity (i / 2) % 2: the i-th use of a slot is its i-th completion.
// Staging: warp::store -> __syncwarp -> warp::tma::store_async (lane 0) -> read wait in the
//   storing lane -> __syncwarp before the next iteration writes o_s[w] again; the slot read by
//   iteration i - 1 is refilled in iteration i only after that iteration's __syncwarp.
#include "kittens.cuh"
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int WARPS = 4, STAGES = 2;
using tile_t = st_bf<16, 64>;
using tile_gl = gl<bf16, 1, 1, -1, -1, tile_t>;

struct pipe_globals {
    tile_gl X, Y;
};

__global__ __launch_bounds__(WARPS * 32, 1)
void perwarp_kernel(const __grid_constant__ pipe_globals g) {
    __shared__ tile_t a_s[WARPS][STAGES];
    __shared__ tile_t o_s[WARPS];
    __shared__ semaphore bar[WARPS][STAGES];
    const int w = warpid();
    const int col_tiles = g.X.cols() / 64;
    const int ntiles = (g.X.rows() / 16) * col_tiles;
    const int gw = blockIdx.x * WARPS + w;           // this warp's first tile
    const int stride = gridDim.x * WARPS;
    const int n = ntiles / stride;                   // tiles per warp (the grid divides the tiles)
    rt_fl<16, 64> r;

    if (laneid() == 0)
        for (int s = 0; s < STAGES; s++) init_semaphore(bar[w][s], 0, 1);
    __syncwarp();
    if (n > 0) {
        warp::tma::expect(bar[w][0], a_s[w][0]);
        warp::tma::load_async(a_s[w][0], g.X, {0, 0, gw / col_tiles, gw % col_tiles}, bar[w][0]);
    }
    for (int i = 0; i < n; i++) {
        const int s = i % STAGES;
        const int t = gw + i * stride;
        if (i + 1 < n && laneid() == 0) {
            const int t1 = t + stride;
            tma::expect(bar[w][(i + 1) % STAGES], a_s[w][(i + 1) % STAGES]);
            tma::load_async(a_s[w][(i + 1) % STAGES], g.X, {0, 0, t1 / col_tiles, t1 % col_tiles}, bar[w][(i + 1) % STAGES]);
        }
        wait(bar[w][s], (i / STAGES) % 2);
        warp::load(r, a_s[w][s]);
        warp::mul(r, r, 2.0f);
        warp::add(r, r, 1.0f);
        warp::store(o_s[w], r);
        __syncwarp();
        warp::tma::store_async(g.Y, o_s[w], {0, 0, t / col_tiles, t % col_tiles});
        warp::tma::store_async_read_wait();
        __syncwarp();
    }
    warp::tma::store_async_wait();
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int R = 4096, C = 1024;
    std::vector<bf16> hX((size_t)R * C);
    uint32_t seed = 2024u;
    for (auto &v : hX) v = __float2bfloat16(4.0f * lcg_uniform(seed));
    bf16 *dX, *dY;
    CUDA_CHECK(cudaMalloc(&dX, hX.size() * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dY, hX.size() * sizeof(bf16)));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), hX.size() * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dY, 0, hX.size() * sizeof(bf16)));
    pipe_globals g{tile_gl{dX, nullptr, nullptr, R, C}, tile_gl{dY, nullptr, nullptr, R, C}};
    perwarp_kernel<<<64, WARPS * 32>>>(g);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<bf16> hY(hX.size());
    CUDA_CHECK(cudaMemcpy(hY.data(), dY, hY.size() * sizeof(bf16), cudaMemcpyDeviceToHost));
    double max_err = 0.0, max_ref = 0.0;
    for (size_t i = 0; i < hY.size(); i++) {
        double ref = 2.0 * __bfloat162float(hX[i]) + 1.0;
        double v = __bfloat162float(hY[i]);
        double e = std::isfinite(v) ? fabs(v - ref) : 1e30;
        if (e > max_err) max_err = e;
        max_ref = fmax(max_ref, fabs(ref));
    }
    bool ok = max_err <= 0.02 + 0.01 * max_ref;
    printf("perwarp_pipeline R=%d C=%d max_abs_err=%.5f (max |ref| %.3f)\n", R, C, max_err, max_ref);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dY);
    return ok ? 0 : 1;
}
