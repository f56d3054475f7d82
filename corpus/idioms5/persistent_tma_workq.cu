// persistent_tma_workq.cu -- a persistent kernel (one block per SM) that steals row tiles from a
// global work counter (atomicAdd) and streams each tile through a 3-stage ring of 2-D tensor
// copies (TMA, cp.async.bulk.tensor) in chunks; the tile index travels to the consumers through
// a one-slot mailbox with its own pair of mbarriers, apart from the data ring (plain CUDA + PTX,
// no TK). The ring's stage counter and parity run on across tiles (8 chunks a tile, 3 stages).
//
// Y[r] = sum_c X[r][c] w[c]; X is R = 32768 rows x C = 512 fp32; a tile is 32 rows, a chunk 32 rows
// x 64 columns (8 KiB, one TMA box, no swizzle), 8 chunks a tile.
// 160 threads: warp 0 lane 0 producer; warps 1..4 consumers (consumer thread q = 0..127 takes row
//   q / 4, columns 16 (q % 4) .. + 15 of each chunk; a shuffle over the 4 lanes of a row).
// Barriers: full[s] (1: the producer's arrive.expect_tx of 8192 bytes), empty[s] (4: lane 0 of
//   each consumer warp after __syncwarp, the warp done with x_s[s]); slot_full (1: the producer's
//   arrive after writing tile_s), slot_empty (4: lane 0 of each consumer warp once the warp read
//   tile_s). The producer waits empty[s] with ((it / 3) & 1) ^ 1 and slot_empty with sph ^ 1;
//   consumers wait full[s] with (it / 3) & 1 and slot_full with tph.
// End: when the counter passes the last tile the producer publishes -1 in tile_s and exits; the
//   consumers read it and exit (their last slot_empty arrivals are never waited for).
#include <cuda.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int R = 32768, C = 512, TR = 32, CW = 64, CHUNKS = C / CW, STAGES = 3, NTILES = R / TR;
constexpr int CHUNK_BYTES = TR * CW * 4, CWARPS = 4;

__device__ __forceinline__ uint32_t saddr(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mb_init(uint64_t *b, uint32_t n) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(saddr(b)), "r"(n) : "memory");
}
__device__ __forceinline__ void mb_arrive(uint64_t *b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(saddr(b)) : "memory");
}
__device__ __forceinline__ void mb_arrive_tx(uint64_t *b, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(saddr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool mb_try(uint64_t *b, uint32_t parity) {
    uint32_t ok;
    asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(ok) : "r"(saddr(b)), "r"(parity) : "memory");
    return ok != 0;
}
__device__ __forceinline__ void mb_wait(uint64_t *b, uint32_t parity) {
    while (!mb_try(b, parity)) {
    }
}
__device__ __forceinline__ void tma_2d(void *dst, const CUtensorMap *map, int col, int row, uint64_t *b) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(saddr(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(col), "r"(row), "r"(saddr(b)) : "memory");
}

__global__ __launch_bounds__(160, 1)
void workq_kernel(const __grid_constant__ CUtensorMap mapX, const float *w, float *Y, int *counter) {
    __shared__ alignas(128) float x_s[STAGES][TR][CW];
    __shared__ alignas(8) uint64_t full[STAGES], empty[STAGES], slot_full, slot_empty;
    __shared__ int tile_s;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mb_init(&full[s], 1);
            mb_init(&empty[s], CWARPS);
        }
        mb_init(&slot_full, 1);
        mb_init(&slot_empty, CWARPS);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (threadIdx.x < 32) {
        if (threadIdx.x == 0) {
            int it = 0, sph = 0;
            for (;;) {
                const int t = atomicAdd(counter, 1);
                mb_wait(&slot_empty, sph ^ 1);
                tile_s = t < NTILES ? t : -1;
                mb_arrive(&slot_full);
                sph ^= 1;
                if (t >= NTILES) break;
                for (int c = 0; c < CHUNKS; c++, it++) {
                    const int s = it % STAGES;
                    mb_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
                    mb_arrive_tx(&full[s], CHUNK_BYTES);
                    tma_2d(&x_s[s][0][0], &mapX, c * CW, t * TR, &full[s]);
                }
            }
        }
        return;
    }
    const int q = threadIdx.x - 32, lane = threadIdx.x & 31, row = q / 4, part = q % 4;
    int it = 0, tph = 0;
    for (;;) {
        mb_wait(&slot_full, tph);
        const int t = tile_s;
        __syncwarp();
        if (lane == 0) mb_arrive(&slot_empty);
        tph ^= 1;
        if (t < 0) break;
        float acc = 0.0f;
        for (int c = 0; c < CHUNKS; c++, it++) {
            const int s = it % STAGES;
            mb_wait(&full[s], (it / STAGES) & 1);
#pragma unroll
            for (int j = 0; j < 16; j++) acc += x_s[s][row][part * 16 + j] * __ldg(&w[c * CW + part * 16 + j]);
            __syncwarp();
            if (lane == 0) mb_arrive(&empty[s]);
        }
        acc += __shfl_xor_sync(0xffffffffu, acc, 1);
        acc += __shfl_xor_sync(0xffffffffu, acc, 2);
        if (part == 0) Y[t * TR + row] = acc;
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    std::vector<float> hX((size_t)R * C), hw(C);
    uint32_t seed = 5407u;
    for (auto &v : hX) v = lcg_uniform(seed);
    for (auto &v : hw) v = lcg_uniform(seed);
    std::vector<double> ref(R);
    for (int r = 0; r < R; r++) {
        double s = 0.0;
        for (int c = 0; c < C; c++) s += (double)hX[(size_t)r * C + c] * hw[c];
        ref[r] = s;
    }
    float *dX, *dw, *dY; int *dcnt;
    CUDA_CHECK(cudaMalloc(&dX, hX.size() * 4));
    CUDA_CHECK(cudaMalloc(&dw, C * 4));
    CUDA_CHECK(cudaMalloc(&dY, R * 4));
    CUDA_CHECK(cudaMalloc(&dcnt, 4));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), hX.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dw, hw.data(), C * 4, cudaMemcpyHostToDevice));
    CUtensorMap mapX;
    const cuuint64_t dims[2] = {(cuuint64_t)C, (cuuint64_t)R};
    const cuuint64_t strides[1] = {(cuuint64_t)C * 4};
    const cuuint32_t box[2] = {(cuuint32_t)CW, (cuuint32_t)TR};
    const cuuint32_t estr[2] = {1, 1};
    if (cuTensorMapEncodeTiled(&mapX, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, dX, dims, strides, box, estr,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                               CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        printf("tensor map encoding failed\nFAIL\n");
        return 2;
    }
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    std::vector<float> hY(R);
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dY, 0xff, R * 4));  // NaN poison
        CUDA_CHECK(cudaMemset(dcnt, 0, 4));
        workq_kernel<<<sms, 160>>>(mapX, dw, dY, dcnt);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hY.data(), dY, R * 4, cudaMemcpyDeviceToHost));
        for (int r = 0; r < R; r++) {
            const double e = std::isfinite(hY[r]) ? fabs(hY[r] - ref[r]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err <= 1e-3;
    printf("persistent_tma_workq R=%d C=%d blocks=%d max_abs_err=%.3g\n", R, C, sms, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dw); cudaFree(dY); cudaFree(dcnt);
    return ok ? 0 : 1;
}
