// gemm_template.cu -- Hopper bf16 GEMM, C = A * B, as a template over the ring depth and the
// number of consumer warpgroups, launched twice: <STAGES=4, NC=2> and <STAGES=3, NC=3>.
//
// Shapes: A is M x K, B is K x N, C is M x N, row-major bf16; fp32 accumulation.
// One block computes a (64*NC) x 128 tile of C with (1 + NC) warpgroups:
//   warpgroup 0        producer: thread 0 of the warpgroup issues every TMA load
//   warpgroups 1..NC   consumers: consumer c owns rows [64c, 64c+64) of the block tile and
//                      both 64-wide column halves (two rt_fl<16,64> accumulators)
// Shared memory (dynamic, shared_allocator): A_s[STAGES][NC], B_s[STAGES][2] st_bf<64,64>;
//   C_s[NC] st_bf<64,64> epilogue staging (one per consumer, reused for both halves).
// Barriers (static __shared__, thread 0 initialises, then __syncthreads()):
//   full[s]   (0, 1): the producer's expect_bytes of (NC + 2) tiles, plus their tx bytes
//   empty[s]  (4*NC, 0): lane 0 of every consumer warp after mma_async_wait()
// Ring slot k % STAGES; parity written with bit operations: consumers (k / STAGES) & 1,
//   the producer ((k / STAGES) & 1) ^ 1 (fresh barrier: parity 1 returns at once).
// Epilogue: warpgroup::store -> warpgroup::sync(1 + c) -> one thread store_async (+ read
//   wait before the staging tile is reused) -> warpgroup::sync(1 + c). Named barrier ids
//   1..NC, each used by the 128 threads of one consumer warpgroup.
// setmaxnreg: producer 40; consumers 232 (NC = 2) or 152 (NC = 3: 512 threads).
#include "kittens.cuh"
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int TILE = 64;
using tile_t = st_bf<TILE, TILE>;
using acc_t  = rt_fl<16, TILE>;
using mat_gl = gl<bf16, 1, 1, -1, -1, tile_t>;

struct gemm_globals {
    mat_gl A, B, C;
};

template <int STAGES, int NC>
constexpr size_t smem_bytes() { return (size_t)STAGES * (NC + 2) * sizeof(tile_t) + NC * sizeof(tile_t) + 1024; }

template <int STAGES, int NC>
__global__ __launch_bounds__((1 + NC) * 128, 1)
void gemm_template_kernel(const __grid_constant__ gemm_globals g) {
    constexpr int CONSUMER_WARPS = 4 * NC;
    constexpr int CONSUMER_REGS = NC == 2 ? 232 : 152;
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    tile_t (&A_s)[STAGES][NC] = al.allocate<tile_t, STAGES, NC>();
    tile_t (&B_s)[STAGES][2]  = al.allocate<tile_t, STAGES, 2>();
    tile_t (&C_s)[NC]         = al.allocate<tile_t, NC>();

    __shared__ semaphore full[STAGES], empty[STAGES];

    const int wg      = warpgroup::groupid();
    const int row_blk = blockIdx.y * NC;  // in 64-row tiles
    const int col_blk = blockIdx.x * 2;   // in 64-col tiles
    const int k_tiles = g.A.cols() / TILE;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            init_semaphore(full[s], 0, 1);
            init_semaphore(empty[s], CONSUMER_WARPS, 0);
        }
    }
    __syncthreads();

    if (wg == 0) {
        warpgroup::decrease_registers<40>();
        if (warpgroup::laneid() == 0) {
            for (int k = 0; k < k_tiles; k++) {
                const int s = k % STAGES;
                wait(empty[s], ((k / STAGES) & 1) ^ 1);
                tma::expect_bytes(full[s], (NC + 2) * size_bytes<tile_t>);
                for (int c = 0; c < NC; c++)
                    tma::load_async(A_s[s][c], g.A, {0, 0, row_blk + c, k}, full[s]);
                tma::load_async(B_s[s][0], g.B, {0, 0, k, col_blk + 0}, full[s]);
                tma::load_async(B_s[s][1], g.B, {0, 0, k, col_blk + 1}, full[s]);
            }
        }
    } else {
        warpgroup::increase_registers<CONSUMER_REGS>();
        const int c = wg - 1;
        acc_t acc0, acc1;
        warp::zero(acc0);
        warp::zero(acc1);
        for (int k = 0; k < k_tiles; k++) {
            const int s = k % STAGES;
            wait(full[s], (k / STAGES) & 1);
            warpgroup::mma_AB(acc0, A_s[s][c], B_s[s][0]);
            warpgroup::mma_AB(acc1, A_s[s][c], B_s[s][1]);
            warpgroup::mma_async_wait();
            if (laneid() == 0) arrive(empty[s]);
        }
        warpgroup::store(C_s[c], acc0);
        warpgroup::sync(1 + c);
        if (warpgroup::laneid() == 0) {
            tma::store_async(g.C, C_s[c], {0, 0, row_blk + c, col_blk + 0});
            tma::store_async_read_wait();
        }
        warpgroup::sync(1 + c);
        warpgroup::store(C_s[c], acc1);
        warpgroup::sync(1 + c);
        if (warpgroup::laneid() == 0) {
            tma::store_async(g.C, C_s[c], {0, 0, row_blk + c, col_blk + 1});
            tma::store_async_wait();
        }
    }
}

