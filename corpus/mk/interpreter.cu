// interpreter.cu -- a MegaKittens-style persistent interpreter on Hopper: each block walks
// its share of a global instruction list (instruction i runs on block i % gridDim.x in
// iteration i / gridDim.x) and executes small tile ops on 64 x 64 bf16 tiles of one global
// "heap":  OP_ADD  out = a + b,  OP_MATMUL  out = a * b (64 x 64 x 64, wgmma).
// Cross-block dependencies go through global int counters, one per instruction.
//
// Roles (224 threads = 7 warps, one block per SM, grid <= #SMs so every block is resident):
//   warps 0..3  consumer (warpgroup 0): registers <- pages, add or wgmma, result -> page a
//   warp 4      controller: fetches instructions into the two instruction slots
//   warp 5      loader: page tokens, dependency spin, TMA loads (lane 0 issues)
//   warp 6      storer: TMA store, page release, global counter (lane 0 issues)
// Instruction slots: inst[2] (words + per-instruction semaphores); instruction `iter` uses
//   slot iter % 2; every worker warp waits instruction_arrived[slot] with parity
//   (iter / 2) % 2 and leaves through instruction_finished[slot].
// Barriers (static __shared__):
//   instruction_arrived[s]   init 1: controller lane 0 arrives after writing the slot.
//   instruction_finished[s]  init 6: lane 0 of each worker warp (4 consumer, loader, storer);
//                            the controller waits it with parity ((iter - 2) / 2) % 2 from
//                            iter 2 on, then invalidates and re-inits the slot semaphores.
//   page_finished[p]         init 1, PRE-ARRIVED ONCE at start (pages start free). Page
//                            tokens: logical page lp = 2 * iter + j (j = 0 a, 1 b) lives in
//                            pid = lp % NUM_PAGES; its use u = lp / NUM_PAGES waits parity
//                            u % 2 (the loader), and the storer arrives once after the
//                            store has read the page.
//   inst[s].inputs_arrived   per instruction, init 1 + tx: the loader's expect_bytes
//                            (2 tiles = 16384 B); waited once, parity 0 (fresh barrier).
//   inst[s].outputs_arrived  per instruction, init 4: lane 0 of each consumer warp after
//                            its rows of the result are in page a (+ fence.proxy.async).
// Global counters: the storer raises counter[i] with red.release.gpu after
//   store_async_wait() + fence.proxy.async.global; the loader spins with ld.acquire.gpu on
//   the counters of the instructions it depends on before its TMA loads.
// Exit: the controller publishes an OP_STOP instruction before it leaves; workers break
//   on it. No role returns while another role can still wait on it.
#include "kittens.cuh"
#include <cstdio>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int OP_STOP = -1, OP_ADD = 1, OP_MATMUL = 2;
constexpr int WORDS = 16;          // ints per instruction
constexpr int NUM_PAGES = 3;
constexpr int CONSUMER_WARPS = 4;
constexpr int WORKER_WARPS = CONSUMER_WARPS + 2;   // + loader + storer
constexpr int NUM_THREADS = (CONSUMER_WARPS + 3) * 32;
// instruction words
constexpr int W_OP = 0, W_A = 1, W_B = 2, W_OUT = 3, W_DEP0 = 4, W_DEP1 = 5, W_SIGNAL = 6;

using page_t = st_bf<64, 64>;
using heap_gl = gl<bf16, 1, 1, -1, 64, page_t>;

struct interp_globals {
    heap_gl heap;
    const int *instructions;   // num_instructions x WORDS
    int num_instructions;
    int *counters;             // one per instruction, zeroed by the host
};

struct instruction_state {
    int words[WORDS];
    semaphore inputs_arrived, outputs_arrived;
};

__device__ static inline void counter_wait(const int *ctr, int target) {
    int v;
    while (true) {
        asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(ctr) : "memory");
        if (v >= target) break;
        __nanosleep(64);
    }
}
__device__ static inline void counter_signal(int *ctr) {
    asm volatile("red.release.gpu.global.add.s32 [%0], 1;" :: "l"(ctr) : "memory");
}
__device__ static inline int page_of(int iter, int j) { return (2 * iter + j) % NUM_PAGES; }
__device__ static inline int page_parity(int iter, int j) { return ((2 * iter + j) / NUM_PAGES) % 2; }

