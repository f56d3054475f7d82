// rownorm_persistent.cu -- Hopper RMS norm of the rows of an R x 256 bf16 matrix,
// y = x / sqrt(mean(x^2) + eps), persistent over 64-row tiles (memory-bound).
//
// 384 threads = 3 warpgroups, grid-stride over tiles (60 blocks, 256 tiles):
//   warpgroup 0       producer: thread 0 loads a tile as 2 x 4 sub-tiles st_bf<16,128>
//                     (column half h, warp w) with a nested loop of loads
//   warpgroups 1, 2   consumers: consumer c handles column half c; warp w of it rows
//                     [16w, 16w+16): row sums of squares of its half, exchanged with the other
//                     consumer through shared partials, scaled, stored
// Shared memory (dynamic): x_s[STAGES=2][2][4] and o_s[2][2][4] st_bf<16,128> (64 KiB each);
//   part_s[2][2][4] sv_fl<16> row partials, double-buffered by tile parity.
// Barriers:
//   full[s]   (0, 1) + 8 * 4096 tx bytes, the producer's expect;  empty[s] (8, 0): lane 0 of
//             each consumer warp once its rows are in registers
//   the ring (s, ph) is carried across the block's tiles: `if (++s == STAGES) { s = 0; ph ^= 1; }`
//   consumers wait full[s] with ph, the producer waits empty[s] with ph ^ 1
//   named barriers: id 1 for the 8 consumer warps (group<8>::sync(1)) between writing and
//   reading the partials; ids 2, 3 for one consumer warpgroup each (staging handoff)
// Stores, double-buffered: o_s[j % 2] for the block's j-th tile; before overwriting it the
//   storing thread waits until at most the 4 stores of the previous tile are still reading
//   (store_async_read_wait<4>), then warpgroup::sync; after writing, warpgroup::sync and the
//   storing thread issues the 4 TMA stores; store_async_wait before exit.
#include "kittens.cuh"
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int D = 256;
constexpr int STAGES = 2;
constexpr int CONSUMER_WARPS = 8;
using x_tile = st_bf<16, 128>;
using x_gl = gl<bf16, 1, 1, -1, -1, x_tile>;
using part_t = sv_fl<16>;

struct norm_globals {
    x_gl X, Y;
};

constexpr size_t SMEM_BYTES = 2 * (size_t)STAGES * 8 * sizeof(x_tile) + 16 * sizeof(part_t) + 2048;

__global__ __launch_bounds__(384, 1)
void rownorm_kernel(const __grid_constant__ norm_globals g) {
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    x_tile (&x_s)[STAGES][2][4] = al.allocate<x_tile, STAGES, 2, 4>();
    x_tile (&o_s)[2][2][4]      = al.allocate<x_tile, 2, 2, 4>();
    part_t (&part_s)[2][2][4]   = al.allocate<part_t, 2, 2, 4>();
    __shared__ semaphore full[STAGES], empty[STAGES];

    const int ntiles = g.X.rows() / 64;
    const int wg = warpgroup::groupid();

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            init_semaphore(full[s], 0, 1);
            init_semaphore(empty[s], CONSUMER_WARPS, 0);
        }
    }
    __syncthreads();

    if (wg == 0) {
        if (threadIdx.x == 0) {
            int s = 0, ph = 0;
            for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
                wait(empty[s], ph ^ 1);
                tma::expect_bytes(full[s], 8 * size_bytes<x_tile>);
                for (int h = 0; h < 2; h++)
                    for (int w = 0; w < 4; w++)
                        tma::load_async(x_s[s][h][w], g.X, {0, 0, 4 * t + w, h}, full[s]);
                if (++s == STAGES) { s = 0; ph ^= 1; }
            }
        }
    } else {
        const int c = wg - 1;
        const int w = warpgroup::warpid();
        rt_fl<16, 128> x, sq;
        typename rt_fl<16, 128>::col_vec rs, other;
        int s = 0, ph = 0, j = 0;
        for (int t = blockIdx.x; t < ntiles; t += gridDim.x, j++) {
            wait(full[s], ph);
            warp::load(x, x_s[s][c][w]);
            __syncwarp();
            if (laneid() == 0) arrive(empty[s]);
            if (++s == STAGES) { s = 0; ph ^= 1; }
            // sum of squares of this half's row, exchanged with the other consumer warpgroup
            warp::mul(sq, x, x);
            warp::row_sum(rs, sq);
            warp::store(part_s[j % 2][c][w], rs);
            group<CONSUMER_WARPS>::sync(1);
            warp::load(other, part_s[j % 2][1 - c][w]);
            warp::add(rs, rs, other);
            warp::apply(rs, rs, [](int, float v) { return rsqrtf(v * (1.0f / D) + 1e-5f); });
            warp::mul_row(x, x, rs);
            // double-buffered staging: the stores of tile j-2 must have read o_s[j % 2]
            if (warpgroup::laneid() == 0) tma::store_async_read_wait<4>();
            warpgroup::sync(2 + c);
            warp::store(o_s[j % 2][c][w], x);
            warpgroup::sync(2 + c);
            if (warpgroup::laneid() == 0) {
                for (int ww = 0; ww < 4; ww++)
                    tma::store_async(g.Y, o_s[j % 2][c][ww], {0, 0, 4 * t + ww, c});
            }
        }
        if (warpgroup::laneid() == 0) tma::store_async_wait();
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int R = 16384;
    std::vector<bf16> hX((size_t)R * D);
    uint32_t seed = 99u;
    for (auto &v : hX) v = __float2bfloat16(2.0f * lcg_uniform(seed));
    bf16 *dX, *dY;
    CUDA_CHECK(cudaMalloc(&dX, hX.size() * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dY, hX.size() * sizeof(bf16)));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), hX.size() * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dY, 0, hX.size() * sizeof(bf16)));
    norm_globals g{x_gl{dX, nullptr, nullptr, R, D}, x_gl{dY, nullptr, nullptr, R, D}};
    CUDA_CHECK(cudaFuncSetAttribute(rownorm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    rownorm_kernel<<<60, 384, SMEM_BYTES>>>(g);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<bf16> hY(hX.size());
    CUDA_CHECK(cudaMemcpy(hY.data(), dY, hY.size() * sizeof(bf16), cudaMemcpyDeviceToHost));
    double max_err = 0.0, max_ref = 0.0;
    for (int r = 0; r < R; r++) {
        double ss = 0;
        for (int col = 0; col < D; col++) { double v = __bfloat162float(hX[(size_t)r * D + col]); ss += v * v; }
        double scale = 1.0 / sqrt(ss / D + 1e-5);
        for (int col = 0; col < D; col++) {
            double ref = __bfloat162float(hX[(size_t)r * D + col]) * scale;
            double v = __bfloat162float(hY[(size_t)r * D + col]);
            double e = std::isfinite(v) ? fabs(v - ref) : 1e30;
            if (e > max_err) max_err = e;
            max_ref = fmax(max_ref, fabs(ref));
        }
    }
    bool ok = max_err <= 0.02 + 0.01 * max_ref;
    printf("rownorm_persistent R=%d D=%d max_abs_err=%.5f (max |ref| %.3f)\n", R, D, max_err, max_ref);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dY);
    return ok ? 0 : 1;
}
