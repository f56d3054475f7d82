// gemm_lcsc.cu -- Hopper bf16 GEMM, C = A * B, on TK's prototype::lcsc template
// (load-compute-store-communicate), persistent over 128 x 128 tasks, no communication
// workers (num_comm_sms = 0: every block computes).
//
// Template roles per compute block (config: 3 warpgroups, 384 threads):
//   warpgroup 2, warp 0, lane 0   loader: per k-step waits inputs_finished[stage], expects and
//                                 loads two A tiles st_bf<64,64> and one B tile st_bf<64,128>
//   warpgroup 2, warp 1, lane 0   storer: waits outputs_arrived, TMA-stores the two C tiles,
//                                 read wait, arrives on outputs_finished
//   warpgroups 0, 1               consumers: warpgroup c computes rows [64c, 64c+64) of the
//                                 task into rt_fl<16,128>, releases each stage with warp::arrive
// Barriers (the user's comp_sem, initialised by thread 0 in comp_setup, then __syncthreads()):
//   inputs_arrived[s] (0, 1) + 32768 tx bytes; inputs_finished[s] (8, 0): lane 0 of each
//   consumer warp; outputs_arrived (2, 0): one warpgroup::arrive per consumer warpgroup after
//   warpgroup::sync; outputs_finished (1, 0): the storer after store_async_read_wait.
// State in regs (each role's own copy, carried across its tasks): stage (ring of 4, carried:
//   K = 1216 is 19 k-steps, so the ring wraps mid-task), phasebits = 0xFFFF0000 read with TK's
//   get_phasebit / update_phasebit (bits 0..3 inputs_arrived, 16..19 inputs_finished), and
//   out_phase for the C staging handoff (consumers wait outputs_finished with out_phase ^ 1).
#include "kittens.cuh"
#include "prototype.cuh"
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

using namespace kittens;
using namespace kittens::prototype;

constexpr int STAGES = 4;
using A_tile = st_bf<64, 64>;
using B_tile = st_bf<64, 128>;
using C_tile = st_bf<64, 128>;

struct config {
    static constexpr int NUM_BLOCKS = 48;
    static constexpr int NUM_WARPGROUPS = 3;
    static constexpr int NUM_THREADS = NUM_WARPGROUPS * 128;
    static constexpr int PRODUCER_REGISTERS = 40;
    static constexpr int CONSUMER_REGISTERS = 232;
    static constexpr int DYNAMIC_SHARED_MEMORY = STAGES * (2 * 8192 + 16384) + 2 * 16384 + 1024;
};

struct globals {
    gl<bf16, 1, 1, -1, -1, A_tile> A;
    gl<bf16, 1, 1, -1, -1, B_tile> B;
    gl<bf16, 1, 1, -1, -1, C_tile> C;
    int num_comm_sms;
};

struct lcsct {
    struct comp_sem {
        semaphore inputs_arrived[STAGES];
        semaphore inputs_finished[STAGES];
        semaphore outputs_arrived;
        semaphore outputs_finished;
    };
    struct comm_sem { };
    struct comp_smem {
        struct stage_inputs {
            A_tile A[2];
            B_tile B;
        };
        stage_inputs inputs[STAGES];
        C_tile C[2];
    };
    struct comm_smem { };
    struct comp_regs {
        int worker_id, comm_workers, comp_workers;
        int num_tasks, task_offset, task_stride, task_id;
        int stage;
        uint32_t phasebits;
        int out_phase;
        int num_iters, col_blocks;
    };
    struct comm_regs {
        int worker_id, comm_workers, comp_workers;
        int num_tasks, task_offset, task_stride, task_id;
    };

