// gemm_accpipe.cu -- persistent Hopper bf16 GEMM, C = A * B, with the pipeline state
// carried across the task loop and a two-slot epilogue (accumulator staging) ring.
//
// Shapes: A is M x K, B is K x N, C is M x N, row-major bf16; fp32 accumulation.
// One task = one 128 x 128 tile of C; block b runs tasks b, b + gridDim.x, ... (every role
// walks the same task list, so the trip counts agree). K / 64 = 18 k-steps per task, not a
// multiple of STAGES, so the ring slot and the phase bits differ from task to task: both
// are carried across the task loop, never reset.
// Roles (384 threads, __launch_bounds__(384, 1)):
//   warpgroup 0  producer (decrease_registers<40>): warp 0 lane 0 = TMA loader,
//                warp 1 lane 0 = storer (TMA stores of the staged tiles)
//   warpgroups 1, 2  consumers (increase_registers<232>): consumer c owns rows [64c, 64c+64)
// Shared memory (dynamic, shared_allocator, 1024-aligned tiles):
//   A_s[STAGES][2] st_bf<64,64>, B_s[STAGES] st_bf<64,128>  (32 KiB per stage, STAGES = 4)
//   out_s[EPI_SLOTS][2] st_bf<64,128>                         (staging ring, EPI_SLOTS = 2)
// Barriers (static __shared__, initialised by thread 0, then __syncthreads()):
//   full[s]      init (0, 1): the loader's expect_bytes + 32768 tx bytes (2 A + 1 B tile)
//   empty[s]     init 8: lane 0 of each consumer warp after mma_async_wait()
//   out_full[e]  init 8: lane 0 of each consumer warp after its rows are staged
//                (each writer runs fence.proxy.async first, then __syncwarp)
//   out_empty[e] init 1: the storer after store_async_read_wait() on slot e
// Parity: TK's phase bitfield (get_phasebit / update_phasebit), one 32-bit word per role,
//   started at 0xFFFF0000: half 0 (bits 0..15, start 0) for the *_full barriers a role
//   waits to be filled, half 1 (bits 16..31, start 1) for the *_empty barriers (fresh
//   barrier, parity 1 passes). Input ring bits are ids 0..STAGES-1, epilogue ring bits are
//   ids STAGES..STAGES+EPI_SLOTS-1. ring / epi indices advance with ring_advance.
#include "kittens.cuh"
#include <cstdio>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int STAGES = 4, EPI_SLOTS = 2;
constexpr int CONSUMER_WARPS = 8;
constexpr int NUM_THREADS = 384;

using a_tile = st_bf<64, 64>;
using b_tile = st_bf<64, 128>;
using c_tile = st_bf<64, 128>;
using a_gl = gl<bf16, 1, 1, -1, -1, a_tile>;
using b_gl = gl<bf16, 1, 1, -1, -1, b_tile>;
using c_gl = gl<bf16, 1, 1, -1, -1, c_tile>;

struct accpipe_globals { a_gl A; b_gl B; c_gl C; };

constexpr size_t SMEM_BYTES = STAGES * (2 * sizeof(a_tile) + sizeof(b_tile)) + EPI_SLOTS * 2 * sizeof(c_tile) + 1024;

