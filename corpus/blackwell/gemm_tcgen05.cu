// gemm_tcgen05.cu -- Blackwell (sm_100a) bf16 GEMM, C = A * B, with tcgen05 MMAs into
// tensor memory, a 2-CTA cluster and a double-buffered TMEM accumulator.
// COMPILE-ONLY in this project: no Blackwell GPU was available, so this kernel has been
// built with nvcc (-c, sm_100a) against the real TK headers but never run; its harness is
// written to run unchanged on a B200.
//
// Shapes: A is M x K, B is K x N, C is M x N, row-major bf16; fp32 accumulation.
// One task = one 256 x 256 tile of C, computed by a CTA pair (__cluster_dims__(2, 1, 1)):
//   CTA rank r loads A rows [128r, 128r+128) of the task and B columns [128r, 128r+128),
//   and holds rows [128r, 128r+128) x all 256 columns of the result in its own TMEM.
//   Cluster q runs tasks q, q + #clusters, ... (all roles of both CTAs walk that same list).
// Roles (192 threads = 6 warps per CTA):
//   warps 0..3  epilogue (both CTAs): warp w reads TMEM lanes [32w, 32w+32) only (its lane
//               quarter, w = warpid() % 4), tcgen05.ld -> registers -> global
//   warp 4      loader (both CTAs, lane 0): TMA loads that complete on CTA 0's barrier
//   warp 5      MMA issuer (CTA 0 only, lane 0): mm2_AB / mma2_AB (cta_group::2)
// TMEM: tensor_allocator<1, 2, false>: warp 0 of each CTA runs provision() (tcgen05.alloc
//   cta_group::2, 512 columns) before the cluster barrier and deprovision() after the final
//   one. acc[slot] = tt<float, 128, 256> at columns 256 * slot (slots 0, 1 = 512 columns).
// Barriers (static __shared__, init by thread 0 of each CTA, then the cluster barrier):
//   inputs_arrived[s]   (CTA 0) init (0, 1): the MMA thread's expect_bytes for BOTH CTAs'
//                       tiles (2 * 32768 B): each loader passes dst_mbar_cta = 0.
//   inputs_finished[s]  init 1 in each CTA: the MMA's tcgen05.commit (multicast 0b11)
//                       arrives once on each CTA's copy; each loader waits its own copy.
//   tmem_full[slot]     init 1 in each CTA: tensor_commit<2> after the last MMA of a task.
//   tmem_empty[slot]    (CTA 0) init 8: lane 0 of every epilogue warp of both CTAs, remote
//                       arrive tma::cluster::arrive(.., 0) -- the TMEM token. The MMA
//                       thread waits it before overwriting slot (parity ((t/2)%2)^1).
// tcgen05 fences: a reader runs tensor_before_thread_sync() after tensor_load_wait() and
//   before the token arrive; every waiter on a barrier that orders tcgen05 work runs
//   tensor_after_thread_sync() right after the wait.
// Exit: the loader drains the ring (waits for the last commit on every stage), then all
//   threads of both CTAs meet at a final cluster barrier before warp 0 deallocates TMEM, so
//   no CTA leaves while its peer may still arrive on its barriers or write its TMEM.
#include "kittens.cuh"
#include <cstdio>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int CLUSTER = 2, STAGES = 4, TILE_K = 64;
constexpr int EPI_WARPS = 4;
constexpr int NUM_THREADS = (EPI_WARPS + 2) * 32;
constexpr int ACC_N = 256;   // output columns per task

using a_tile = st_bf<128, TILE_K>;
using b_tile = st_bf<TILE_K, ACC_N / 2>;
using acc_tt = tt<float, 128, ACC_N>;
using a_gl = gl<bf16, 1, 1, -1, -1, a_tile>;
using b_gl = gl<bf16, 1, 1, -1, -1, b_tile>;
using c_gl = gl<bf16, 1, 1, -1, -1>;

struct tc_globals { a_gl A; b_gl B; c_gl C; };

constexpr size_t SMEM_BYTES = STAGES * (sizeof(a_tile) + sizeof(b_tile)) + 1024;