    __device__ static inline void comp_setup(const globals &G, comp_sem &sem, comp_smem &smem, comp_regs &regs) {
        if (threadIdx.x == 0) {
            for (int i = 0; i < STAGES; i++) {
                init_semaphore(sem.inputs_arrived[i], 0, 1);
                init_semaphore(sem.inputs_finished[i], 8, 0);
            }
            init_semaphore(sem.outputs_arrived, 2, 0);
            init_semaphore(sem.outputs_finished, 1, 0);
        }
        __syncthreads();
        regs.stage = 0;
        regs.phasebits = 0xFFFF0000;
        regs.out_phase = 0;
        regs.col_blocks = G.C.cols() / 128;
        regs.num_tasks = (G.C.rows() / 128) * regs.col_blocks;
        regs.task_offset = regs.worker_id;
        regs.task_stride = regs.comp_workers;
        regs.num_iters = G.A.cols() / 64;
    }
    __device__ static inline void comm_setup(const globals &G, comm_sem &sem, comm_smem &smem, comm_regs &regs) {
        regs.num_tasks = 0;       // nothing to communicate
        regs.task_offset = 0;
        regs.task_stride = 1;
    }
    __device__ static inline void communicator(const globals &G, comm_sem &sem, comm_smem &smem, comm_regs &regs) { }

    __device__ static inline void loader(const globals &G, comp_sem &sem, comp_smem &smem, comp_regs &regs) {
        const int row_blk = regs.task_id / regs.col_blocks, col_blk = regs.task_id % regs.col_blocks;
        for (int k = 0; k < regs.num_iters; k++) {
            wait(sem.inputs_finished[regs.stage], get_phasebit<1>(regs.phasebits, regs.stage));
            update_phasebit<1>(regs.phasebits, regs.stage);
            tma::expect_bytes(sem.inputs_arrived[regs.stage], 2 * sizeof(A_tile) + sizeof(B_tile));
            for (int i = 0; i < 2; i++)
                tma::load_async(smem.inputs[regs.stage].A[i], G.A, {2 * row_blk + i, k}, sem.inputs_arrived[regs.stage]);
            tma::load_async(smem.inputs[regs.stage].B, G.B, {k, col_blk}, sem.inputs_arrived[regs.stage]);
            regs.stage = (regs.stage + 1) % STAGES;
        }
    }
    __device__ static inline void storer(const globals &G, comp_sem &sem, comp_smem &smem, comp_regs &regs) {
        const int row_blk = regs.task_id / regs.col_blocks, col_blk = regs.task_id % regs.col_blocks;
        wait(sem.outputs_arrived, regs.out_phase);
        for (int c = 0; c < 2; c++)
            tma::store_async(G.C, smem.C[c], {2 * row_blk + c, col_blk});
        tma::store_async_read_wait();
        arrive(sem.outputs_finished);
        regs.out_phase ^= 1;
    }
    __device__ static inline void consumer(const globals &G, comp_sem &sem, comp_smem &smem, comp_regs &regs) {
        const int wg = warpgroup::groupid();
        rt_fl<16, 128> acc;
        warp::zero(acc);
        for (int k = 0; k < regs.num_iters; k++) {
            wait(sem.inputs_arrived[regs.stage], get_phasebit<0>(regs.phasebits, regs.stage));
            update_phasebit<0>(regs.phasebits, regs.stage);
            warpgroup::mma_AB(acc, smem.inputs[regs.stage].A[wg], smem.inputs[regs.stage].B);
            warpgroup::mma_async_wait();
            warp::arrive(sem.inputs_finished[regs.stage]);
            regs.stage = (regs.stage + 1) % STAGES;
        }
        wait(sem.outputs_finished, regs.out_phase ^ 1);     // the storer has read the last task's tiles
        warpgroup::store(smem.C[wg], acc);
        warpgroup::sync(wg + 1);
        warpgroup::arrive(sem.outputs_arrived);
        regs.out_phase ^= 1;
    }
};

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
    uint32_t seed = 31337u;
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
    globals G{{dA, nullptr, nullptr, M, K}, {dB, nullptr, nullptr, K, N}, {dC, nullptr, nullptr, M, N}, 0};
    lcsc::launch_kernel<config, globals, lcsct>(G);
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
    printf("gemm_lcsc M=%d N=%d K=%d max_abs_err=%.5f (max |ref| %.3f)\n", M, N, K, max_err, max_ref);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dRef);
    return ok ? 0 : 1;
}
