// rotary_lcsf.cu -- memory-bound rotary position embedding (rotate-half form) on
// ThunderKittens' prototype::lcsf (load / compute / store / finish) template.
//
// Shapes: X, O are [B, H, N, D = 64] bf16; cos, sin are [N, 32] fp32 tables.
//   o[.., d]      = x[.., d] * cos[n, d] - x[.., d + 32] * sin[n, d]      (d < 32)
//   o[.., d + 32] = x[.., d + 32] * cos[n, d] + x[.., d] * sin[n, d]
// One task = one chunk of 64 positions (4 tiles of st_bf<16, 64>); a task iterates over
// all B * H heads (num_iters = B * H, iter -> (b, h) = (iter / H, iter % H)); the block is
// persistent over chunks (chunk = task_iter * gridDim.x + blockIdx.x).
// Roles (set by the template): 4 consumer warps = warpgroup 0 (warp w owns positions
//   [16w, 16w+16) of the chunk and keeps their cos/sin in registers for the whole task),
//   4 producer warps = warpgroup 1; 256 threads.
// Barriers (owned by the template; INPUT_PIPE_STAGES = 3, OUTPUT_PIPE_STAGES = 2):
//   inputs_arrived[s]   init PRODUCER_BARRIER_ARRIVALS = 1: one producer thread
//                       (warpgroup::laneid() == 0) runs tma::expect on the whole
//                       input_block (4 * 2048 = 8192 B) and issues the 4 loads.
//   inputs_finished[s]  init CONSUMER_BARRIER_ARRIVALS = 4 (default): lane 0 of each
//                       consumer warp, after __syncwarp, once its x tile is in registers.
//   outputs_arrived[s]  init 4: lane 0 of each consumer warp after its o tile is written
//                       (fence.proxy.async by every writer, then __syncwarp).
//   outputs_finished[s] init 1: the storing producer thread (warp 1 of the producer
//                       warpgroup, lane 0) after store_async_read_wait().
//   finish_finished     init 4: lane 0 of each consumer warp in finish().
// Parity: carried by the template's semaphore_bitfield; the callbacks never wait.
#include "kittens.cuh"
#include "prototype.cuh"
#include <cstdio>
#include <cmath>
#include <vector>

using namespace kittens;
using namespace kittens::prototype;
using namespace kittens::prototype::lcsf;

struct rotary_layout {
    using x_tile  = st_bf<16, 64>;
    using x_gl    = gl<bf16, -1, -1, -1, 64, x_tile>;
    using rope_gl = gl<float, 1, 1, -1, 32>;
    struct globals        { x_gl X, O; rope_gl cos, sin; };
    struct input_block    { x_tile x[4]; };
    struct output_block   { x_tile o[4]; };
    struct common_state   { int chunk; };
    struct consumer_state { rt_fl<16, 32> cos, sin; };
};

struct rotary_template {
    static constexpr int NUM_CONSUMER_WARPS = 4;
    static constexpr int NUM_PRODUCER_WARPS = 4;
    static constexpr int INPUT_PIPE_STAGES = 3;
    static constexpr int OUTPUT_PIPE_STAGES = 2;
    static constexpr int PRODUCER_BARRIER_ARRIVALS = 1;
    using layout = rotary_layout;

    __device__ static inline void common_setup(common_setup_args<layout> args) {
        int chunk = args.task_iter * gridDim.x + blockIdx.x;
        if (chunk >= args.globals.X.rows() / 64) {
            args.num_iters = -1;
            return;
        }
        args.common.chunk = chunk;
        args.num_iters = args.globals.X.batch() * args.globals.X.depth();
    }

    struct producer {
        __device__ static inline void setup(producer_setup_args<layout> args) {}
        __device__ static inline void load(producer_load_args<layout> args) {
            if (warpgroup::laneid() == 0) {
                const int heads = args.globals.X.depth();
                const int b = args.iter / heads, h = args.iter % heads;
                tma::expect(args.inputs_arrived, args.input);
                for (int i = 0; i < 4; i++)
                    tma::load_async(args.input.x[i], args.globals.X, {b, h, 4 * args.common.chunk + i, 0}, args.inputs_arrived);
            }
        }
        __device__ static inline void store(producer_store_args<layout> args) {
            if (warpgroup::warpid() == 1 && laneid() == 0) {
                const int heads = args.globals.X.depth();
                const int b = args.iter / heads, h = args.iter % heads;
                for (int i = 0; i < 4; i++)
                    tma::store_async(args.globals.O, args.output.o[i], {b, h, 4 * args.common.chunk + i, 0});
                tma::store_async_read_wait();
                arrive(args.outputs_finished);
                if (args.iter == args.num_iters - 1) tma::store_async_wait();   // nothing in flight at task end
            }
        }
    };

