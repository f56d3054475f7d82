// pingpong_ptx_namedbar.cu -- the FlashAttention-3 warpgroup "ping-pong" written in plain CUDA +
// inline PTX (no TK, no CUTLASS): a producer warpgroup that gives registers away
// (`setmaxnreg.dec.sync.aligned.u32 40`) streams 64 x 32 float tiles through a 4-stage ring with
// 1-D `cp.async.bulk` loads completing bytes on `full[s]`; two consumer warpgroups that take
// registers (`setmaxnreg.inc.sync.aligned.u32 232`) take alternate tiles. Each consumer reduces its
// tile in registers (the "MMA" half), releases the stage, and then enters an ordered section (the
// "softmax" half) that must follow the other consumer's previous one: it waits on ITS named barrier
// with `bar.sync 1 + c, 256` (its own 128 threads) and, when it is done and a next tile exists,
// hands the turn over with `bar.arrive 1 + (1 - c), 256` (the other consumer's barrier; the 128
// arriving threads complete the 256). Consumer 1 grants the first turn to consumer 0 once at the
// start. Every mbarrier wait is `mbarrier.try_wait.parity` with a suspend-time hint.
//
// Per block b, row r (0..63), over the block's NT tiles i in order:
//   carry[r] = 0.5 * carry[r] + sum_c X[b][i][r][c];   Y[(b * NT + i) * 64 + r] = carry[r]
// 384 threads: WG0 producer (thread 0 issues; the other 127 leave after setmaxnreg), WG1 consumer 0
// (tiles 0, 2, ...), WG2 consumer 1 (tiles 1, 3, ...). A consumer thread t handles row t / 2,
// half t % 2 (16 floats); the halves meet through `__shfl_xor_sync(.., 1)`.
// Barriers: full[s] (count 1: the producer's arrive.expect_tx of 8192 bytes), empty[s] (count 4:
// lane 0 of each warp of the consumer that read the stage). Tile i uses stage i % 4, consumers
// wait full with parity (i / 4) & 1, the producer waits empty with ((i / 4) & 1) ^ 1.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int T = 384, STAGES = 4, NT = 32, NB = 132, TILE = 64 * 32;
constexpr unsigned TBYTES = TILE * 4;

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void wait_hint(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n .reg .pred p;\n WAIT_%=:\n"
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1, %2;\n"
        " @!p bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity), "r"(100000) : "memory");
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
__device__ __forceinline__ void named_sync(unsigned id) { asm volatile("bar.sync %0, 256;" ::"r"(id) : "memory"); }
__device__ __forceinline__ void named_arrive(unsigned id) { asm volatile("bar.arrive %0, 256;" ::"r"(id) : "memory"); }

__global__ void __launch_bounds__(T, 1) pingpong(const float *X, float *Y) {
    __shared__ alignas(128) float ring[STAGES][TILE];
    __shared__ alignas(8) uint64_t full[STAGES], empty[STAGES];
    __shared__ float carry_s[64];
    const int tid = threadIdx.x, wg = tid / 128;
    if (tid == 0) {
        for (int s = 0; s < STAGES; s++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&full[s])), "r"(1) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&empty[s])), "r"(4) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (tid < 64) carry_s[tid] = 0.f;
    __syncthreads();
    const float *src = X + (size_t)blockIdx.x * NT * TILE;
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid == 0) {
            for (int i = 0; i < NT; i++) {
                const int s = i % STAGES;
                wait_hint(smem_u32(&empty[s]), ((i / STAGES) & 1) ^ 1u);
                arrive_expect(smem_u32(&full[s]), TBYTES);
                bulk_load(smem_u32(&ring[s][0]), src + (size_t)i * TILE, TBYTES, smem_u32(&full[s]));
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int c = wg - 1, t = tid - 128 * wg, lane = tid % 32, r = t / 2, h = t % 2;
    if (c == 1) named_arrive(1);
    for (int i = c; i < NT; i += 2) {
        const int s = i % STAGES;
        wait_hint(smem_u32(&full[s]), (unsigned)((i / STAGES) & 1));
        float part = 0.f;
        for (int j = 0; j < 16; j++) part += ring[s][r * 32 + h * 16 + j];
        __syncwarp();
        if (lane == 0) arrive(smem_u32(&empty[s]));
        const float other = __shfl_xor_sync(0xffffffffu, part, 1);
        const float row = h == 0 ? part + other : other + part;
        named_sync(1 + c);
        if (h == 0) {
            const float v = 0.5f * carry_s[r] + row;
            carry_s[r] = v;
            Y[((size_t)blockIdx.x * NT + i) * 64 + r] = v;
        }
        if (i + 1 < NT) named_arrive(1 + (1 - c));
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)NB * NT * TILE, m = (size_t)NB * NT * 64;
    std::vector<float> h(n), want(m), out(m);
    uint32_t seed = 7u;
    for (auto &v : h) { seed = seed * 1664525u + 1013904223u; v = (float)((seed >> 16) % 17) / 8.f - 1.f; }
    for (int b = 0; b < NB; b++)
        for (int r = 0; r < 64; r++) {
            float carry = 0.f;
            for (int i = 0; i < NT; i++) {
                const float *row = &h[((size_t)b * NT + i) * TILE + r * 32];
                float p0 = 0.f, p1 = 0.f;
                for (int j = 0; j < 16; j++) { p0 += row[j]; p1 += row[16 + j]; }
                carry = 0.5f * carry + (p0 + p1);
                want[((size_t)b * NT + i) * 64 + r] = carry;
            }
        }
    float *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&dy, m * 4));
    CUDA_CHECK(cudaMemcpy(dx, h.data(), n * 4, cudaMemcpyHostToDevice));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, m * 4));
        pingpong<<<NB, T>>>(dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(out.data(), dy, m * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < m; i++)
            if (!(fabsf(out[i] - want[i]) <= 1e-3f * (1.f + fabsf(want[i])))) { bad++; if (first < 0) first = (long)i; }
    }
    printf("pingpong_ptx_namedbar blocks=%d tiles=%d wrong=%ld first_wrong=%ld\n", NB, NT, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy);
    return bad == 0 ? 0 : 1;
}
