// gemm_2cta_clc.cu -- Blackwell (sm_100a) bf16 GEMM, C = A * B, 2-CTA tcgen05 MMAs, tiles
// handed out by cluster launch control (CLC: clusterlaunchcontrol.try_cancel), and
// programmatic dependent launch (PDL) behind a device-side input generator.
// COMPILE-ONLY in this project: no Blackwell GPU was available, so this kernel has been
// built with nvcc (-c, sm_100a) against the real TK headers but never run; its harness is
// written to run unchanged on a B200.
//
// Shapes: A is M x K, B is K x N, C is M x N, row-major bf16; fp32 accumulation.
// One task = one 256 x 256 tile of C computed by a CTA pair (__cluster_dims__(2, 1, 1)).
// The grid has one cluster per task. A cluster starts with its own task (blockIdx.x / 2);
// then CTA 0's scheduler asks CLC to cancel a cluster that has not started yet and takes its
// task (first ctaid / 2), until the answer is "nothing left" (success == 0).
// Roles (224 threads = 7 warps per CTA):
//   warps 0..3  epilogue (both CTAs): warp w reads TMEM lanes [32w, 32w+32) (its quarter)
//   warp 4      loader (both CTAs, lane 0): pdl::wait, then TMA loads completing on CTA 0
//   warp 5      MMA issuer (CTA 0 only, lane 0): mm2_AB / mma2_AB (cta_group::2)
//   warp 6      scheduler (lane 0; CTA 0 issues try_cancel, both CTAs expect its answer)
// TMEM: tensor_allocator<1, 2, false>, provisioned by warp 0 of each CTA before the first
//   cluster barrier and released after the last one; one accumulator tt<float, 128, 256> at
//   column 0 (the task's rows of this CTA x 256 columns).
// Barriers (static __shared__, initialised by thread 0 of each CTA):
//   inputs_arrived[s]    (CTA 0) (0, 1): the MMA thread's expect_bytes for BOTH CTAs' tiles;
//                        each loader's TMA passes dst_mbar_cta = 0.
//   inputs_finished[s]   1 in each CTA: the MMA's multicast commit (0b11) frees the stage.
//   tmem_full            1 in each CTA: tensor_commit<2> after the last MMA of a task.
//   tmem_empty           (CTA 0) 8: lane 0 of every epilogue warp of both CTAs, remotely.
//   schedule_arrived[d]  (0, 1) in each CTA: this CTA's scheduler expects the 16-byte CLC
//                        answer, which try_cancel multicasts to both CTAs' handle[d] and
//                        completes on both CTAs' schedule_arrived[d].
//   schedule_finished[d] (CTA 0) 13 = every reader of an answer: per CTA the scheduler, the
//                        loader and 4 epilogue warps, plus CTA 0's MMA thread. CTA 0's
//                        scheduler waits it before reusing handle[d].
// Exit: the loader drains the ring, then everyone meets at a final cluster barrier before
//   warp 0 deallocates TMEM.
#include "kittens.cuh"
#include <cstdio>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int CLUSTER = 2, STAGES = 4, TILE_K = 64, SCHED_DEPTH = 2;
constexpr int EPI_WARPS = 4, LOADER_WARP = 4, MMA_WARP = 5, SCHED_WARP = 6;
constexpr int NUM_THREADS = 7 * 32;
constexpr int SCHED_READERS = CLUSTER * (2 + EPI_WARPS) + 1;
constexpr int ACC_N = 256;

using a_tile = st_bf<128, TILE_K>;
using b_tile = st_bf<TILE_K, ACC_N / 2>;
using acc_tt = tt<float, 128, ACC_N>;
using a_gl = gl<bf16, 1, 1, -1, -1, a_tile>;
using b_gl = gl<bf16, 1, 1, -1, -1, b_tile>;
using c_gl = gl<bf16, 1, 1, -1, -1>;

struct clc_globals { a_gl A; b_gl B; c_gl C; };

constexpr size_t SMEM_BYTES = STAGES * (sizeof(a_tile) + sizeof(b_tile)) + 1024;

