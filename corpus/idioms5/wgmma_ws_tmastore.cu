// wgmma_ws_tmastore.cu -- a raw-PTX Hopper GEMM (no TK, no CUTLASS) with TWO consumer warpgroups
// sharing every B stage and a TMA-store epilogue: the accumulators go through a shared staging
// tile that one thread writes back with `cp.async.bulk.tensor ... bulk_group`.
//
// C[M][N] (fp32) = A[M][K] * B[N][K]^T (bf16, both K-major); M = N = 512, K = 768; block tile
// 128 x 64, BK = 64 (12 k-tiles), grid (N / 64, M / 128).
// 288 threads: warpgroups 0 and 1 (warps 0..7) consume, each the 64 rows 64 * wg .. of the block
//   tile with wgmma m64n64k16; warp 8 lane 0 produces.
// Shared (dynamic, 1024-byte aligned): a stage is [A 128 x 64 | B 64 x 64] bf16 (16 KiB + 8 KiB,
//   128-byte swizzle, one TMA load each), 3 stages; then c_s, 128 x 64 fp32 (32 KiB, no swizzle).
// Barriers: full[s] (count 1: the producer's arrive.expect_tx of the stage's 24576 bytes);
//   empty[s] (count 8: lane 0 of each consumer warp, after its own `wgmma.wait_group 0` retired
//   the k-tile that read stage s; one thread per warpgroup, as CUTLASS's sm90 pipeline releases,
//   would rely on one warp's wait covering the warpgroup's share, which TK206's contract does
//   not grant: docs/rules.md TK206). Producer waits empty[s] with ((kt / 3) & 1) ^ 1, consumers wait
//   full[s] with (kt / 3) & 1.
// Epilogue: each consumer thread writes its 32 accumulator values into c_s, fences the generic
//   writes for the async proxy, named barrier 1 (256 consumer threads), then thread 0 stores c_s
//   with one tensor store, commits the bulk group and waits for it to have read c_s before exit.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int M = 512, N = 512, K = 768, BM = 128, BN = 64, BK = 64, STAGES = 3, KT = K / BK;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int C_BYTES = BM * BN * 4, CONSUMERS = 256;

__device__ __forceinline__ uint32_t sptr(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void bar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_expect(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void bar_wait(uint32_t bar, uint32_t parity) {
    asm volatile(
        "{\n\t.reg .pred ready;\n"
        "WAIT_%=:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 ready, [%0], %1;\n\t"
        "@!ready bra WAIT_%=;\n\t}"
        :: "r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap *map, int x, int y, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar) : "memory");
}
__device__ __forceinline__ void tma_store(const CUtensorMap *map, uint32_t src, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 :: "l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(x), "r"(y) : "memory");
}
__device__ __forceinline__ void store_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
__device__ __forceinline__ void store_read_wait0() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
__device__ __forceinline__ void async_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, %0;" :: "n"(CONSUMERS) : "memory"); }

// K-major operand in a 128-byte swizzle: 8-row groups 1024 bytes apart
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}
__device__ __forceinline__ void mma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void mma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void mma_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
__device__ __forceinline__ void mma_m64n64k16(float (&d)[32], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, 1, 0;\n\t"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p, 1, 1, 0, 0;\n\t}"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db)
        : "memory");
}