__global__ __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(NUM_THREADS, 1)
void gemm_tcgen05_kernel(const __grid_constant__ tc_globals g) {
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    a_tile (&A_s)[STAGES] = al.allocate<a_tile, STAGES>();
    b_tile (&B_s)[STAGES] = al.allocate<b_tile, STAGES>();

    __shared__ semaphore inputs_arrived[STAGES], inputs_finished[STAGES];
    __shared__ semaphore tmem_full[2], tmem_empty[2];
    __shared__ uint32_t tmem_base;

    const int rank = cluster_ctarank();
    const int cluster_id = blockIdx.x / CLUSTER, num_clusters = gridDim.x / CLUSTER;
    const int tiles_n = g.C.cols() / ACC_N;
    const int num_tasks = (g.C.rows() / 256) * tiles_n;
    const int k_tiles = g.A.cols() / TILE_K;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            init_semaphore(inputs_arrived[s], 0, 1);
            init_semaphore(inputs_finished[s], 0, 1);
        }
        for (int i = 0; i < 2; i++) {
            init_semaphore(tmem_full[i], 0, 1);
            init_semaphore(tmem_empty[i], CLUSTER * EPI_WARPS, 0);
        }
    }
    tensor_allocator<1, CLUSTER, false> tm;
    if (warpid() == 0) tm.provision(tmem_base);   // one whole warp per CTA
    tensor_before_thread_sync();
    everyone::tma::cluster::sync();   // inits and the TMEM address visible cluster-wide
    tensor_after_thread_sync();
    tm.set_addr(tmem_base);
    acc_tt acc[2] = {tm.allocate<acc_tt>(0), tm.allocate<acc_tt>(ACC_N)};

    const int warp = warpid();
    if (warp < EPI_WARPS) {
        // ---------------- epilogue (both CTAs) ----------------
        int t = 0;
        for (int task = cluster_id; task < num_tasks; task += num_clusters, t++) {
            const int slot = t % 2, row = task / tiles_n, col = task % tiles_n;
            wait(tmem_full[slot], (t / 2) % 2);
            tensor_after_thread_sync();
            rt_bf<32, 64> chunk[ACC_N / 64];
            #pragma unroll
            for (int i = 0; i < ACC_N / 64; i++)
                warp::load_async(chunk[i], acc[slot].template subtile<tt<float, 32, 64>>(32 * warp, 64 * i));
            tensor_load_wait();
            tensor_before_thread_sync();
            __syncwarp();
            if (laneid() == 0) tma::cluster::arrive(tmem_empty[slot], 0);   // TMEM token back to CTA 0's MMA
            #pragma unroll
            for (int i = 0; i < ACC_N / 64; i++)
                warp::store(g.C, chunk[i], {0, 0, (2 * row + rank) * 4 + warp, 4 * col + i});
        }
    } else if (warp == EPI_WARPS) {
        // ---------------- loader (both CTAs) ----------------
        if (laneid() == 0) {
            uint32_t phases = 0xFFFF0000;
            int ring = 0;
            for (int task = cluster_id; task < num_tasks; task += num_clusters) {
                const int row = task / tiles_n, col = task % tiles_n;
                for (int k = 0; k < k_tiles; k++) {
                    tma::cluster::wait(inputs_finished[ring], get_phasebit<1>(phases, ring));
                    update_phasebit<1>(phases, ring);
                    tma::cluster::load_async(A_s[ring], g.A, {0, 0, 2 * row + rank, k}, inputs_arrived[ring], (uint16_t)(1 << rank), 0);
                    tma::cluster::load_async(B_s[ring], g.B, {0, 0, k, 2 * col + rank}, inputs_arrived[ring], (uint16_t)(1 << rank), 0);
                    ring = ring_advance<STAGES>(ring);
                }
            }
            for (int s = 0; s < STAGES; s++) {   // drain: the last commit on every stage has landed
                tma::cluster::wait(inputs_finished[ring], get_phasebit<1>(phases, ring));
                update_phasebit<1>(phases, ring);
                ring = ring_advance<STAGES>(ring);
            }
        }
    } else if (rank == 0) {
        // ---------------- MMA issuer (CTA 0, one lane) ----------------
        if (laneid() == 0) {
            uint32_t phases = 0xFFFF0000;
            int ring = 0, t = 0;
            for (int task = cluster_id; task < num_tasks; task += num_clusters, t++) {
                const int slot = t % 2;
                tma::cluster::wait(tmem_empty[slot], ((t / 2) % 2) ^ 1);   // every reader of both CTAs is done
                tensor_after_thread_sync();
                for (int k = 0; k < k_tiles; k++) {
                    tma::expect_bytes(inputs_arrived[ring], CLUSTER * (size_bytes<a_tile> + size_bytes<b_tile>));
                    wait(inputs_arrived[ring], get_phasebit<0>(phases, ring));
                    update_phasebit<0>(phases, ring);
                    if (k == 0) mm2_AB(acc[slot], A_s[ring], B_s[ring], inputs_finished[ring]);
                    else        mma2_AB(acc[slot], A_s[ring], B_s[ring], inputs_finished[ring]);
                    ring = ring_advance<STAGES>(ring);
                }
                tensor_commit<CLUSTER>(tmem_full[slot]);
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
    const int M = 4096, N = 4096, K = 1024;   // 256 tasks of 256 x 256
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

    tc_globals g{a_gl{dA, nullptr, nullptr, M, K}, b_gl{dB, nullptr, nullptr, K, N}, c_gl{dC, nullptr, nullptr, M, N}};
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int tasks = (M / 256) * (N / 256);
    int clusters = sms / CLUSTER < tasks ? sms / CLUSTER : tasks;   // persistent: several tasks per cluster
    CUDA_CHECK(cudaFuncSetAttribute(gemm_tcgen05_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    gemm_tcgen05_kernel<<<clusters * CLUSTER, NUM_THREADS, SMEM_BYTES>>>(g);
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
    printf("gemm_tcgen05 M=%d N=%d K=%d clusters=%d max_abs_err=%.5f (max |ref| %.3f)\n", M, N, K, clusters, max_err, max_ref);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dRef);
    return ok ? 0 : 1;
}
