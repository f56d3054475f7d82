// cpasync_mbar_ring.cu -- a warp-specialized ring whose stages are filled by Ampere-style cp.async
// copies that complete on an mbarrier (`cp.async.mbarrier.arrive.noinc`) instead of commit groups:
// the copy warps (warps 0-3, 128 threads) each copy 16-byte pieces of a chunk with `cp.async.cg`
// and then make their arrival on `full[s]` asynchronous -- it happens when all of the thread's
// earlier cp.async have landed. `full[s]` is initialised with 128 (one `.noinc` arrival per copy
// thread); the compute warps (warps 4-7) wait on it with `mbarrier.try_wait.parity`, read words
// other threads copied, and release the stage with one arrival per warp (lane 0 after
// `__syncwarp()`) on `empty[s]` (count 4), which the copy threads wait on (parity of the previous
// round) before they refill the stage. Plain CUDA + inline PTX.
//
// BLOCKS = 264 blocks, each CHUNKS = 32 chunks of 2048 unsigned words through STAGES = 4 stages;
// out[b] = sum over the block's words of w * w + (w >> 3) (mod 2^32). The host checks every block's
// value exactly over 3 launches.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 256, PRODUCERS = 128, CONSUMER_WARPS = 4, STAGES = 4, CHUNK = 2048, CHUNKS = 32,
              BLOCKS = 264;

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t *bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity) {
    asm volatile(
        "{\n .reg .pred p;\n"
        "WAIT_%=:\n"
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        " @!p bra WAIT_%=;\n}\n" ::"r"(smem_addr(bar)),
        "r"(parity)
        : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void cp_async16(void *dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_arrive(uint64_t *bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_addr(bar)) : "memory");
}

__global__ __launch_bounds__(T)
void ring_sum(const unsigned *x, unsigned *out) {
    __shared__ alignas(16) unsigned stage[STAGES][CHUNK];
    __shared__ uint64_t full[STAGES], empty[STAGES];
    __shared__ unsigned part_s[CONSUMER_WARPS];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    if (tid == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(&full[s], PRODUCERS);
            mbar_init(&empty[s], CONSUMER_WARPS);
        }
    }
    __syncthreads();
    const unsigned *src = x + (size_t)blockIdx.x * CHUNKS * CHUNK;
    if (warp < 4) {  // copy warps
        for (int c = 0; c < CHUNKS; c++) {
            const int s = c % STAGES;
            mbar_wait(&empty[s], ((c / STAGES) & 1) ^ 1);
            for (int i = tid; i < CHUNK / 4; i += PRODUCERS)
                cp_async16(&stage[s][i * 4], src + (size_t)c * CHUNK + i * 4);
            cp_async_arrive(&full[s]);
        }
    } else {  // compute warps
        const int ct = tid - PRODUCERS;
        unsigned acc = 0;
        for (int c = 0; c < CHUNKS; c++) {
            const int s = c % STAGES;
            mbar_wait(&full[s], (c / STAGES) & 1);
            for (int i = ct; i < CHUNK; i += T - PRODUCERS) {
                const unsigned w = stage[s][i];
                acc += w * w + (w >> 3);
            }
            __syncwarp();
            if (lane == 0) mbar_arrive(&empty[s]);
        }
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (lane == 0) part_s[warp - 4] = acc;
    }
    __syncthreads();
    if (tid == 0) out[blockIdx.x] = part_s[0] + part_s[1] + part_s[2] + part_s[3];
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)BLOCKS * CHUNKS * CHUNK;
    std::vector<unsigned> hx(n), want(BLOCKS), hout(BLOCKS);
    uint32_t seed = 99u;
    for (auto &v : hx) { seed = seed * 1664525u + 1013904223u; v = seed; }
    for (int b = 0; b < BLOCKS; b++) {
        unsigned a = 0;
        for (size_t i = 0; i < (size_t)CHUNKS * CHUNK; i++) {
            const unsigned w = hx[(size_t)b * CHUNKS * CHUNK + i];
            a += w * w + (w >> 3);
        }
        want[b] = a;
    }
    unsigned *dx, *dout;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&dout, BLOCKS * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
    long bad = 0;
    int first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dout, 0x7f, BLOCKS * 4));
        ring_sum<<<BLOCKS, T>>>(dx, dout);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hout.data(), dout, BLOCKS * 4, cudaMemcpyDeviceToHost));
        for (int b = 0; b < BLOCKS; b++)
            if (hout[b] != want[b]) { bad++; if (first < 0) first = b; }
    }
    printf("cpasync_mbar_ring blocks=%d wrong=%ld first_wrong=%d\n", BLOCKS, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dout);
    return bad == 0 ? 0 : 1;
}