__global__ __launch_bounds__(NUM_THREADS, 1)
void gemm_accpipe_kernel(const __grid_constant__ accpipe_globals g) {
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    a_tile (&A_s)[STAGES][2]      = al.allocate<a_tile, STAGES, 2>();
    b_tile (&B_s)[STAGES]         = al.allocate<b_tile, STAGES>();
    c_tile (&out_s)[EPI_SLOTS][2] = al.allocate<c_tile, EPI_SLOTS, 2>();

    __shared__ semaphore full[STAGES], empty[STAGES], out_full[EPI_SLOTS], out_empty[EPI_SLOTS];

    const int tiles_n   = g.C.cols() / 128;
    const int num_tasks = (g.C.rows() / 128) * tiles_n;
    const int k_tiles   = g.A.cols() / 64;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            init_semaphore(full[s], 0, 1);
            init_semaphore(empty[s], CONSUMER_WARPS, 0);
        }
        for (int e = 0; e < EPI_SLOTS; e++) {
            init_semaphore(out_full[e], CONSUMER_WARPS, 0);
            init_semaphore(out_empty[e], 1, 0);
        }
    }
    __syncthreads();

    if (warpgroup::groupid() == 0) {
        warpgroup::decrease_registers<40>();
        if (warpgroup::laneid() == 0) {
            // ---------------- loader ----------------
            uint32_t load_phases = 0xFFFF0000;   // carried across tasks
            int ring = 0;                        // carried across tasks
            for (int task = blockIdx.x; task < num_tasks; task += gridDim.x) {
                const int row = task / tiles_n, col = task % tiles_n;
                for (int k = 0; k < k_tiles; k++) {
                    wait(empty[ring], get_phasebit<1>(load_phases, ring));
                    update_phasebit<1>(load_phases, ring);
                    tma::expect_bytes(full[ring], 2 * size_bytes<a_tile> + size_bytes<b_tile>);
                    tma::load_async(A_s[ring][0], g.A, {0, 0, 2 * row + 0, k}, full[ring]);
                    tma::load_async(A_s[ring][1], g.A, {0, 0, 2 * row + 1, k}, full[ring]);
                    tma::load_async(B_s[ring], g.B, {0, 0, k, col}, full[ring]);
                    ring = ring_advance<STAGES>(ring);
                }
            }
        } else if (warpgroup::laneid() == 32) {
            // ---------------- storer ----------------
            uint32_t store_phases = 0xFFFF0000;
            int epi = 0;
            for (int task = blockIdx.x; task < num_tasks; task += gridDim.x) {
                const int row = task / tiles_n, col = task % tiles_n;
                wait(out_full[epi], get_phasebit<0>(store_phases, STAGES + epi));
                update_phasebit<0>(store_phases, STAGES + epi);
                tma::store_async(g.C, out_s[epi][0], {0, 0, 2 * row + 0, col});
                tma::store_async(g.C, out_s[epi][1], {0, 0, 2 * row + 1, col});
                tma::store_async_read_wait();   // slot may be refilled once the stores have read it
                arrive(out_empty[epi]);
                epi = ring_advance<EPI_SLOTS>(epi);
            }
            tma::store_async_wait();
        }
    } else {
        // ---------------- consumers ----------------
        warpgroup::increase_registers<232>();
        const int c = warpgroup::groupid() - 1;
        uint32_t cons_phases = 0xFFFF0000;   // carried across tasks
        int ring = 0, epi = 0;               // carried across tasks
        rt_fl<16, 128> acc;
        for (int task = blockIdx.x; task < num_tasks; task += gridDim.x) {
            // consumer task start: nothing is reset here
            warp::zero(acc);
            for (int k = 0; k < k_tiles; k++) {
                wait(full[ring], get_phasebit<0>(cons_phases, ring));
                update_phasebit<0>(cons_phases, ring);
                warpgroup::mma_AB(acc, A_s[ring][c], B_s[ring]);
                warpgroup::mma_async_wait();
                if (laneid() == 0) arrive(empty[ring]);
                ring = ring_advance<STAGES>(ring);
            }
            // epilogue: stage this task's tile in slot epi while the next task's mainloop runs
            wait(out_empty[epi], get_phasebit<1>(cons_phases, STAGES + epi));
            update_phasebit<1>(cons_phases, STAGES + epi);
            warpgroup::store(out_s[epi][c], acc);
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncwarp();
            if (laneid() == 0) arrive(out_full[epi]);
            epi = ring_advance<EPI_SLOTS>(epi);
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

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int M = 2048, N = 2048, K = 1152;   // 256 tasks, 18 k-steps each
    std::vector<bf16> hA((size_t)M * K), hB((size_t)K * N);
    uint32_t seed = 2024u;
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

    accpipe_globals g{a_gl{dA, nullptr, nullptr, M, K}, b_gl{dB, nullptr, nullptr, K, N}, c_gl{dC, nullptr, nullptr, M, N}};
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int tasks = (M / 128) * (N / 128);
    int blocks = sms < tasks ? sms : tasks;   // several tasks per block
    CUDA_CHECK(cudaFuncSetAttribute(gemm_accpipe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    gemm_accpipe_kernel<<<blocks, NUM_THREADS, SMEM_BYTES>>>(g);
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
    printf("gemm_accpipe M=%d N=%d K=%d blocks=%d max_abs_err=%.5f (max |ref| %.3f)\n", M, N, K, blocks, max_err, max_ref);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dRef);
    return ok ? 0 : 1;
}