__global__ __launch_bounds__(288, 1)
void gemm_two_wg_kernel(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapB,
                        const __grid_constant__ CUtensorMap mapC) {
    extern __shared__ uint8_t dyn[];
    __shared__ alignas(8) uint64_t full[STAGES], empty[STAGES];
    const uint32_t base = (sptr(dyn) + 1023) & ~1023u;
    const uint32_t c_s = base + STAGES * STAGE_BYTES;
    float *c_tile = reinterpret_cast<float *>(dyn + (c_s - sptr(dyn)));
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            bar_init(sptr(&full[s]), 1);
            bar_init(sptr(&empty[s]), 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (threadIdx.x >= CONSUMERS) {
        if (threadIdx.x == CONSUMERS) {
            for (int kt = 0; kt < KT; kt++) {
                const int s = kt % STAGES;
                const uint32_t st = base + s * STAGE_BYTES;
                bar_wait(sptr(&empty[s]), ((kt / STAGES) & 1) ^ 1);
                bar_expect(sptr(&full[s]), STAGE_BYTES);
                tma_load(st, &mapA, kt * BK, m0, sptr(&full[s]));
                tma_load(st + A_BYTES, &mapB, kt * BK, n0, sptr(&full[s]));
            }
        }
        return;
    }
    const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x & 31;
    float acc[32];
#pragma unroll
    for (int i = 0; i < 32; i++) acc[i] = 0.0f;
    for (int kt = 0; kt < KT; kt++) {
        const int s = kt % STAGES;
        const uint32_t st = base + s * STAGE_BYTES;
        bar_wait(sptr(&full[s]), (kt / STAGES) & 1);
        mma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++)
            mma_m64n64k16(acc, desc_sw128(st + wg * (A_BYTES / 2) + kk * 32), desc_sw128(st + A_BYTES + kk * 32));
        mma_commit();
        mma_wait0();
        if (lane == 0) bar_arrive(sptr(&empty[s]));
    }
#pragma unroll
    for (int i = 0; i < 32; i++) {
        const int row = 64 * wg + 16 * warp + lane / 4 + 8 * ((i >> 1) & 1);
        const int col = 8 * (i >> 2) + 2 * (lane & 3) + (i & 1);
        c_tile[row * BN + col] = acc[i];
    }
    async_proxy_fence();
    consumers_sync();
    if (threadIdx.x == 0) {
        tma_store(&mapC, c_s, n0, m0);
        store_commit();
        store_read_wait0();
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

static bool encode_2d(CUtensorMap *map, CUtensorMapDataType dtype, int esize, void *ptr, int cols, int rows,
                      int box_cols, int box_rows, CUtensorMapSwizzle swz) {
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)cols * esize};
    const cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
    const cuuint32_t estr[2] = {1, 1};
    return cuTensorMapEncodeTiled(map, dtype, 2, ptr, dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, swz,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

int main() {
    std::vector<__nv_bfloat16> hA((size_t)M * K), hB((size_t)N * K);
    std::vector<float> fA(hA.size()), fB(hB.size());
    uint32_t seed = 5107u;
    for (size_t i = 0; i < hA.size(); i++) { hA[i] = __float2bfloat16(lcg_uniform(seed)); fA[i] = __bfloat162float(hA[i]); }
    for (size_t i = 0; i < hB.size(); i++) { hB[i] = __float2bfloat16(lcg_uniform(seed)); fB[i] = __bfloat162float(hB[i]); }
    std::vector<double> ref((size_t)M * N);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0.0;
            for (int k = 0; k < K; k++) s += (double)fA[(size_t)m * K + k] * fB[(size_t)n * K + k];
            ref[(size_t)m * N + n] = s;
        }
    __nv_bfloat16 *dA, *dB; float *dC;
    CUDA_CHECK(cudaMalloc(&dA, hA.size() * 2));
    CUDA_CHECK(cudaMalloc(&dB, hB.size() * 2));
    CUDA_CHECK(cudaMalloc(&dC, (size_t)M * N * 4));
    CUDA_CHECK(cudaMemcpy(dA, hA.data(), hA.size() * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, hB.data(), hB.size() * 2, cudaMemcpyHostToDevice));
    CUtensorMap mapA, mapB, mapC;
    if (!encode_2d(&mapA, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, dA, K, M, BK, BM, CU_TENSOR_MAP_SWIZZLE_128B) ||
        !encode_2d(&mapB, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, dB, K, N, BK, BN, CU_TENSOR_MAP_SWIZZLE_128B) ||
        !encode_2d(&mapC, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, dC, N, M, BN, BM, CU_TENSOR_MAP_SWIZZLE_NONE)) {
        printf("tensor map encoding failed\nFAIL\n");
        return 2;
    }
    const int smem = STAGES * STAGE_BYTES + C_BYTES + 1024;
    CUDA_CHECK(cudaFuncSetAttribute(gemm_two_wg_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    std::vector<float> hC((size_t)M * N);
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dC, 0xff, hC.size() * 4));  // NaN poison
        gemm_two_wg_kernel<<<dim3(N / BN, M / BM), 288, smem>>>(mapA, mapB, mapC);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hC.data(), dC, hC.size() * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < hC.size(); i++) {
            const double e = std::isfinite(hC[i]) ? fabs(hC[i] - ref[i]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err <= 1e-2;
    printf("wgmma_ws_tmastore M=%d N=%d K=%d max_abs_err=%.6f\n", M, N, K, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
    return ok ? 0 : 1;
}
