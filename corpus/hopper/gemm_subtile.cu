// gemm_subtile.cu -- Hopper bf16 GEMM, C = A * B, whose B stage is filled by a loop of
// sub-tile loads: a 64 x 256 slab of B as PARTS = 256 / part_t::cols loads of st_bf<64,64>.
//
// Shapes: A is M x K, B is K x N, C is M x N, row-major bf16; fp32 accumulation.
// One block computes a 128 x 256 tile of C.  384 threads = 3 warpgroups:
//   warpgroup 0       producer: thread 0 issues, per k-step, one expect for the whole stage,
//                     the two A tiles and a `for (p < PARTS)` loop of B sub-tile loads
//   warpgroups 1, 2   consumers: consumer c owns rows [64c, 64c+64) and PARTS accumulators
//                     rt_fl<16,64> acc[p], one per 64-column part
// Shared memory (dynamic): A_s[STAGES][2], B_s[STAGES][PARTS] st_bf<64,64>, STAGES = 3
//   (48 KiB per stage); C_s[2] st_bf<64,64> staging.
// Barriers: full[s] (0, 1) + (2 + PARTS) * 8192 tx bytes; empty[s] (8, 0): lane 0 of each
//   consumer warp.  Consumers wait full[s] with (k / STAGES) % 2, the producer waits empty[s]
//   with ((k / STAGES) % 2) ^ 1.  K = 1216: 19 k-steps, the ring wraps mid-slab.
// Epilogue: per part, warpgroup::store -> warpgroup::sync(1 + c) -> one thread store_async +
//   store_async_read_wait -> warpgroup::sync(1 + c); store_async_wait at the end.
#include "kittens.cuh"
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int STAGES = 3;
using a_t    = st_bf<64, 64>;
using part_t = st_bf<64, 64>;
constexpr int PARTS = 256 / part_t::cols;
constexpr int CONSUMER_WARPS = 8;
using acc_t  = rt_fl<16, 64>;
using mat_gl = gl<bf16, 1, 1, -1, -1, a_t>;

struct gemm_globals {
    mat_gl A, B, C;
};

constexpr size_t SMEM_BYTES = (size_t)STAGES * (2 * sizeof(a_t) + PARTS * sizeof(part_t)) + 2 * sizeof(a_t) + 1024;

__global__ __launch_bounds__(384, 1)
void gemm_subtile_kernel(const __grid_constant__ gemm_globals g) {
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    a_t (&A_s)[STAGES][2]        = al.allocate<a_t, STAGES, 2>();
    part_t (&B_s)[STAGES][PARTS] = al.allocate<part_t, STAGES, PARTS>();
    a_t (&C_s)[2]                = al.allocate<a_t, 2>();
    __shared__ semaphore full[STAGES], empty[STAGES];

    const int wg = warpgroup::groupid();
    const int row_blk = blockIdx.y * 2;
    const int col_blk = blockIdx.x * PARTS;
    const int k_tiles = g.A.cols() / 64;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            init_semaphore(full[s], 0, 1);
            init_semaphore(empty[s], CONSUMER_WARPS, 0);
        }
    }
    __syncthreads();

    if (wg == 0) {
        warpgroup::decrease_registers<40>();
        if (threadIdx.x == 0) {
            for (int k = 0; k < k_tiles; k++) {
                const int s = k % STAGES;
                wait(empty[s], ((k / STAGES) % 2) ^ 1);
                tma::expect_bytes(full[s], 2 * size_bytes<a_t> + PARTS * size_bytes<part_t>);
                tma::load_async(A_s[s][0], g.A, {0, 0, row_blk + 0, k}, full[s]);
                tma::load_async(A_s[s][1], g.A, {0, 0, row_blk + 1, k}, full[s]);
                #pragma unroll
                for (int p = 0; p < PARTS; p++)
                    tma::load_async(B_s[s][p], g.B, {0, 0, k, col_blk + p}, full[s]);
            }
        }
    } else {
        warpgroup::increase_registers<232>();
        const int c = wg - 1;
        acc_t acc[PARTS];
        #pragma unroll
        for (int p = 0; p < PARTS; p++) warp::zero(acc[p]);
        for (int k = 0; k < k_tiles; k++) {
            const int s = k % STAGES;
            wait(full[s], (k / STAGES) % 2);
            #pragma unroll
            for (int p = 0; p < PARTS; p++)
                warpgroup::mma_AB(acc[p], A_s[s][c], B_s[s][p]);
            warpgroup::mma_async_wait();
            if (laneid() == 0) arrive(empty[s]);
        }
        #pragma unroll
        for (int p = 0; p < PARTS; p++) {
            warpgroup::store(C_s[c], acc[p]);
            warpgroup::sync(1 + c);
            if (warpgroup::laneid() == 0) {
                tma::store_async(g.C, C_s[c], {0, 0, row_blk + c, col_blk + p});
                tma::store_async_read_wait();
            }
            warpgroup::sync(1 + c);
        }
        if (warpgroup::laneid() == 0) tma::store_async_wait();
    }
}

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

int main() {
    const int M = 1024, N = 2048, K = 1216;
    std::vector<bf16> hA((size_t)M * K), hB((size_t)K * N);
    uint32_t seed = 4242u;
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
    gemm_globals g{mat_gl{dA, nullptr, nullptr, M, K}, mat_gl{dB, nullptr, nullptr, K, N},
                   mat_gl{dC, nullptr, nullptr, M, N}};
    CUDA_CHECK(cudaFuncSetAttribute(gemm_subtile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    gemm_subtile_kernel<<<dim3(N / 256, M / 128), 384, SMEM_BYTES>>>(g);
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
    printf("gemm_subtile M=%d N=%d K=%d max_abs_err=%.5f (max |ref| %.3f)\n", M, N, K, max_err, max_ref);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dRef);
    return ok ? 0 : 1;
}