// ---------------------------------------------------------------------------------------
// host harness: deterministic inputs, naive GPU reference, both instantiations checked
// ---------------------------------------------------------------------------------------
__global__ void gemm_reference(const bf16 *A, const bf16 *B, float *C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= M || col >= N) return;
    float sum = 0.f;
    for (int k = 0; k < K; k++) sum += __bfloat162float(A[(size_t)r * K + k]) * __bfloat162float(B[(size_t)k * N + col]);
    C[(size_t)r * N + col] = sum;
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

template <int STAGES, int NC>
static int run(const gemm_globals &g, bf16 *dC, const std::vector<float> &hRef, int M, int N, double &err) {
    constexpr size_t SMEM = smem_bytes<STAGES, NC>();
    CUDA_CHECK(cudaMemset(dC, 0, (size_t)M * N * sizeof(bf16)));
    CUDA_CHECK(cudaFuncSetAttribute(gemm_template_kernel<STAGES, NC>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM));
    gemm_template_kernel<STAGES, NC><<<dim3(N / 128, M / (64 * NC)), (1 + NC) * 128, SMEM>>>(g);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<bf16> hC((size_t)M * N);
    CUDA_CHECK(cudaMemcpy(hC.data(), dC, hC.size() * sizeof(bf16), cudaMemcpyDeviceToHost));
    err = 0.0;
    for (size_t i = 0; i < hC.size(); i++) {
        double v = __bfloat162float(hC[i]);
        double e = std::isfinite(v) ? fabs(v - hRef[i]) : 1e30;
        if (e > err) err = e;
    }
    return 0;
}

int main() {
    const int M = 1536, N = 2048, K = 1024;
    std::vector<bf16> hA((size_t)M * K), hB((size_t)K * N);
    uint32_t seed = 777u;
    for (auto &x : hA) x = __float2bfloat16(lcg_uniform(seed));
    for (auto &x : hB) x = __float2bfloat16(lcg_uniform(seed));
    bf16 *dA, *dB, *dC; float *dRef;
    CUDA_CHECK(cudaMalloc(&dA, hA.size() * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dB, hB.size() * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dC, (size_t)M * N * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dRef, (size_t)M * N * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dA, hA.data(), hA.size() * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, hB.data(), hB.size() * sizeof(bf16), cudaMemcpyHostToDevice));
    gemm_reference<<<dim3(N / 16, M / 16), dim3(16, 16)>>>(dA, dB, dRef, M, N, K);
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> hRef((size_t)M * N);
    CUDA_CHECK(cudaMemcpy(hRef.data(), dRef, hRef.size() * sizeof(float), cudaMemcpyDeviceToHost));
    double max_ref = 0.0;
    for (float r : hRef) max_ref = fmax(max_ref, fabs(r));
    gemm_globals g{mat_gl{dA, nullptr, nullptr, M, K}, mat_gl{dB, nullptr, nullptr, K, N},
                   mat_gl{dC, nullptr, nullptr, M, N}};
    double e1 = 0, e2 = 0;
    if (run<4, 2>(g, dC, hRef, M, N, e1)) return 2;
    if (run<3, 3>(g, dC, hRef, M, N, e2)) return 2;
    double max_err = fmax(e1, e2);
    bool ok = max_err <= 0.02 + 0.01 * max_ref;
    printf("gemm_template M=%d N=%d K=%d <4,2> err=%.5f <3,3> err=%.5f max_abs_err=%.5f (max |ref| %.3f)\n",
           M, N, K, e1, e2, max_err, max_ref);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dRef);
    return ok ? 0 : 1;
}
