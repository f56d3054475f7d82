// varlen_bulk_gather.cu -- a gather of variable-length rows into shared memory by non-tensor bulk
// copies, each lane of a loader warp arming ONE mbarrier for its own row's byte count: lane l of
// warp 0 adds its row's bytes to the phase with `mbarrier.expect_tx.relaxed.cta.shared::cta.b64`
// (the expect without an arrival) and issues one 1-D `cp.async.bulk` of that row completing on the
// same barrier; after `__syncwarp()` one lane chosen by `elect.sync` makes the phase's single
// arrival (count 1). Every thread of the block waits on the barrier (`try_wait.parity`, parity
// k & 1 for batch k), each warp reduces four rows, and a `__syncthreads()` at the end of the batch
// lets the loader refill the one buffer. Plain CUDA + inline PTX, no TK.
//
// 132 blocks x 256 threads; block b handles NBATCH = 16 batches of R = 32 rows; row q of batch k has
// len = 4 * (1 + hash(b, k, q) % 64) words (16 .. 1024 bytes, a multiple of 16), packed one after
// another in `in` (offsets from the host); it lands in slot q of `buf` (256 words a slot).
// out[(b * NBATCH + k) * R + q] = sum_j (j + 1) * row[j] (unsigned, mod 2^32); the host checks all.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 256, R = 32, NBATCH = 16, NB = 132, SLOT = 256;

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void wait_parity(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n .reg .pred p;\n WAIT_%=:\n"
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        " @!p bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void expect_bytes(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void bulk_load(unsigned dst, const void *src, unsigned bytes, unsigned bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
__device__ __forceinline__ bool elect_one() {
    unsigned pred = 0;
    asm volatile(
        "{\n .reg .pred P;\n .reg .b32 L;\n elect.sync L|P, %1;\n selp.u32 %0, 1, 0, P;\n}\n"
        : "=r"(pred) : "r"(0xffffffffu));
    return pred != 0;
}

__global__ void __launch_bounds__(T) gather_rows(const unsigned *in, const unsigned *off, const unsigned *len,
                                                 unsigned *out) {
    __shared__ alignas(128) unsigned buf[R][SLOT];
    __shared__ alignas(8) uint64_t full;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    if (tid == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&full)), "r"(1) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    for (int k = 0; k < NBATCH; k++) {
        const int row0 = (blockIdx.x * NBATCH + k) * R;
        if (warp == 0) {
            const unsigned bytes = len[row0 + lane] * 4u;
            expect_bytes(smem_u32(&full), bytes);
            bulk_load(smem_u32(&buf[lane][0]), in + off[row0 + lane], bytes, smem_u32(&full));
            __syncwarp();
            if (elect_one()) arrive(smem_u32(&full));
        }
        wait_parity(smem_u32(&full), (unsigned)(k & 1));
        for (int q = warp * 4; q < warp * 4 + 4; q++) {
            const unsigned n = len[row0 + q];
            unsigned acc = 0;
            for (unsigned j = lane; j < n; j += 32) acc += (j + 1u) * buf[q][j];
            for (int d = 16; d > 0; d /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, d);
            if (lane == 0) out[row0 + q] = acc;
        }
        __syncthreads();
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const int rows = NB * NBATCH * R;
    std::vector<unsigned> len(rows), off(rows), want(rows), got(rows);
    size_t total = 0;
    uint32_t seed = 12345u;
    for (int i = 0; i < rows; i++) {
        seed = seed * 1664525u + 1013904223u;
        len[i] = 4u * (1u + (seed >> 8) % 64u);
        off[i] = (unsigned)total;
        total += len[i];
    }
    std::vector<unsigned> h(total);
    for (auto &v : h) { seed = seed * 1664525u + 1013904223u; v = seed; }
    for (int i = 0; i < rows; i++) {
        unsigned acc = 0;
        for (unsigned j = 0; j < len[i]; j++) acc += (j + 1u) * h[off[i] + j];
        want[i] = acc;
    }
    unsigned *din, *doff, *dlen, *dout;
    CUDA_CHECK(cudaMalloc(&din, total * 4));
    CUDA_CHECK(cudaMalloc(&doff, rows * 4));
    CUDA_CHECK(cudaMalloc(&dlen, rows * 4));
    CUDA_CHECK(cudaMalloc(&dout, rows * 4));
    CUDA_CHECK(cudaMemcpy(din, h.data(), total * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(doff, off.data(), rows * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dlen, len.data(), rows * 4, cudaMemcpyHostToDevice));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dout, 0x5a, rows * 4));
        gather_rows<<<NB, T>>>(din, doff, dlen, dout);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(got.data(), dout, rows * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < rows; i++)
            if (got[i] != want[i]) { bad++; if (first < 0) first = i; }
    }
    printf("varlen_bulk_gather blocks=%d batches=%d wrong=%ld first_wrong=%ld\n", NB, NBATCH, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(din); cudaFree(doff); cudaFree(dlen); cudaFree(dout);
    return bad == 0 ? 0 : 1;
}
