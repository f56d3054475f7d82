// interpreter_ops.cu -- an MK-style persistent interpreter on Hopper whose instructions are *ops*
// written in Megakernels' op style: structs with `controller`, `loader`, `launcher`, `consumer`
// and `storer` members, dispatched on the instruction's opcode by a dispatcher that recurses
// over the kernel's pack of ops. Three ops on 64 x 64 bf16 tiles of one global heap:
//   OpAdd (1)     out = a + b
//   OpMatmul (2)  out = a * b            (64 x 64 x 64 wgmma)
//   OpScale (3)   out = g.scale * a
// plus NoOp (0), which only passes the pages on. Instruction i runs on block i % grid in
// iteration i / grid; cross-block dependencies go through one global int counter per instruction.
//
// Roles (256 threads): warps 0..3 consumer (one warpgroup); warp 4 loader, warp 5 storer,
//   warp 6 launcher (idle on Hopper: every op's launcher is empty), warp 7 controller.
// The interpreter's state (mk_state, passed to every op role):
//   instruction slots   slots[2] (words, pid_order, 8 dynamic semaphores); instruction `iter`
//                       uses slot iter % 2. instruction_arrived[s] init 1: the controller's lane
//                       0 publishes the slot; workers wait parity (iter / 2) & 1.
//                       instruction_finished[s] init 7: lane 0 of every worker warp, after the
//                       op's role returned (next_instruction); the controller recycles the slot
//                       from iter 2 on, waiting parity ((iter - 2) / 2) & 1, then invalidates the
//                       dynamic semaphores the slot's op initialised.
//   pages               3 pages of 8 KB; page tokens page_finished[p] init 1 and PRE-ARRIVED once:
//                       every instruction waits every page once (parity iter & 1) and releases it
//                       once. An op addresses logical pages (lids); the controller renames them:
//                       new pid_order[q] = old pid_order[old op's release_lid(q)].
//   dynamic semaphores  each op's controller::init_semaphores initialises its own (returns the
//                       number): inputs_arrived (1 arrival + the loaded bytes), outputs_arrived
//                       (4: lane 0 of each consumer warp). Fresh per instruction: phase 0.
//   global counters     the storer raises counters[signal] with red.release.gpu after
//                       store_async_wait() + fence.proxy.async.global; the loader spins on its
//                       dependencies with ld.acquire.gpu before its TMA loads.
// Exit: every role runs the same num_iters instructions (NoOp pads the table); a final
//   __syncthreads.
// Run on an H200 (CUDA 13.0, driver 580): 288 instructions on 132 blocks (3 iterations),
//   max_abs_err=0 against the CPU reference, PASS (about 0.4 s per run, process start included).
#include "kittens.cuh"
#include <cstdio>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int NUM_CONSUMER_WARPS = 4;
constexpr int NUM_WARPS = NUM_CONSUMER_WARPS + 4;
constexpr int NUM_THREADS = NUM_WARPS * 32;
constexpr int STAGES = 2, NUM_PAGES = 3, WORDS = 16, DYN_SEMS = 8;
constexpr int W_OP = 0, W_A = 1, W_B = 2, W_OUT = 3, W_DEP0 = 4, W_DEP1 = 5, W_SIGNAL = 6;

using page_t = st_bf<64, 64>;
using heap_gl = gl<bf16, 1, 1, -1, 64, page_t>;

struct mk_globals {
    heap_gl heap;
    const int *instructions;     // [num_iters][grid][WORDS]
    int num_iters;
    int *counters;               // one per instruction, zeroed by the host
    float scale;
};

struct slot_t {
    int instructions[WORDS];
    int pid_order[NUM_PAGES];
    semaphore semaphores[DYN_SEMS];
};

struct mk_state {
    slot_t (&slots)[STAGES];
    semaphore (&instruction_arrived)[STAGES];
    semaphore (&instruction_finished)[STAGES];
    page_t (&pages)[NUM_PAGES];
    semaphore (&page_finished)[NUM_PAGES];
    int iter, ring;