__global__ __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(NUM_THREADS, 1)
void gemm_clc_kernel(const __grid_constant__ clc_globals g) {
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    a_tile (&A_s)[STAGES] = al.allocate<a_tile, STAGES>();
    b_tile (&B_s)[STAGES] = al.allocate<b_tile, STAGES>();

    __shared__ semaphore inputs_arrived[STAGES], inputs_finished[STAGES];
    __shared__ semaphore tmem_full, tmem_empty;
    __shared__ semaphore schedule_arrived[SCHED_DEPTH], schedule_finished[SCHED_DEPTH];
    __shared__ clc::handle handle[SCHED_DEPTH];
    __shared__ uint32_t tmem_base;

    const int rank = cluster_ctarank();
    const int tiles_n = g.C.cols() / ACC_N;
    const int k_tiles = g.A.cols() / TILE_K;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            init_semaphore(inputs_arrived[s], 0, 1);
            init_semaphore(inputs_finished[s], 0, 1);
        }
        init_semaphore(tmem_full, 0, 1);
        init_semaphore(tmem_empty, CLUSTER * EPI_WARPS, 0);
        for (int d = 0; d < SCHED_DEPTH; d++) {
            init_semaphore(schedule_arrived[d], 0, 1);
            init_semaphore(schedule_finished[d], SCHED_READERS, 0);
        }
    }
    tensor_allocator<1, CLUSTER, false> tm;
    if (warpid() == 0) tm.provision(tmem_base);
    tensor_before_thread_sync();
    everyone::tma::cluster::sync();   // inits and the TMEM address visible cluster-wide
    tensor_after_thread_sync();
    tm.set_addr(tmem_base);
    acc_tt acc = tm.allocate<acc_tt>(0);

    const int warp = warpid();
    int task = blockIdx.x / CLUSTER;   // this cluster's own task first
    if (warp < EPI_WARPS) {
        // ---------------- epilogue (both CTAs) ----------------
        for (int t = 0; ; t++) {
            const int row = task / tiles_n, col = task % tiles_n;
            wait(tmem_full, t % 2);
            tensor_after_thread_sync();
            rt_bf<32, 64> chunk[ACC_N / 64];
            #pragma unroll
            for (int i = 0; i < ACC_N / 64; i++)
                warp::load_async(chunk[i], acc.template subtile<tt<float, 32, 64>>(32 * warp, 64 * i));
            tensor_load_wait();
            tensor_before_thread_sync();
            __syncwarp();
            if (laneid() == 0) tma::cluster::arrive(tmem_empty, 0);   // TMEM token to CTA 0's MMA
            #pragma unroll
            for (int i = 0; i < ACC_N / 64; i++)
                warp::store(g.C, chunk[i], {0, 0, (2 * row + rank) * 4 + warp, 4 * col + i});
            const int d = t % SCHED_DEPTH;
            wait(schedule_arrived[d], (t / SCHED_DEPTH) % 2);
            const clc::result next = clc::query(handle[d]);
            __syncwarp();
            if (laneid() == 0) tma::cluster::arrive(schedule_finished[d], 0);
            if (!next.success) break;
            task = next.x / CLUSTER;
        }
        pdl::arrive();   // the next kernel in the stream may start its prologue
    } else if (warp == LOADER_WARP) {
        // ---------------- loader (both CTAs) ----------------
        if (laneid() == 0) {
            pdl::wait();   // A and B are written by the kernel launched before this one
            uint32_t phases = 0xFFFF0000;
            int ring = 0;
            for (int t = 0; ; t++) {
                const int row = task / tiles_n, col = task % tiles_n;
                for (int k = 0; k < k_tiles; k++) {
                    tma::cluster::wait(inputs_finished[ring], get_phasebit<1>(phases, ring));
                    update_phasebit<1>(phases, ring);
                    tma::cluster::load_async(A_s[ring], g.A, {0, 0, 2 * row + rank, k}, inputs_arrived[ring], (uint16_t)(1 << rank), 0);
                    tma::cluster::load_async(B_s[ring], g.B, {0, 0, k, 2 * col + rank}, inputs_arrived[ring], (uint16_t)(1 << rank), 0);
                    ring = ring_advance<STAGES>(ring);
                }
                const int d = t % SCHED_DEPTH;
                wait(schedule_arrived[d], (t / SCHED_DEPTH) % 2);
                const clc::result next = clc::query(handle[d]);
                tma::cluster::arrive(schedule_finished[d], 0);
                if (!next.success) break;
                task = next.x / CLUSTER;
            }
            for (int s = 0; s < STAGES; s++) {   // drain: the last commit on every stage has landed
                tma::cluster::wait(inputs_finished[ring], get_phasebit<1>(phases, ring));
                update_phasebit<1>(phases, ring);
                ring = ring_advance<STAGES>(ring);
            }
        }
    } else if (warp == MMA_WARP) {
        // ---------------- MMA issuer (CTA 0, one lane) ----------------
        if (rank == 0 && laneid() == 0) {
            uint32_t phases = 0xFFFF0000;
            int ring = 0;
            for (int t = 0; ; t++) {
                tma::cluster::wait(tmem_empty, (t % 2) ^ 1);   // both CTAs' epilogues read the last result
                tensor_after_thread_sync();
                for (int k = 0; k < k_tiles; k++) {
                    tma::expect_bytes(inputs_arrived[ring], CLUSTER * (size_bytes<a_tile> + size_bytes<b_tile>));
                    wait(inputs_arrived[ring], get_phasebit<0>(phases, ring));
                    update_phasebit<0>(phases, ring);
                    if (k == 0) mm2_AB(acc, A_s[ring], B_s[ring], inputs_finished[ring]);
                    else        mma2_AB(acc, A_s[ring], B_s[ring], inputs_finished[ring]);
                    ring = ring_advance<STAGES>(ring);
                }
                tensor_commit<CLUSTER>(tmem_full);
                const int d = t % SCHED_DEPTH;
                wait(schedule_arrived[d], (t / SCHED_DEPTH) % 2);
                const clc::result next = clc::query(handle[d]);
                tma::cluster::arrive(schedule_finished[d], 0);
                if (!next.success) break;
            }
        }
    } else if (warp == SCHED_WARP) {
        // ---------------- scheduler (lane 0; CTA 0 asks, both CTAs receive) ----------------
        if (laneid() == 0) {
            for (int t = 0; ; t++) {
                const int d = t % SCHED_DEPTH;
                if (rank == 0) {
                    wait(schedule_finished[d], ((t / SCHED_DEPTH) % 2) ^ 1);   // every reader is done with handle[d]
                    clc::schedule(handle[d], schedule_arrived[d]);
                }
                tma::expect_bytes(schedule_arrived[d], sizeof(clc::handle));
                wait(schedule_arrived[d], (t / SCHED_DEPTH) % 2);
                const clc::result next = clc::query(handle[d]);
                tma::cluster::arrive(schedule_finished[d], 0);
                if (!next.success) break;
            }
        }
    }
    __syncwarp();
    tensor_before_thread_sync();
    everyone::tma::cluster::sync();   // final: no CTA exits or frees TMEM while its peer still signals it
    tensor_after_thread_sync();
    if (warp == 0) tm.deprovision();
}

