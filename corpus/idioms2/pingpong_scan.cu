// pingpong_scan.cu -- Hopper FA3-style ping-pong: a producer warpgroup streams 64 x 64 bf16
// tiles through a TMA ring and two consumer warpgroups take alternate tiles, handing an ordered
// section back and forth through named barriers (the "warp scheduler barrier" of FA3).
//
// Computes, per block b and row r (0..63), over the block's T tiles i = 0..T-1:
//   carry[r] = 0.5 * carry[r] + sum_c X[b*T + i][r][c];   Y[(b*T + i)*64 + r] = carry[r]
// an ordered recurrence, so tile i's update must follow tile i - 1's.
//
// 384 threads = 3 warpgroups:
//   WG0  producer: thread 0 issues the loads (expect + one TMA load of 8192 bytes per tile)
//   WG1  consumer 0: tiles i = 0, 2, 4, ...    WG2  consumer 1: tiles i = 1, 3, 5, ...
// Shared: x_s[STAGES=4] st_bf<64,64>; carry_s[64] floats, touched only in the ordered section.
// Barriers:
//   full[s]  (0, 1) + 8192 tx bytes, the producer's expect;  empty[s] (4, 0): lane 0 of each
//            warp of the consumer that read the stage (one consumer per use)
//   tile i uses stage i % STAGES; consumers wait full with (i / STAGES) & 1, the producer waits
//            empty with ((i / STAGES) & 1) ^ 1 (fresh barrier: the first wait passes)
//   named barriers: turn(2) = ids 2, 3, 256 threads each (kittens::barrier<8>): consumer c
//            arrive_and_wait(turn[c]) before its ordered section (its 128 threads) and the other
//            consumer's arrive(turn[c]) (128 threads) hands the turn over; consumer 1 arrives
//            turn[0] once at the start so consumer 0 goes first; a consumer hands over only when
//            a next tile exists, so no arrival is left at exit.
#include "kittens.cuh"
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int STAGES = 4;
constexpr int T = 16;  // tiles per block (even: each consumer takes T / 2)
using tile_t = st_bf<64, 64>;
using x_gl = gl<bf16, 1, 1, -1, -1, tile_t>;

struct scan_globals {
    x_gl X;
    float *Y;
};

__global__ __launch_bounds__(384, 1)
void pingpong_kernel(const __grid_constant__ scan_globals g) {
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    tile_t (&x_s)[STAGES] = al.allocate<tile_t, STAGES>();
    __shared__ semaphore full[STAGES], empty[STAGES];
    __shared__ float carry_s[64];
    barrier<8> turn(2);

    const int wg = warpgroup::groupid();
    const int base = blockIdx.x * T;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            init_semaphore(full[s], 0, 1);
            init_semaphore(empty[s], 4, 0);
        }
    }
    if (threadIdx.x < 64) carry_s[threadIdx.x] = 0.0f;
    __syncthreads();

    if (wg == 0) {
        if (threadIdx.x == 0) {
            for (int i = 0; i < T; i++) {
                const int s = i % STAGES;
                wait(empty[s], ((i / STAGES) & 1) ^ 1);
                tma::expect_bytes(full[s], sizeof(tile_t));
                tma::load_async(x_s[s], g.X, {0, 0, base + i, 0}, full[s]);
            }
        }
    } else {
        const int c = wg - 1;
        const int t = warpgroup::laneid();  // 0..127
        const int r = t / 2, half = t % 2;
        if (c == 1) arrive(turn[0]);
        for (int i = c; i < T; i += 2) {
            const int s = i % STAGES;
            wait(full[s], (i / STAGES) & 1);
            float sum = 0.0f;
            for (int k = 0; k < 32; k++) sum += __bfloat162float(x_s[s][int2{r, half * 32 + k}]);
            sum += __shfl_xor_sync(0xffffffff, sum, 1);
            __syncwarp();
            if (laneid() == 0) arrive(empty[s]);
            arrive_and_wait(turn[c]);
            if (half == 0) {
                const float v = 0.5f * carry_s[r] + sum;
                carry_s[r] = v;
                g.Y[(size_t)(base + i) * 64 + r] = v;
            }
            if (i + 1 < T) arrive(turn[c ^ 1]);
        }
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int B = 96, R = B * T * 64, C = 64;
    std::vector<bf16> hX((size_t)R * C);
    uint32_t seed = 2501u;
    for (auto &v : hX) v = __float2bfloat16(2.0f * lcg_uniform(seed));
    bf16 *dX; float *dY;
    CUDA_CHECK(cudaMalloc(&dX, hX.size() * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dY, (size_t)R * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), hX.size() * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dY, 0xff, (size_t)R * sizeof(float)));  // NaN poison
    scan_globals g{x_gl{dX, nullptr, nullptr, R, C}, dY};
    const size_t smem = STAGES * sizeof(tile_t) + 1024;
    CUDA_CHECK(cudaFuncSetAttribute(pingpong_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    pingpong_kernel<<<B, 384, smem>>>(g);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> hY(R);
    CUDA_CHECK(cudaMemcpy(hY.data(), dY, R * sizeof(float), cudaMemcpyDeviceToHost));
    double max_err = 0.0;
    for (int b = 0; b < B; b++)
        for (int r = 0; r < 64; r++) {
            double carry = 0.0;
            for (int i = 0; i < T; i++) {
                const size_t row = (size_t)(b * T + i) * 64 + r;
                double s = 0.0;
                for (int c = 0; c < C; c++) s += __bfloat162float(hX[row * C + c]);
                carry = 0.5 * carry + s;
                double e = std::isfinite(hY[row]) ? fabs(hY[row] - carry) : 1e30;
                if (e > max_err) max_err = e;
            }
        }
    bool ok = max_err <= 1e-3;
    printf("pingpong_scan B=%d T=%d max_abs_err=%.6f\n", B, T, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dY);
    return ok ? 0 : 1;
}