__global__ __launch_bounds__(NUM_THREADS, 1)
void interpreter_kernel(const __grid_constant__ interp_globals g) {
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    page_t (&pages)[NUM_PAGES] = al.allocate<page_t, NUM_PAGES>();

    __shared__ instruction_state inst[2];
    __shared__ semaphore instruction_arrived[2], instruction_finished[2], page_finished[NUM_PAGES];

    if (threadIdx.x == 0) {
        for (int s = 0; s < 2; s++) {
            init_semaphore(instruction_arrived[s], 1, 0);
            init_semaphore(instruction_finished[s], WORKER_WARPS, 0);
            init_semaphore(inst[s].inputs_arrived, 1, 0);
            init_semaphore(inst[s].outputs_arrived, CONSUMER_WARPS, 0);
        }
        for (int p = 0; p < NUM_PAGES; p++) {
            init_semaphore(page_finished[p], 1, 0);
            arrive(page_finished[p]);   // pre-arrive: phase 0 completes, every page starts free
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();

    const int warp = warpid();
    if (warp < CONSUMER_WARPS) {
        // ---------------- consumer (warpgroup 0) ----------------
        for (int iter = 0; ; iter++) {
            const int slot = iter % 2;
            wait(instruction_arrived[slot], (iter / 2) % 2);
            const int op = inst[slot].words[W_OP];
            if (op == OP_STOP) break;
            page_t &pa = pages[page_of(iter, 0)];
            page_t &pb = pages[page_of(iter, 1)];
            wait(inst[slot].inputs_arrived, 0);   // per-instruction semaphore: always phase 0
            if (op == OP_ADD) {
                rt_fl<16, 64> a, b;
                warpgroup::load(a, pa);   // warp w: rows 16w..16w+15, same rows it writes back
                warpgroup::load(b, pb);
                warp::add(a, a, b);
                warpgroup::store(pa, a);
            } else {
                rt_fl<16, 64> acc;
                warpgroup::mm_AB(acc, pa, pb);
                warpgroup::mma_async_wait();
                warpgroup::sync(1);       // every warp's wgmma has finished reading pa
                warpgroup::store(pa, acc);
            }
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // before the TMA store reads pa
            __syncwarp();
            if (laneid() == 0) arrive(inst[slot].outputs_arrived);
            if (laneid() == 0) arrive(instruction_finished[slot]);
        }
    } else if (warp == CONSUMER_WARPS) {
        // ---------------- controller ----------------
        for (int iter = 0; ; iter++) {
            const int slot = iter % 2;
            instruction_state &st = inst[slot];
            if (iter >= 2) {
                wait(instruction_finished[slot], ((iter - 2) / 2) % 2);
                if (laneid() == 0) {
                    invalidate_semaphore(st.inputs_arrived);
                    init_semaphore(st.inputs_arrived, 1, 0);
                } else if (laneid() == 1) {
                    invalidate_semaphore(st.outputs_arrived);
                    init_semaphore(st.outputs_arrived, CONSUMER_WARPS, 0);
                }
            }
            const int idx = iter * gridDim.x + blockIdx.x;
            const bool stop = idx >= g.num_instructions;
            if (laneid() < WORDS) {
                int w = stop ? (laneid() == W_OP ? OP_STOP : 0) : g.instructions[idx * WORDS + laneid()];
                st.words[laneid()] = w;
            }
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // re-inits visible to TMA
            // publish: the workers read the slot only after this arrive
            __syncwarp();
            if (laneid() == 0) arrive(instruction_arrived[slot]);
            if (stop) break;
        }
    } else if (warp == CONSUMER_WARPS + 1) {
        // ---------------- loader ----------------
        for (int iter = 0; ; iter++) {
            const int slot = iter % 2;
            wait(instruction_arrived[slot], (iter / 2) % 2);
            const instruction_state &st = inst[slot];
            if (st.words[W_OP] == OP_STOP) break;
            if (laneid() == 0) {
                wait(page_finished[page_of(iter, 0)], page_parity(iter, 0));
                wait(page_finished[page_of(iter, 1)], page_parity(iter, 1));
                if (st.words[W_DEP0] >= 0) counter_wait(&g.counters[st.words[W_DEP0]], 1);
                if (st.words[W_DEP1] >= 0) counter_wait(&g.counters[st.words[W_DEP1]], 1);
                asm volatile("fence.proxy.async.global;" ::: "memory");   // acquired data -> async proxy
                semaphore &in = inst[slot].inputs_arrived;
                tma::expect_bytes(in, 2 * size_bytes<page_t>);
                tma::load_async(pages[page_of(iter, 0)], g.heap, {0, 0, st.words[W_A], 0}, in);
                tma::load_async(pages[page_of(iter, 1)], g.heap, {0, 0, st.words[W_B], 0}, in);
            }
            __syncwarp();
            if (laneid() == 0) arrive(instruction_finished[slot]);
        }
    } else {
        // ---------------- storer ----------------
        for (int iter = 0; ; iter++) {
            const int slot = iter % 2;
            wait(instruction_arrived[slot], (iter / 2) % 2);
            const instruction_state &st = inst[slot];
            if (st.words[W_OP] == OP_STOP) break;
            if (laneid() == 0) {
                wait(inst[slot].outputs_arrived, 0);
                tma::store_async(g.heap, pages[page_of(iter, 0)], {0, 0, st.words[W_OUT], 0});
                tma::store_async_read_wait();
                arrive(page_finished[page_of(iter, 0)]);   // page tokens go back to the loader
                arrive(page_finished[page_of(iter, 1)]);
                tma::store_async_wait();                   // the tile is in global memory
                asm volatile("fence.proxy.async.global;" ::: "memory");
                counter_signal(&g.counters[st.words[W_SIGNAL]]);
            }
            __syncwarp();
            if (laneid() == 0) arrive(instruction_finished[slot]);
        }
    }
}

// ---------------------------------------------------------------------------------------
// host harness: a 3-layer program, CPU reference, max_abs_err, PASS/FAIL
// ---------------------------------------------------------------------------------------
#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}
static float round_bf16(float x) { return __bfloat162float(__float2bfloat16(x)); }

int main() {
    const int n = 128;                 // tiles per layer
    const int T = 64 * 64;             // elements per tile
    // heap: X[0,n) W[n,2n) H[2n,3n) O[3n,4n) R[4n,5n)
    std::vector<float> heap((size_t)5 * n * T, 0.f);
    uint32_t seed = 4242u;
    for (size_t i = 0; i < (size_t)2 * n * T; i++) heap[i] = round_bf16(lcg_uniform(seed));

    // program: layer 1 H_i = X_i + W_i; layer 2 O_i = H_i * H_(i+1)%n; layer 3 R_i = O_i + X_i
    std::vector<int> prog((size_t)3 * n * WORDS, 0);
    auto emit = [&](int i, int op, int a, int b, int out, int d0, int d1) {
        int *w = &prog[(size_t)i * WORDS];
        w[W_OP] = op; w[W_A] = a; w[W_B] = b; w[W_OUT] = out;
        w[W_DEP0] = d0; w[W_DEP1] = d1; w[W_SIGNAL] = i;
    };
    for (int i = 0; i < n; i++) emit(i, OP_ADD, i, n + i, 2 * n + i, -1, -1);
    for (int i = 0; i < n; i++) emit(n + i, OP_MATMUL, 2 * n + i, 2 * n + (i + 1) % n, 3 * n + i, i, (i + 1) % n);
    for (int i = 0; i < n; i++) emit(2 * n + i, OP_ADD, 3 * n + i, i, 4 * n + i, n + i, -1);
    const int num_inst = 3 * n;

    // CPU reference with bf16 rounding of every stored tile
    std::vector<float> ref = heap;
    auto tile = [&](int t) { return &ref[(size_t)t * T]; };
    for (int i = 0; i < n; i++) for (int e = 0; e < T; e++) tile(2 * n + i)[e] = round_bf16(tile(i)[e] + tile(n + i)[e]);
    for (int i = 0; i < n; i++) {
        const float *A = tile(2 * n + i), *B = tile(2 * n + (i + 1) % n);
        for (int r = 0; r < 64; r++) for (int c = 0; c < 64; c++) {
            float s = 0.f;
            for (int k = 0; k < 64; k++) s += A[r * 64 + k] * B[k * 64 + c];
            tile(3 * n + i)[r * 64 + c] = round_bf16(s);
        }
    }
    for (int i = 0; i < n; i++) for (int e = 0; e < T; e++) tile(4 * n + i)[e] = round_bf16(tile(3 * n + i)[e] + tile(i)[e]);

    std::vector<bf16> hheap(heap.size());
    for (size_t i = 0; i < heap.size(); i++) hheap[i] = __float2bfloat16(heap[i]);
    bf16 *dheap; int *dprog, *dctr;
    CUDA_CHECK(cudaMalloc(&dheap, hheap.size() * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dprog, prog.size() * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dctr, num_inst * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(dheap, hheap.data(), hheap.size() * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dprog, prog.data(), prog.size() * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dctr, 0, num_inst * sizeof(int)));

    interp_globals g{heap_gl{dheap, nullptr, nullptr, 5 * n * 64, nullptr}, dprog, num_inst, dctr};
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    int blocks = sms < num_inst ? sms : num_inst;
    size_t smem = NUM_PAGES * sizeof(page_t) + 1024;
    CUDA_CHECK(cudaFuncSetAttribute(interpreter_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    interpreter_kernel<<<blocks, NUM_THREADS, smem>>>(g);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(hheap.data(), dheap, hheap.size() * sizeof(bf16), cudaMemcpyDeviceToHost));

    double max_err = 0.0, max_ref = 0.0;
    for (size_t i = (size_t)2 * n * T; i < heap.size(); i++) {   // H, O and R tiles
        double v = __bfloat162float(hheap[i]);
        double e = std::isfinite(v) ? fabs(v - ref[i]) : 1e30;
        if (e > max_err) max_err = e;
        max_ref = fmax(max_ref, fabs(ref[i]));
    }
    bool ok = max_err <= 0.02 + 0.01 * max_ref;
    printf("interpreter instructions=%d blocks=%d max_abs_err=%.5f (max |ref| %.3f)\n", num_inst, blocks, max_err, max_ref);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dheap); cudaFree(dprog); cudaFree(dctr);
    return ok ? 0 : 1;
}
