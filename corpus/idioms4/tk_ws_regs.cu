// tk_ws_regs.cu -- a ThunderKittens warp-specialised kernel whose producer warpgroup also
// computes: after issuing its loads it builds a bias tile in shared memory and hands it to the
// consumers through a named barrier (bar.arrive by the producers, bar.sync by the consumers);
// register budgets moved with warpgroup::decrease_registers / increase_registers.
//
// O[b] = sum_{i < TPB} X[b TPB + i] + 0.5 * B[b] for 128 x 64 float tiles, one block per b.
// 384 threads = 3 warpgroups: warpgroup 0 the producer (setmaxnreg 64), warpgroups 1-2 the
// consumers (setmaxnreg 200; 128 * 64 + 256 * 200 <= 65536 registers).
// Shared: x_s[STAGES=2][8] st_fl<16,64> (a tile as 8 row strips, one per consumer warp) and
// bias_s[8] st_fl<16,64>.
// Barriers: full[s] (0, 1) + 8 * 4 KiB bytes (the producer's expect); empty[s] (8, 0): lane 0 of
//   each consumer warp once its strip is in registers. Producer waits empty[s] with ph ^ 1,
//   consumers full[s] with ph, both flip ph when s wraps.
// Hand-off: warp w of the producer warpgroup loads B's strips 2w, 2w + 1 from global, scales,
//   stores them to bias_s, then group<12>::arrive(3) (bar.arrive 3, 384); the consumers'
//   group<12>::sync(3) (bar.sync 3, 384) completes once all 384 threads arrived, so bias_s is
//   written before they read it.
#include "kittens.cuh"
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

using namespace kittens;

using strip_t = st_fl<16, 64>;
using strip_gl = gl<float, 1, 1, -1, -1, strip_t>;
constexpr int STAGES = 2, CWARPS = 8, TPB = 16;

struct ws_globals {
    strip_gl X, B, O;
};

constexpr size_t SMEM_BYTES = (STAGES * 8 + 8) * sizeof(strip_t) + 1024;

__global__ __launch_bounds__(384, 1)
void ws_kernel(const __grid_constant__ ws_globals g) {
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    strip_t (&x_s)[STAGES][8] = al.allocate<strip_t, STAGES, 8>();
    strip_t (&bias_s)[8] = al.allocate<strip_t, 8>();
    __shared__ semaphore full[STAGES], empty[STAGES];
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            init_semaphore(full[s], 0, 1);
            init_semaphore(empty[s], CWARPS, 0);
        }
    }
    __syncthreads();
    const int b = blockIdx.x;
    if (warpgroup::groupid() == 0) {
        warpgroup::decrease_registers<64>();
        if (threadIdx.x == 0) {
            int s = 0, ph = 0;
            for (int i = 0; i < TPB; i++) {
                wait(empty[s], ph ^ 1);
                tma::expect_bytes(full[s], 8 * size_bytes<strip_t>);
                for (int r = 0; r < 8; r++)
                    tma::load_async(x_s[s][r], g.X, {0, 0, (b * TPB + i) * 8 + r, 0}, full[s]);
                if (++s == STAGES) { s = 0; ph ^= 1; }
            }
        }
        __syncwarp();
        rt_fl<16, 64> bias;
        for (int h = 0; h < 2; h++) {
            const int r = 2 * warpgroup::warpid() + h;
            warp::load(bias, g.B, {0, 0, b * 8 + r, 0});
            warp::mul(bias, bias, 0.5f);
            warp::store(bias_s[r], bias);
        }
        group<12>::arrive(3);
    } else {
        warpgroup::increase_registers<200>();
        const int w = warpid() - 4;
        rt_fl<16, 64> acc, x;
        warp::zero(acc);
        int s = 0, ph = 0;
        for (int i = 0; i < TPB; i++) {
            wait(full[s], ph);
            warp::load(x, x_s[s][w]);
            __syncwarp();
            if (laneid() == 0) arrive(empty[s]);
            warp::add(acc, acc, x);
            if (++s == STAGES) { s = 0; ph ^= 1; }
        }
        group<12>::sync(3);
        warp::load(x, bias_s[w]);
        warp::add(acc, acc, x);
        warp::store(g.O, acc, {0, 0, b * 8 + w, 0});
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int NB = 132;
    const size_t te = 128 * 64;  // a tile: 8 strips of 16 x 64
    std::vector<float> hX((size_t)NB * TPB * te), hB(NB * te);
    uint32_t seed = 4505u;
    for (auto &v : hX) v = 2.0f * lcg_uniform(seed);
    for (auto &v : hB) v = 2.0f * lcg_uniform(seed);
    float *dX, *dB, *dO;
    CUDA_CHECK(cudaMalloc(&dX, hX.size() * 4));
    CUDA_CHECK(cudaMalloc(&dB, hB.size() * 4));
    CUDA_CHECK(cudaMalloc(&dO, hB.size() * 4));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), hX.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, hB.data(), hB.size() * 4, cudaMemcpyHostToDevice));
    ws_globals g{strip_gl{dX, nullptr, nullptr, NB * TPB * 128, 64}, strip_gl{dB, nullptr, nullptr, NB * 128, 64},
                 strip_gl{dO, nullptr, nullptr, NB * 128, 64}};
    CUDA_CHECK(cudaFuncSetAttribute(ws_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    std::vector<float> hO(hB.size());
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dO, 0xff, hO.size() * 4));  // NaN poison
        ws_kernel<<<NB, 384, SMEM_BYTES>>>(g);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hO.data(), dO, hO.size() * 4, cudaMemcpyDeviceToHost));
        for (int b = 0; b < NB; b++)
            for (size_t e = 0; e < te; e++) {
                double ref = 0.5 * hB[b * te + e];
                for (int i = 0; i < TPB; i++) ref += hX[((size_t)b * TPB + i) * te + e];
                const double y = hO[b * te + e];
                const double err = std::isfinite(y) ? fabs(y - ref) : 1e30;
                if (err > max_err) max_err = err;
            }
    }
    const bool ok = max_err <= 1e-3;
    printf("tk_ws_regs NB=%d TPB=%d max_abs_err=%.6f\n", NB, TPB, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dB); cudaFree(dO);
    return ok ? 0 : 1;
}
