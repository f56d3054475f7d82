// gemm_lcf.cu -- Hopper bf16 GEMM, C = A * B, written on ThunderKittens'
// prototype::lcf (load / compute / finish) template, persistent over output tiles.
//
// Shapes: A is M x K, B is K x N, C is M x N, row-major bf16; fp32 accumulation.
// One task = one 128 x 128 tile of C; a block loops over tasks (task_iter) until
// common_setup reports num_iters = -1.
// Roles (set by the template from the flags below): 8 consumer warps = warpgroups 0, 1
// (warps 0..7), 4 producer warps = warpgroup 2 (warps 8..11), 384 threads.
// Barriers (owned by the template, one per ring slot, INPUT_PIPE_STAGES = 4):
//   inputs_arrived[s]   init count PRODUCER_BARRIER_ARRIVALS = 1: the single producer
//                       thread (warpgroup::laneid() == 0) runs tma::expect on the whole
//                       input_block (32768 B) -- that expect is the one arrival -- and
//                       issues the three TMA loads of that block.
//   inputs_finished[s]  init count CONSUMER_BARRIER_ARRIVALS = 8 (default): lane 0 of
//                       every consumer warp arrives once, after mma_async_wait().
//   finish_finished     init count 8: lane 0 of every consumer warp arrives after its
//                       warpgroup's TMA store has finished reading the finish block.
// Parity is carried by the template (semaphore_bitfield); user callbacks never wait.
// Epilogue: warpgroup::store -> warpgroup::sync(1 + wg) -> one thread store_async +
//   store_async_read_wait -> warpgroup::sync(1 + wg) -> per-warp arrive(finish_finished).
#include "kittens.cuh"
#include "prototype.cuh"
#include <cstdio>
#include <cmath>
#include <vector>

using namespace kittens;
using namespace kittens::prototype;
using namespace kittens::prototype::lcf;

struct gemm_layout {
    using a_tile = st_bf<64, 64>;
    using b_tile = st_bf<64, 128>;
    using c_tile = st_bf<64, 128>;
    using a_gl   = gl<bf16, 1, 1, -1, -1, a_tile>;
    using b_gl   = gl<bf16, 1, 1, -1, -1, b_tile>;
    using c_gl   = gl<bf16, 1, 1, -1, -1, c_tile>;
    struct globals        { a_gl A; b_gl B; c_gl C; };
    struct input_block    { a_tile a[2]; b_tile b; };
    struct finish_block   { c_tile c[2]; };
    struct common_state   { int row, col; };   // in 128-row / 128-col task units
    struct consumer_state { rt_fl<16, 128> acc; };
};

struct gemm_template {
    static constexpr int NUM_CONSUMER_WARPS = 8;
    static constexpr int NUM_PRODUCER_WARPS = 4;
    static constexpr int INPUT_PIPE_STAGES = 4;
    static constexpr int PRODUCER_BARRIER_ARRIVALS = 1;
    using layout = gemm_layout;

    __device__ static inline void common_setup(common_setup_args<layout> args) {
        int tiles_m = args.globals.C.rows() / 128;
        int tiles_n = args.globals.C.cols() / 128;
        int task = args.task_iter * gridDim.x + blockIdx.x;
        if (task >= tiles_m * tiles_n) {
            args.num_iters = -1;
            return;
        }
        args.common.row = task / tiles_n;
        args.common.col = task % tiles_n;
        args.num_iters  = args.globals.A.cols() / 64;
    }

    struct producer {
        __device__ static inline void setup(producer_setup_args<layout> args) {
            warpgroup::decrease_registers<40>();
        }
        __device__ static inline void load(producer_load_args<layout> args) {
            if (warpgroup::laneid() == 0) {
                tma::expect(args.inputs_arrived, args.input);
                tma::load_async(args.input.a[0], args.globals.A, {0, 0, 2 * args.common.row + 0, args.iter}, args.inputs_arrived);
                tma::load_async(args.input.a[1], args.globals.A, {0, 0, 2 * args.common.row + 1, args.iter}, args.inputs_arrived);
                tma::load_async(args.input.b, args.globals.B, {0, 0, args.iter, args.common.col}, args.inputs_arrived);
            }
        }
    };

    struct consumer {
        __device__ static inline void setup(consumer_setup_args<layout> args) {
            warpgroup::increase_registers<232>();
            warp::zero(args.state.acc);
        }
        __device__ static inline void compute(consumer_compute_args<layout> args) {
            int wg = warpgroup::groupid();
            warpgroup::mma_AB(args.state.acc, args.input.a[wg], args.input.b);
            warpgroup::mma_async_wait();
            if (laneid() == 0) arrive(args.inputs_finished);
        }
        __device__ static inline void finish(consumer_finish_args<layout> args) {
            int wg = warpgroup::groupid();
            warpgroup::store(args.finish.c[wg], args.state.acc);
            warpgroup::sync(1 + wg);
            if (warpgroup::laneid() == 0) {
                tma::store_async(args.globals.C, args.finish.c[wg], {0, 0, 2 * args.common.row + wg, args.common.col});
                tma::store_async_read_wait();
            }
            warpgroup::sync(1 + wg);
            if (laneid() == 0) arrive(args.finish_finished);
        }
    };
};

// ---------------------------------------------------------------------------------------
// host harness
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
    const int M = 2048, N = 2048, K = 1024;
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
    CUDA_CHECK(cudaMemset(dC, 0, (size_t)M * N * sizeof(bf16)));

    using L = gemm_layout;
    L::globals g{L::a_gl{dA, nullptr, nullptr, M, K},
                 L::b_gl{dB, nullptr, nullptr, K, N},
                 L::c_gl{dC, nullptr, nullptr, M, N}};
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    size_t smem = MAX_SHARED_MEMORY - 1024;
    auto kern = lcf::kernel<gemm_template>;
    CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    // fewer blocks than tasks, so every block runs several tasks through the same ring
    int blocks = sms < (M / 128) * (N / 128) ? sms : (M / 128) * (N / 128);
    kern<<<blocks, prototype::detail::NUM_THREADS_v<gemm_template>, smem>>>(g);
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
    printf("gemm_lcf M=%d N=%d K=%d blocks=%d max_abs_err=%.5f (max |ref| %.3f)\n", M, N, K, blocks, max_err, max_ref);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dRef);
    return ok ? 0 : 1;
}
