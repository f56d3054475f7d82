// pipeline_state_class.cu -- a hand-written CUTLASS-style `PipelineTmaAsync` class with its own
// state struct: `PipelineState { index, phase; advance(); }` walks the ring (the phase flips when
// the index wraps), and the class wraps the mbarrier protocol in methods -- `init` (full barriers
// count 1, empty barriers count = consumer warps, `fence.mbarrier_init`), `producer_acquire`
// (wait on the empty barrier with the flipped phase, then `mbarrier.arrive.expect_tx` on the full
// one), `consumer_wait` (try_wait.parity on the full barrier), `consumer_release` (arrive on the
// empty barrier). The producer warp's lane 0 fills each stage with a 1-D bulk copy
// (`cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`) completing on the full
// barrier; four consumer warps read the stage and release it (plain CUDA + inline PTX, no TK).
//
// Each of BLOCKS = 132 blocks maps NCH = 24 consecutive chunks of 2048 uint32 through a 3-stage
// ring: y = x * x + 7 (wrapping). 160 threads: warp 0 produces, warps 1-4 consume (16 elements a
// thread and chunk; lane 0 of each consumer warp releases after `__syncwarp()`). The host checks
// every element exactly, over 3 launches.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int CHUNK = 2048, NCH = 24, STAGES = 3, CWARPS = 4, THREADS = 32 * (CWARPS + 1), BLOCKS = 132;
constexpr int PER = CHUNK / (32 * CWARPS);
constexpr uint32_t CHUNK_BYTES = CHUNK * sizeof(uint32_t);
constexpr int N = BLOCKS * NCH * CHUNK;

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

struct PipelineState {
    int index = 0;
    uint32_t phase = 0;
    __device__ void advance() {
        if (++index == STAGES) {
            index = 0;
            phase ^= 1u;
        }
    }
};

class PipelineTmaAsync {
    uint64_t *full_, *empty_;

    __device__ static void wait(uint64_t *bar, uint32_t parity) {
        asm volatile(
            "{\n .reg .pred p;\n"
            "WAIT_%=:\n"
            " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
            " @!p bra WAIT_%=;\n}\n" ::"r"(smem_addr(bar)),
            "r"(parity)
            : "memory");
    }

  public:
    __device__ PipelineTmaAsync(uint64_t *full, uint64_t *empty) : full_(full), empty_(empty) {}

    // one thread; the caller makes the inits visible with a block barrier
    __device__ void init(uint32_t consumer_arrivals) {
        for (int s = 0; s < STAGES; s++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(&full_[s])), "r"(1u) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(&empty_[s])), "r"(consumer_arrivals)
                         : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __device__ void producer_acquire(const PipelineState &st, uint32_t bytes) {
        wait(&empty_[st.index], st.phase ^ 1u);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(&full_[st.index])),
                     "r"(bytes)
                     : "memory");
    }
    __device__ uint64_t *producer_barrier(const PipelineState &st) { return &full_[st.index]; }
    __device__ void consumer_wait(const PipelineState &st) { wait(&full_[st.index], st.phase); }
    __device__ void consumer_release(const PipelineState &st) {
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(&empty_[st.index])) : "memory");
    }
};

__global__ __launch_bounds__(THREADS)
void square_ring(const uint32_t *x, uint32_t *y) {
    __shared__ alignas(128) uint32_t buf[STAGES][CHUNK];
    __shared__ alignas(8) uint64_t full[STAGES];
    __shared__ alignas(8) uint64_t empty[STAGES];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    PipelineTmaAsync pipe(full, empty);
    if (threadIdx.x == 0) pipe.init(CWARPS);
    __syncthreads();
    const uint32_t *src = x + (size_t)blockIdx.x * NCH * CHUNK;
    uint32_t *dst = y + (size_t)blockIdx.x * NCH * CHUNK;
    PipelineState st;
    if (warp == 0) {
        if (lane == 0) {
            for (int c = 0; c < NCH; c++) {
                pipe.producer_acquire(st, CHUNK_BYTES);
                asm volatile(
                    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                        smem_addr(&buf[st.index][0])),
                    "l"(src + (size_t)c * CHUNK), "r"(CHUNK_BYTES), "r"(smem_addr(pipe.producer_barrier(st)))
                    : "memory");
                st.advance();
            }
        }
    } else {
        const int ct = (warp - 1) * 32 + lane;
        for (int c = 0; c < NCH; c++) {
            pipe.consumer_wait(st);
            uint32_t v[PER];
            for (int e = 0; e < PER; e++) v[e] = buf[st.index][ct + e * 32 * CWARPS];
            __syncwarp();
            if (lane == 0) pipe.consumer_release(st);
            for (int e = 0; e < PER; e++) dst[(size_t)c * CHUNK + ct + e * 32 * CWARPS] = v[e] * v[e] + 7u;
            st.advance();
        }
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    std::vector<uint32_t> hx(N), hy(N);
    uint32_t seed = 424242u;
    for (auto &v : hx) { seed = seed * 1664525u + 1013904223u; v = seed; }
    uint32_t *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, (size_t)N * 4));
    CUDA_CHECK(cudaMalloc(&dy, (size_t)N * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), (size_t)N * 4, cudaMemcpyHostToDevice));
    long bad = 0;
    long first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0, (size_t)N * 4));
        square_ring<<<BLOCKS, THREADS>>>(dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, (size_t)N * 4, cudaMemcpyDeviceToHost));
        for (long i = 0; i < N; i++)
            if (hy[i] != hx[i] * hx[i] + 7u) { bad++; if (first < 0) first = i; }
    }
    printf("pipeline_state_class blocks=%d chunks=%d wrong=%ld first_wrong=%ld\n", BLOCKS, NCH, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy);
    return bad == 0 ? 0 : 1;
}
