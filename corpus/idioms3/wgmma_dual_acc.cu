// wgmma_dual_acc.cu -- a raw-PTX Hopper GEMM in the style of hand-written "fast GEMM" tutorials (no
// TK, no CUTLASS): a tensor map per operand (cuTensorMapEncodeTiled, 128-byte swizzle), TMA loads
// into a 4-stage ring with `mbarrier_wait(addr, phase)` helpers, and wgmma with TWO accumulators
// in flight: k-tile kt accumulates into acc[kt & 1], and after committing it the consumer waits
// with `wgmma.wait_group 1`, which retires k-tile kt - 1 only, and then releases kt - 1's stage.
// The last stage is retired by `wait_group 0` before the two accumulators are summed and stored.
//
// C[M][N] (fp32) = A[M][K] * B[N][K]^T (bf16, both K-major); M = N = 512, K = 1024; block tile
// 64 x 64, BK = 64 (16 k-tiles), grid (N / 64, M / 64).
// 160 threads: warps 0..3 the consumer warpgroup (wgmma m64n64k16), warp 4 lane 0 producer.
// Shared (dynamic, 1024-byte aligned): sA[4][64 * 64], sB[4][64 * 64] bf16.
// Barriers: full[s] (count 1: producer's arrive.expect_tx of 16384 bytes, both TMA loads complete
//   on it); empty[s] (count 128: every consumer thread after its wait_group 1 retired the k-tile
//   that read stage s; a lane-0 guard here would be a divergent path between wgmma issue and
//   retirement, and ptxas then serialises the wgmmas, C7518). Producer waits empty[s] with ((kt / 4) & 1) ^ 1, consumers wait
//   full[s] with (kt / 4) & 1. The stage of the last k-tile is never released (nobody refills it).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int M = 512, N = 512, K = 1024, BM = 64, BN = 64, BK = 64, STAGES = 4, KT = K / BK;
constexpr int TILE_BYTES = BM * BK * 2;  // = BN * BK * 2

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbarrier_init(uint32_t addr, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(addr), "r"(count) : "memory");
}
__device__ __forceinline__ void mbarrier_expect_tx(uint32_t addr, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(addr), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(uint32_t addr) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(addr) : "memory");
}
__device__ __forceinline__ void mbarrier_wait(uint32_t addr, uint32_t phase) {
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(addr), "r"(phase) : "memory");
    } while (!done);
}
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
// K-major operand, 128-byte swizzle: stride between 8-row groups 1024 bytes
__device__ __forceinline__ uint64_t make_desc(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N_>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N_) : "memory"); }
__device__ __forceinline__ void fence_operand(float (&d)[32]) {
#pragma unroll
    for (int i = 0; i < 32; i++) asm volatile("" : "+f"(d[i]) :: "memory");
}
__device__ __forceinline__ void wgmma_64x64x16(float (&d)[32], uint64_t da, uint64_t db) {
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
// one k-tile (4 wgmma k-steps of 16) from stage s into d
__device__ __forceinline__ void mma_ktile(float (&d)[32], uint32_t a, uint32_t b) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) wgmma_64x64x16(d, make_desc(a + kk * 32), make_desc(b + kk * 32));
    wgmma_commit();
}

__global__ __launch_bounds__(160, 1)
void gemm_dual_kernel(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapB, float *Cm) {
    extern __shared__ uint8_t dyn[];
    __shared__ alignas(8) uint64_t full[STAGES], empty[STAGES];
    const uint32_t base = (smem_u32(dyn) + 1023) & ~1023u;
    const uint32_t sA = base, sB = base + STAGES * TILE_BYTES;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbarrier_init(smem_u32(&full[s]), 1);
            mbarrier_init(smem_u32(&empty[s]), 128);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (threadIdx.x >= 128) {
        if (threadIdx.x == 128) {
            for (int kt = 0; kt < KT; kt++) {
                const int s = kt % STAGES;
                mbarrier_wait(smem_u32(&empty[s]), ((kt / STAGES) & 1) ^ 1);
                mbarrier_expect_tx(smem_u32(&full[s]), 2 * TILE_BYTES);
                tma_load_2d(sA + s * TILE_BYTES, &mapA, kt * BK, m0, smem_u32(&full[s]));
                tma_load_2d(sB + s * TILE_BYTES, &mapB, kt * BK, n0, smem_u32(&full[s]));
            }
        }
        return;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    float acc0[32], acc1[32];
#pragma unroll
    for (int i = 0; i < 32; i++) { acc0[i] = 0.0f; acc1[i] = 0.0f; }
    for (int kt = 0; kt < KT; kt += 2) {
        {
            const int s = kt % STAGES;
            mbarrier_wait(smem_u32(&full[s]), (kt / STAGES) & 1);
            mma_ktile(acc0, sA + s * TILE_BYTES, sB + s * TILE_BYTES);
            wgmma_wait<1>();
            if (kt > 0) mbarrier_arrive(smem_u32(&empty[(kt - 1) % STAGES]));
        }
        {
            const int s = (kt + 1) % STAGES;
            mbarrier_wait(smem_u32(&full[s]), ((kt + 1) / STAGES) & 1);
            mma_ktile(acc1, sA + s * TILE_BYTES, sB + s * TILE_BYTES);
            wgmma_wait<1>();
            mbarrier_arrive(smem_u32(&empty[kt % STAGES]));
        }
    }
    wgmma_wait<0>();
    fence_operand(acc0);
    fence_operand(acc1);
#pragma unroll
    for (int i = 0; i < 32; i++) {
        const int row = m0 + 16 * warp + lane / 4 + 8 * ((i >> 1) & 1);
        const int col = n0 + 8 * (i >> 2) + 2 * (lane & 3) + (i & 1);
        Cm[(size_t)row * N + col] = acc0[i] + acc1[i];
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

static bool make_map(CUtensorMap *map, void *ptr, int rows, int box_rows) {
    const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)K * 2};
    const cuuint32_t box[2] = {(cuuint32_t)BK, (cuuint32_t)box_rows};
    const cuuint32_t estr[2] = {1, 1};
    return cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, ptr, dims, strides, box, estr,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

int main() {
    std::vector<__nv_bfloat16> hA((size_t)M * K), hB((size_t)N * K);
    std::vector<float> fA(hA.size()), fB(hB.size());
    uint32_t seed = 3105u;
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
    CUtensorMap mapA, mapB;
    if (!make_map(&mapA, dA, M, BM) || !make_map(&mapB, dB, N, BN)) { printf("FAIL tensor map\n"); return 2; }
    const int smem = 2 * STAGES * TILE_BYTES + 1024;
    CUDA_CHECK(cudaFuncSetAttribute(gemm_dual_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    std::vector<float> hC((size_t)M * N);
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dC, 0xff, hC.size() * 4));  // NaN poison
        gemm_dual_kernel<<<dim3(N / BN, M / BM), 160, smem>>>(mapA, mapB, dC);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hC.data(), dC, hC.size() * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < hC.size(); i++) {
            const double e = std::isfinite(hC[i]) ? fabs(hC[i] - ref[i]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err <= 1e-2;
    printf("wgmma_dual_acc M=%d N=%d K=%d max_abs_err=%.6f\n", M, N, K, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
    return ok ? 0 : 1;
}