    __device__ inline int *instruction() { return slots[ring].instructions; }
    __device__ inline semaphore *semaphores() { return slots[ring].semaphores; }
    __device__ inline int pid(int lid) { return slots[ring].pid_order[lid]; }
    __device__ inline void await_instruction() { wait(instruction_arrived[ring], (iter / STAGES) & 1); }
    __device__ inline void next_instruction() {
        __syncwarp();
        if (laneid() == 0) arrive(instruction_finished[ring]);
        iter++;
        ring = (ring + 1) % STAGES;
    }
    __device__ inline void wait_page(int p) { wait(page_finished[p], iter & 1); }
    __device__ inline void release_page(int p) { arrive(page_finished[p]); }
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

// ------------------------------------------------------------------ the op dispatch
template <template <typename> typename D, typename... ops>
struct dispatch_op {
    template <typename R, typename... A>
    __device__ static inline R run(int opcode, A &...a) {
        asm volatile("trap;");           // an opcode no op has
        return R();
    }
};
template <template <typename> typename D, typename op, typename... ops>
struct dispatch_op<D, op, ops...> {
    template <typename R, typename... A>
    __device__ static inline R run(int opcode, A &...a) {
        if (opcode == op::opcode) return D<op>::run(a...);
        return dispatch_op<D, ops...>::template run<R, A...>(opcode, a...);
    }
};

struct release_dispatch { template <typename op> struct dispatcher {
    __device__ static inline int run(int &q) { return op::controller::release_lid(q); } }; };
struct semaphore_dispatch { template <typename op> struct dispatcher {
    __device__ static inline int run(const mk_globals &g, mk_state &s) { return op::controller::init_semaphores(g, s); } }; };
struct loader_dispatch { template <typename op> struct dispatcher {
    __device__ static inline void run(const mk_globals &g, mk_state &s) { op::loader::run(g, s); } }; };
struct launcher_dispatch { template <typename op> struct dispatcher {
    __device__ static inline void run(const mk_globals &g, mk_state &s) { op::launcher::run(g, s); } }; };
struct consumer_dispatch { template <typename op> struct dispatcher {
    __device__ static inline void run(const mk_globals &g, mk_state &s) { op::consumer::run(g, s); } }; };
struct storer_dispatch { template <typename op> struct dispatcher {
    __device__ static inline void run(const mk_globals &g, mk_state &s) { op::storer::run(g, s); } }; };

// ------------------------------------------------------------------ the ops
struct NoOp {
    static constexpr int opcode = 0;
    struct controller {
        __device__ static inline int release_lid(int &q) { return q; }
        __device__ static inline int init_semaphores(const mk_globals &g, mk_state &s) { return 0; }
    };
    struct loader {
        __device__ static inline void run(const mk_globals &g, mk_state &s) {
            if (laneid() < NUM_PAGES) {            // pass every page on
                int p = s.pid(laneid());
                s.wait_page(p);
                s.release_page(p);
            }
        }
    };
    struct launcher { __device__ static inline void run(const mk_globals &g, mk_state &s) {} };
    struct consumer { __device__ static inline void run(const mk_globals &g, mk_state &s) {} };
    struct storer { __device__ static inline void run(const mk_globals &g, mk_state &s) {} };
};

// the shared shape of the three tile ops: lid 0 holds a (and the result), lid 1 holds b when
// the op has one; the pages the op does not use are released by the loader's spare lanes
template <int NUM_INPUTS>
struct tile_op_base {
    __device__ static inline semaphore &inputs_arrived(mk_state &s) { return s.semaphores()[0]; }
    __device__ static inline semaphore &outputs_arrived(mk_state &s) { return s.semaphores()[1]; }
    __device__ static inline int init_semaphores(const mk_globals &g, mk_state &s) {
        init_semaphore(inputs_arrived(s), 1, 0);
        init_semaphore(outputs_arrived(s), NUM_CONSUMER_WARPS, 0);
        return 2;
    }
    __device__ static inline void load(const mk_globals &g, mk_state &s) {
        const int *w = s.instruction();
        if (laneid() == 0) {
            s.wait_page(s.pid(0));
            if (NUM_INPUTS > 1) s.wait_page(s.pid(1));
            if (w[W_DEP0] >= 0) counter_wait(&g.counters[w[W_DEP0]], 1);
            if (w[W_DEP1] >= 0) counter_wait(&g.counters[w[W_DEP1]], 1);
            asm volatile("fence.proxy.async.global;" ::: "memory");   // acquired data -> async proxy
            tma::expect_bytes(inputs_arrived(s), NUM_INPUTS * size_bytes<page_t>);
            tma::load_async(s.pages[s.pid(0)], g.heap, {0, 0, w[W_A], 0}, inputs_arrived(s));
            if (NUM_INPUTS > 1) tma::load_async(s.pages[s.pid(1)], g.heap, {0, 0, w[W_B], 0}, inputs_arrived(s));
        } else if (laneid() >= NUM_INPUTS && laneid() < NUM_PAGES) {
            int p = s.pid(laneid());               // an unused page: passed on at once
            s.wait_page(p);
            s.release_page(p);
        }
    }
    __device__ static inline void store(const mk_globals &g, mk_state &s) {
        const int *w = s.instruction();
        if (laneid() == 0) {
            wait(outputs_arrived(s), 0);
            tma::store_async(g.heap, s.pages[s.pid(0)], {0, 0, w[W_OUT], 0});
            tma::store_async_read_wait();
            s.release_page(s.pid(0));              // the store has read the result page
            tma::store_async_wait();               // the tile is in global memory
            asm volatile("fence.proxy.async.global;" ::: "memory");
            counter_signal(&g.counters[w[W_SIGNAL]]);
        }
    }
};

struct OpAdd : tile_op_base<2> {
    static constexpr int opcode = 1;
    struct controller {
        __device__ static inline int release_lid(int &q) { return (NUM_PAGES - 1) - q; }   // lid 2, 1, 0
        __device__ static inline int init_semaphores(const mk_globals &g, mk_state &s) {
            return tile_op_base<2>::init_semaphores(g, s);
        }
    };
    struct loader { __device__ static inline void run(const mk_globals &g, mk_state &s) { tile_op_base<2>::load(g, s); } };
    struct launcher { __device__ static inline void run(const mk_globals &g, mk_state &s) {} };
    struct consumer {
        __device__ static inline void run(const mk_globals &g, mk_state &s) {
            page_t &pa = s.pages[s.pid(0)];
            page_t &pb = s.pages[s.pid(1)];
            wait(inputs_arrived(s), 0);
            rt_fl<16, 64> a, b;
            warpgroup::load(a, pa);
            warpgroup::load(b, pb);
            warpgroup::sync(1);                    // every warp has read b
            if (warpgroup::laneid() == 0) s.release_page(s.pid(1));
            warp::add(a, a, b);
            warpgroup::store(pa, a);
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // before the TMA store reads pa
            __syncwarp();
            if (laneid() == 0) arrive(outputs_arrived(s));
        }
    };
    struct storer { __device__ static inline void run(const mk_globals &g, mk_state &s) { tile_op_base<2>::store(g, s); } };
};

struct OpMatmul : tile_op_base<2> {
    static constexpr int opcode = 2;
    struct controller {
        __device__ static inline int release_lid(int &q) { return (NUM_PAGES - 1) - q; }
        __device__ static inline int init_semaphores(const mk_globals &g, mk_state &s) {
            return tile_op_base<2>::init_semaphores(g, s);
        }
    };
    struct loader { __device__ static inline void run(const mk_globals &g, mk_state &s) { tile_op_base<2>::load(g, s); } };
    struct launcher { __device__ static inline void run(const mk_globals &g, mk_state &s) {} };
    struct consumer {
        __device__ static inline void run(const mk_globals &g, mk_state &s) {
            page_t &pa = s.pages[s.pid(0)];
            page_t &pb = s.pages[s.pid(1)];
            wait(inputs_arrived(s), 0);
            rt_fl<16, 64> acc;
            warpgroup::mm_AB(acc, pa, pb);
            warpgroup::mma_async_wait();
            warpgroup::sync(1);                    // every warp's wgmma has finished reading pa, pb
            if (warpgroup::laneid() == 0) s.release_page(s.pid(1));
            warpgroup::store(pa, acc);
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncwarp();
            if (laneid() == 0) arrive(outputs_arrived(s));
        }
    };
    struct storer { __device__ static inline void run(const mk_globals &g, mk_state &s) { tile_op_base<2>::store(g, s); } };
};

struct OpScale : tile_op_base<1> {
    static constexpr int opcode = 3;
    struct controller {
        __device__ static inline int release_lid(int &q) { return (NUM_PAGES - 1) - q; }
        __device__ static inline int init_semaphores(const mk_globals &g, mk_state &s) {
            return tile_op_base<1>::init_semaphores(g, s);
        }
    };
    struct loader { __device__ static inline void run(const mk_globals &g, mk_state &s) { tile_op_base<1>::load(g, s); } };
    struct launcher { __device__ static inline void run(const mk_globals &g, mk_state &s) {} };
    struct consumer {
        __device__ static inline void run(const mk_globals &g, mk_state &s) {
            page_t &pa = s.pages[s.pid(0)];
            wait(inputs_arrived(s), 0);
            rt_fl<16, 64> a;
            warpgroup::load(a, pa);
            warp::mul(a, a, g.scale);
            warpgroup::store(pa, a);
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncwarp();
            if (laneid() == 0) arrive(outputs_arrived(s));
        }
    };
    struct storer { __device__ static inline void run(const mk_globals &g, mk_state &s) { tile_op_base<1>::store(g, s); } };
};

// ------------------------------------------------------------------ the interpreter
template <typename D, typename... ops>
__device__ static inline void worker_loop(const mk_globals &g, mk_state &s) {
    for (s.iter = 0, s.ring = 0; s.iter < g.num_iters; s.next_instruction()) {
        s.await_instruction();
        dispatch_op<D::template dispatcher, ops...>::template run<void>(s.instruction()[0], g, s);
    }
}

template <typename... ops>
__device__ static inline void controller_loop(const mk_globals &g, mk_state &s) {
    int num_sems[STAGES] = {0, 0};
    for (s.iter = 0, s.ring = 0; s.iter < g.num_iters; s.iter++, s.ring = (s.ring + 1) % STAGES) {
        if (s.iter >= STAGES) {
            // recycle the slot: every worker has finished the instruction that used it last
            wait(s.instruction_finished[s.ring], ((s.iter - STAGES) / STAGES) & 1);
            if (laneid() < num_sems[s.ring]) invalidate_semaphore(s.semaphores()[laneid()]);
            __syncwarp();
        }
        if (laneid() < WORDS)
            s.instruction()[laneid()] = g.instructions[(s.iter * gridDim.x + blockIdx.x) * WORDS + laneid()];
        __syncwarp();
        if (laneid() < NUM_PAGES) {
            // page renaming: new lid q takes the page the previous instruction releases q-th
            const int prev = (s.ring + STAGES - 1) % STAGES;
            int q = laneid();
            int lid = s.iter == 0 ? q : dispatch_op<release_dispatch::dispatcher, ops...>::template run<int>(
                                            s.slots[prev].instructions[0], q);
            s.slots[s.ring].pid_order[q] = s.iter == 0 ? q : s.slots[prev].pid_order[lid];
        }
        const int opcode = s.instruction()[0];
        int n = 0;
        if (laneid() == 0) n = dispatch_op<semaphore_dispatch::dispatcher, ops...>::template run<int>(opcode, g, s);
        num_sems[s.ring] = __shfl_sync(0xffffffff, n, 0);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // the inits, visible to TMA
        __syncwarp();
        if (laneid() == 0) arrive(s.instruction_arrived[s.ring]);      // publish the slot
    }
}

template <typename... ops>
__global__ __launch_bounds__(NUM_THREADS, 1)
void mk_kernel(const __grid_constant__ mk_globals g) {
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    page_t (&pages)[NUM_PAGES] = al.allocate<page_t, NUM_PAGES>();
    __shared__ slot_t slots[STAGES];
    __shared__ semaphore instruction_arrived[STAGES], instruction_finished[STAGES], page_finished[NUM_PAGES];

    if (threadIdx.x == 0) {
        for (int i = 0; i < STAGES; i++) {
            init_semaphore(instruction_arrived[i], 1, 0);
            init_semaphore(instruction_finished[i], NUM_WARPS - 1, 0);
        }
        for (int p = 0; p < NUM_PAGES; p++) {
            init_semaphore(page_finished[p], 1, 0);
            arrive(page_finished[p]);   // pre-arrive: phase 0 completes, every page starts free
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();

    mk_state s{slots, instruction_arrived, instruction_finished, pages, page_finished, 0, 0};
    if (warpid() < NUM_CONSUMER_WARPS) {
        worker_loop<consumer_dispatch, ops...>(g, s);
    } else {
        switch (warpid() - NUM_CONSUMER_WARPS) {
        case 0: worker_loop<loader_dispatch, ops...>(g, s); break;
        case 1: worker_loop<storer_dispatch, ops...>(g, s); break;
        case 2: worker_loop<launcher_dispatch, ops...>(g, s); break;
        default: controller_loop<ops...>(g, s); break;
        }
    }
    __syncthreads();
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
    const int n = 96;                  // tiles per layer
    const int T = 64 * 64;
    const float scale = 0.5f;
    // heap: X[0,n) W[n,2n) H[2n,3n) O[3n,4n) R[4n,5n)
    std::vector<float> heap((size_t)5 * n * T, 0.f);
    uint32_t seed = 777u;
    for (size_t i = 0; i < (size_t)2 * n * T; i++) heap[i] = round_bf16(lcg_uniform(seed));

    // layer 1 H_i = X_i + W_i; layer 2 O_i = H_i * H_(i+1)%n; layer 3 R_i = scale * O_i
    const int num_inst = 3 * n;
    std::vector<int> prog((size_t)num_inst * WORDS, 0);
    auto emit = [&](int i, int op, int a, int b, int out, int d0, int d1) {
        int *w = &prog[(size_t)i * WORDS];
        w[W_OP] = op; w[W_A] = a; w[W_B] = b; w[W_OUT] = out;
        w[W_DEP0] = d0; w[W_DEP1] = d1; w[W_SIGNAL] = i;
    };
    for (int i = 0; i < n; i++) emit(i, 1, i, n + i, 2 * n + i, -1, -1);
    for (int i = 0; i < n; i++) emit(n + i, 2, 2 * n + i, 2 * n + (i + 1) % n, 3 * n + i, i, (i + 1) % n);
    for (int i = 0; i < n; i++) emit(2 * n + i, 3, 3 * n + i, 0, 4 * n + i, n + i, -1);

    std::vector<float> ref = heap;
    auto tile = [&](int t) { return &ref[(size_t)t * T]; };
    for (int i = 0; i < n; i++) for (int e = 0; e < T; e++) tile(2 * n + i)[e] = round_bf16(tile(i)[e] + tile(n + i)[e]);
    for (int i = 0; i < n; i++) {
        const float *A = tile(2 * n + i), *B = tile(2 * n + (i + 1) % n);
        for (int r = 0; r < 64; r++) for (int c = 0; c < 64; c++) {
            float acc = 0.f;
            for (int k = 0; k < 64; k++) acc += A[r * 64 + k] * B[k * 64 + c];
            tile(3 * n + i)[r * 64 + c] = round_bf16(acc);
        }
    }
    for (int i = 0; i < n; i++) for (int e = 0; e < T; e++) tile(4 * n + i)[e] = round_bf16(scale * tile(3 * n + i)[e]);

    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int grid = sms < num_inst ? sms : num_inst;
    const int num_iters = (num_inst + grid - 1) / grid;
    // instruction i -> block i % grid, iteration i / grid; the rest of the table is NoOp (zeros)
    std::vector<int> table((size_t)num_iters * grid * WORDS, 0);
    for (int i = 0; i < num_inst; i++)
        for (int w = 0; w < WORDS; w++) table[((size_t)(i / grid) * grid + i % grid) * WORDS + w] = prog[(size_t)i * WORDS + w];

    std::vector<bf16> hheap(heap.size());
    for (size_t i = 0; i < heap.size(); i++) hheap[i] = __float2bfloat16(heap[i]);
    bf16 *dheap; int *dtable, *dctr;
    CUDA_CHECK(cudaMalloc(&dheap, hheap.size() * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dtable, table.size() * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dctr, num_inst * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(dheap, hheap.data(), hheap.size() * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dtable, table.data(), table.size() * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dctr, 0, num_inst * sizeof(int)));

    mk_globals g{heap_gl{dheap, nullptr, nullptr, 5 * n * 64, nullptr}, dtable, num_iters, dctr, scale};
    size_t smem = NUM_PAGES * sizeof(page_t) + 1024;
    auto kernel = mk_kernel<NoOp, OpAdd, OpMatmul, OpScale>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    mk_kernel<NoOp, OpAdd, OpMatmul, OpScale><<<grid, NUM_THREADS, smem>>>(g);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(hheap.data(), dheap, hheap.size() * sizeof(bf16), cudaMemcpyDeviceToHost));

    double max_err = 0.0, max_ref = 0.0;
    for (size_t i = (size_t)2 * n * T; i < heap.size(); i++) {
        double v = __bfloat162float(hheap[i]);
        double e = std::isfinite(v) ? fabs(v - ref[i]) : 1e30;
        if (e > max_err) max_err = e;
        max_ref = fmax(max_ref, fabs(ref[i]));
    }
    bool ok = max_err <= 0.02 + 0.01 * max_ref;
    printf("interpreter_ops instructions=%d blocks=%d iters=%d max_abs_err=%.5f (max |ref| %.3f)\n",
           num_inst, grid, num_iters, max_err, max_ref);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dheap); cudaFree(dtable); cudaFree(dctr);
    return ok ? 0 : 1;
}