    struct consumer {
        __device__ static inline void setup(consumer_setup_args<layout> args) {
            const int row = 4 * args.common.chunk + warpid();   // in 16-position units
            warp::load(args.state.cos, args.globals.cos, {0, 0, row, 0});
            warp::load(args.state.sin, args.globals.sin, {0, 0, row, 0});
        }
        __device__ static inline void compute(consumer_compute_args<layout> args) {
            const int w = warpid();
            rt_fl<16, 64> x;
            warp::load(x, args.input.x[w]);
            __syncwarp();
            if (laneid() == 0) arrive(args.inputs_finished);   // input slot may be refilled
            // rotate-half: base tiles j (d in [16j, 16j+16)) and j + 2 (d + 32) share the
            // register layout of cos/sin base tile j, so the update is element-wise
            #pragma unroll
            for (int j = 0; j < 2; j++) {
                #pragma unroll
                for (int k = 0; k < 4; k++) {
                    const float2 lo = x.tiles[0][j].data[k], hi = x.tiles[0][j + 2].data[k];
                    const float2 c = args.state.cos.tiles[0][j].data[k], s = args.state.sin.tiles[0][j].data[k];
                    x.tiles[0][j].data[k]     = make_float2(lo.x * c.x - hi.x * s.x, lo.y * c.y - hi.y * s.y);
                    x.tiles[0][j + 2].data[k] = make_float2(hi.x * c.x + lo.x * s.x, hi.y * c.y + lo.y * s.y);
                }
            }
            warp::store(args.output.o[w], x);
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // generic writes -> TMA store
            __syncwarp();
            if (laneid() == 0) arrive(args.outputs_arrived);
        }
        __device__ static inline void finish(consumer_finish_args<layout> args) {
            if (laneid() == 0) arrive(args.finish_finished);   // nothing staged in the finish block
        }
    };
};

// ---------------------------------------------------------------------------------------
// host harness: deterministic inputs, CPU reference, max_abs_err, PASS/FAIL
// ---------------------------------------------------------------------------------------
#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int B = 4, H = 16, N = 4096, D = 64;
    const size_t elems = (size_t)B * H * N * D;
    std::vector<bf16> hX(elems), hO(elems);
    std::vector<float> hcos((size_t)N * 32), hsin((size_t)N * 32);
    uint32_t seed = 99u;
    for (auto &x : hX) x = __float2bfloat16(2.f * lcg_uniform(seed));
    for (int n = 0; n < N; n++)
        for (int d = 0; d < 32; d++) {
            float angle = n * powf(10000.f, -2.f * d / D);
            hcos[(size_t)n * 32 + d] = cosf(angle);
            hsin[(size_t)n * 32 + d] = sinf(angle);
        }

    bf16 *dX, *dO; float *dcos, *dsin;
    CUDA_CHECK(cudaMalloc(&dX, elems * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dO, elems * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dcos, hcos.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dsin, hsin.size() * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), elems * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dcos, hcos.data(), hcos.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dsin, hsin.data(), hsin.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dO, 0, elems * sizeof(bf16)));

    using L = rotary_layout;
    L::globals g{L::x_gl{dX, B, H, N, nullptr}, L::x_gl{dO, B, H, N, nullptr},
                 L::rope_gl{dcos, nullptr, nullptr, N, nullptr}, L::rope_gl{dsin, nullptr, nullptr, N, nullptr}};
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int chunks = N / 64;
    int blocks = sms < chunks / 2 ? sms : chunks / 2;   // at least two tasks per block
    size_t smem = MAX_SHARED_MEMORY - 1024;
    auto kern = lcsf::kernel<rotary_template>;
    CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kern<<<blocks, prototype::detail::NUM_THREADS_v<rotary_template>, smem>>>(g);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(hO.data(), dO, elems * sizeof(bf16), cudaMemcpyDeviceToHost));

    double max_err = 0.0;
    for (size_t row = 0; row < (size_t)B * H * N; row++) {
        const int n = row % N;
        const bf16 *x = &hX[row * D];
        for (int d = 0; d < 32; d++) {
            float lo = __bfloat162float(x[d]), hi = __bfloat162float(x[d + 32]);
            float c = hcos[(size_t)n * 32 + d], s = hsin[(size_t)n * 32 + d];
            float ref[2] = {lo * c - hi * s, hi * c + lo * s};
            float got[2] = {__bfloat162float(hO[row * D + d]), __bfloat162float(hO[row * D + d + 32])};
            for (int q = 0; q < 2; q++) {
                double e = std::isfinite(got[q]) ? fabs(got[q] - ref[q]) : 1e30;
                if (e > max_err) max_err = e;
            }
        }
    }
    bool ok = max_err <= 0.02;
    printf("rotary_lcsf B=%d H=%d N=%d D=%d blocks=%d max_abs_err=%.5f\n", B, H, N, D, blocks, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dO); cudaFree(dcos); cudaFree(dsin);
    return ok ? 0 : 1;
}