// ---------------------------------------------------------------------------------------
// host harness: inputs generated on the device by the kernel launched before the GEMM (the
// GEMM is launched with programmatic stream serialisation, so only its pdl::wait orders its
// loads after the generator), naive GPU reference, max_abs_err, PASS/FAIL
// ---------------------------------------------------------------------------------------
__device__ inline float hash_uniform(uint32_t i, uint32_t seed) {
    uint32_t x = i * 2654435761u ^ seed;
    x ^= x >> 15; x *= 2246822519u; x ^= x >> 13; x *= 3266489917u; x ^= x >> 16;
    return (float)(x >> 8) / 16777216.0f - 0.5f;
}

__global__ void generate_inputs(bf16 *A, bf16 *B, size_t nA, size_t nB) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nA + nB; i += (size_t)gridDim.x * blockDim.x) {
        if (i < nA) A[i] = __float2bfloat16(hash_uniform((uint32_t)i, 7u));
        else        B[i - nA] = __float2bfloat16(hash_uniform((uint32_t)(i - nA), 11u));
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

int main() {
    const int M = 4096, N = 4096, K = 2048;   // 256 tasks of 256 x 256, one cluster each
    bf16 *dA, *dB, *dC; float *dRef;
    CUDA_CHECK(cudaMalloc(&dA, (size_t)M * K * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dB, (size_t)K * N * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dC, (size_t)M * N * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dRef, (size_t)M * N * sizeof(float)));
    CUDA_CHECK(cudaMemset(dC, 0, (size_t)M * N * sizeof(bf16)));

    clc_globals g{a_gl{dA, nullptr, nullptr, M, K}, b_gl{dB, nullptr, nullptr, K, N}, c_gl{dC, nullptr, nullptr, M, N}};
    const int tasks = (M / 256) * (N / 256);
    CUDA_CHECK(cudaFuncSetAttribute(gemm_clc_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));

    generate_inputs<<<1024, 256>>>(dA, dB, (size_t)M * K, (size_t)K * N);
    CUDA_CHECK(cudaGetLastError());
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(tasks * CLUSTER);
    cfg.blockDim = dim3(NUM_THREADS);
    cfg.dynamicSmemBytes = SMEM_BYTES;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, gemm_clc_kernel, g));
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
    printf("gemm_2cta_clc M=%d N=%d K=%d clusters=%d max_abs_err=%.5f (max |ref| %.3f)\n", M, N, K, tasks, max_err, max_ref);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dRef);
    return ok ? 0 : 1;
}
