// mbar_multi_producer_tx.cu -- a 3-stage ring whose FULL barrier is armed by SEVERAL producers,
// each for its own bytes: warps 0-3 are producers, each lane 0 waits the stage's `empty` barrier,
// then `mbarrier.arrive.expect_tx` on `full[s]` for ITS quarter (1024 bytes) and issues one 1-D
// `cp.async.bulk` of that quarter completing on `full[s]` (count 4: one arrival a producer warp).
// Warps 4-7 consume: every thread waits `full[s]` with `mbarrier.try_wait.parity` and a
// suspend-time hint, reads 8 words spread over all four quarters, `__syncwarp()`, and lane 0
// arrives on `empty[s]` (count 4: one a consumer warp). Stage and parity are carried across
// chunks (`if (++s == STAGES) { s = 0; ph ^= 1; }`); producers wait `empty` with parity ph ^ 1
// (a fresh barrier passes parity 1). Thread 0 initialises the six barriers,
// `fence.mbarrier_init.release.cluster` and `__syncthreads()` publish them.
//
// 132 blocks x 256 threads, 48 chunks of 4096 bytes a block; every consumer thread accumulates
// acc = acc * 31 + (w ^ k) over its words; the host checks every thread's value over 3 launches.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 256, STAGES = 3, NCHUNK = 48, NB = 132, WORDS = 1024, QWORDS = WORDS / 4;
constexpr unsigned QBYTES = QWORDS * 4;

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void wait_hint(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n .reg .pred p;\n WAIT_%=:\n"
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1, %2;\n"
        " @!p bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity), "r"(20000) : "memory");
}
__device__ __forceinline__ void arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void arrive_expect(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_load(unsigned dst, const void *src, unsigned bytes, unsigned bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

__global__ void __launch_bounds__(T) ring_consume(const unsigned *in, unsigned *out) {
    __shared__ alignas(128) unsigned stage[STAGES][WORDS];
    __shared__ alignas(8) uint64_t full[STAGES], empty[STAGES];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    if (tid == 0) {
        for (int s = 0; s < STAGES; s++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&full[s])), "r"(4) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&empty[s])), "r"(4) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const unsigned *src = in + (size_t)blockIdx.x * NCHUNK * WORDS;
    if (warp < 4) {
        if (lane == 0) {
            int s = 0;
            unsigned ph = 0;
            for (int k = 0; k < NCHUNK; k++) {
                wait_hint(smem_u32(&empty[s]), ph ^ 1u);
                arrive_expect(smem_u32(&full[s]), QBYTES);
                bulk_load(smem_u32(&stage[s][warp * QWORDS]), src + k * WORDS + warp * QWORDS, QBYTES, smem_u32(&full[s]));
                if (++s == STAGES) { s = 0; ph ^= 1u; }
            }
        }
    } else {
        const int c = tid - 128;
        unsigned acc = 0;
        int s = 0;
        unsigned ph = 0;
        for (int k = 0; k < NCHUNK; k++) {
            wait_hint(smem_u32(&full[s]), ph);
            for (int j = 0; j < 8; j++) acc = acc * 31u + (stage[s][c + 128 * j] ^ (unsigned)k);
            __syncwarp();
            if (lane == 0) arrive(smem_u32(&empty[s]));
            if (++s == STAGES) { s = 0; ph ^= 1u; }
        }
        out[blockIdx.x * 128 + c] = acc;
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)NB * NCHUNK * WORDS;
    const int m = NB * 128;
    std::vector<unsigned> h(n), want(m), out(m);
    uint32_t seed = 99u;
    for (auto &v : h) { seed = seed * 1664525u + 1013904223u; v = seed; }
    for (int b = 0; b < NB; b++)
        for (int c = 0; c < 128; c++) {
            unsigned acc = 0;
            for (int k = 0; k < NCHUNK; k++)
                for (int j = 0; j < 8; j++) acc = acc * 31u + (h[((size_t)b * NCHUNK + k) * WORDS + c + 128 * j] ^ (unsigned)k);
            want[b * 128 + c] = acc;
        }
    unsigned *din, *dout;
    CUDA_CHECK(cudaMalloc(&din, n * 4));
    CUDA_CHECK(cudaMalloc(&dout, m * 4));
    CUDA_CHECK(cudaMemcpy(din, h.data(), n * 4, cudaMemcpyHostToDevice));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dout, 0x5a, m * 4));
        ring_consume<<<NB, T>>>(din, dout);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(out.data(), dout, m * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < m; i++)
            if (out[i] != want[i]) { bad++; if (first < 0) first = i; }
    }
    printf("mbar_multi_producer_tx blocks=%d chunks=%d wrong=%ld first_wrong=%ld\n", NB, NCHUNK, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(din); cudaFree(dout);
    return bad == 0 ? 0 : 1;
}
