// gemm_ring.cu -- Hopper bf16 GEMM, C = A * B, with a hand-written producer/consumer
// mbarrier ring (no prototype template).
//
// Shapes: A is M x K, B is K x N, C is M x N, all row-major bf16; fp32 accumulation.
// One block computes a 128 x 128 tile of C.  384 threads = 3 warpgroups:
//   warpgroup 0       producer: one elected thread (warpgroup::laneid() == 0) issues TMA
//   warpgroups 1, 2   consumers: consumer c owns rows [64c, 64c+64) of the block tile and
//                     both 64-wide column halves (two rt_fl<16,64> accumulators)
// Shared memory (dynamic, shared_allocator, every tile 1024-aligned):
//   A_s[STAGES][2], B_s[STAGES][2]  st_bf<64,64> ring, STAGES = 4 (32 KiB per stage)
//   C_s[2]                          st_bf<64,64> epilogue staging, one per consumer
// Barriers (static __shared__, initialised by threadIdx.x == 0, then __syncthreads()):
//   full[s]   init_semaphore(full[s], 0, 1): one arrival = the producer's expect_bytes,
//             plus 4 tiles * 8192 B = 32768 tx bytes from the four TMA loads of stage s.
//   empty[s]  init_semaphore(empty[s], CONSUMER_WARPS, 0): one arrival per consumer warp
//             (lane 0 of each of the 8 consumer warps) after mma_async_wait().
// Parity:
//   consumers wait full[s]  with parity (k / STAGES) % 2        (phase j of slot s = round j)
//   producer  waits empty[s] with parity ((k / STAGES) % 2) ^ 1 (fresh barrier: parity 1
//             returns at once, so the first STAGES loads do not wait)
// Epilogue: each consumer reuses its one staging tile for both column halves: store half 0,
//   warpgroup::sync(1 + c), lane 0 store_async + store_async_read_wait, warpgroup::sync,
//   then half 1.  Named barrier ids 1 and 2 (0 is __syncthreads).
#include "kittens.cuh"
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int STAGES         = 4;
constexpr int CONSUMER_WGS   = 2;
constexpr int CONSUMER_WARPS = CONSUMER_WGS * 4;
constexpr int NUM_THREADS    = (1 + CONSUMER_WGS) * 128;
constexpr int TILE           = 64;

using tile_t = st_bf<TILE, TILE>;
using acc_t  = rt_fl<16, TILE>;
using mat_gl = gl<bf16, 1, 1, -1, -1, tile_t>;

struct gemm_globals {
    mat_gl A, B, C;
};

constexpr size_t SMEM_BYTES = (size_t)STAGES * 4 * sizeof(tile_t) + 2 * sizeof(tile_t) + 1024;

__global__ __launch_bounds__(NUM_THREADS, 1)
void gemm_ring_kernel(const __grid_constant__ gemm_globals g) {
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    tile_t (&A_s)[STAGES][2] = al.allocate<tile_t, STAGES, 2>();
    tile_t (&B_s)[STAGES][2] = al.allocate<tile_t, STAGES, 2>();
    tile_t (&C_s)[2]         = al.allocate<tile_t, 2>();

    __shared__ semaphore full[STAGES], empty[STAGES];

    const int wg      = warpgroup::groupid();
    const int row_blk = blockIdx.y * 2;   // in 64-row tiles
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
        // ---------------- producer ----------------
        warpgroup::decrease_registers<40>();
        if (warpgroup::laneid() == 0) {
            for (int k = 0; k < k_tiles; k++) {
                int s = k % STAGES;
                wait(empty[s], ((k / STAGES) % 2) ^ 1);
                tma::expect_bytes(full[s], 2 * size_bytes<tile_t> + 2 * size_bytes<tile_t>);
                tma::load_async(A_s[s][0], g.A, {0, 0, row_blk + 0, k}, full[s]);
                tma::load_async(A_s[s][1], g.A, {0, 0, row_blk + 1, k}, full[s]);
                tma::load_async(B_s[s][0], g.B, {0, 0, k, col_blk + 0}, full[s]);
                tma::load_async(B_s[s][1], g.B, {0, 0, k, col_blk + 1}, full[s]);
            }
        }
    } else {
        // ---------------- consumers ----------------
        warpgroup::increase_registers<232>();
        const int c = wg - 1;
        acc_t acc0, acc1;
        warp::zero(acc0);
        warp::zero(acc1);

        for (int k = 0; k < k_tiles; k++) {
            int s = k % STAGES;
            wait(full[s], (k / STAGES) % 2);
            warpgroup::mma_AB(acc0, A_s[s][c], B_s[s][0]);
            warpgroup::mma_AB(acc1, A_s[s][c], B_s[s][1]);
            warpgroup::mma_async_wait();
            if (laneid() == 0) arrive(empty[s]);
        }

        // epilogue: one staging tile per consumer, reused for both column halves
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
// host harness: deterministic inputs, naive GPU reference, max_abs_err, PASS/FAIL
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

static float lcg_uniform(uint32_t &state) {   // deterministic, in [-0.5, 0.5)
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int M = 2048, N = 2048, K = 2048;
    std::vector<bf16> hA((size_t)M * K), hB((size_t)K * N);
    uint32_t seed = 12345u;
    for (auto &x : hA) x = __float2bfloat16(lcg_uniform(seed));
    for (auto &x : hB) x = __float2bfloat16(lcg_uniform(seed));

    bf16 *dA, *dB, *dC; float *dRef;
    CUDA_CHECK(cudaMalloc(&dA, hA.size() * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dB, hB.size() * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dC, (size_t)M * N * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dRef, (size_t)M * N * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dA, hA.data(), hA.size() * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, hB.data(), hB.size() * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dC, 0, (size_t)M * N * sizeof(bf16)));

    gemm_globals g{mat_gl{dA, nullptr, nullptr, M, K},
                   mat_gl{dB, nullptr, nullptr, K, N},
                   mat_gl{dC, nullptr, nullptr, M, N}};
    CUDA_CHECK(cudaFuncSetAttribute(gemm_ring_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    dim3 grid(N / 128, M / 128);
    gemm_ring_kernel<<<grid, NUM_THREADS, SMEM_BYTES>>>(g);
    CUDA_CHECK(cudaGetLastError());
    gemm_reference<<<dim3(N / 16, M / 16), dim3(16, 16)>>>(dA, dB, dRef, M, N, K);
    CUDA_CHECK(cudaDeviceSynchronize());

    std::vector<bf16> hC((size_t)M * N);
    std::vector<float> hRef((size_t)M * N);
    CUDA_CHECK(cudaMemcpy(hC.data(), dC, hC.size() * sizeof(bf16), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hRef.data(), dRef, hRef.size() * sizeof(float), cudaMemcpyDeviceToHost));
    double max_err = 0.0, max_ref = 0.0;
    for (size_t i = 0; i < hC.size(); i++) {
        double v = __bfloat162float(hC[i]);
        double e = std::isfinite(v) ? fabs(v - hRef[i]) : 1e30;
        if (e > max_err) max_err = e;
        max_ref = fmax(max_ref, fabs(hRef[i]));
    }
    bool ok = max_err <= 0.02 + 0.01 * max_ref;
    printf("gemm_ring M=N=K=%d max_abs_err=%.5f (max |ref| %.3f)\n", M, max_err, max_ref);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dRef);
    return ok ? 0 : 1;
}
