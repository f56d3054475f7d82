// moe_group_sched.cu -- an MoE-style grouped GEMV with a dynamic tile scheduler, plain CUDA + PTX:
// ragged expert groups are cut into tiles of up to 16 rows; one producer thread takes the next
// tile from a global atomicAdd counter, maps it to (expert, first row, rows) by scanning the
// groups' tile offsets, writes that descriptor to a shared slot and loads the tile's rows with a
// 1-D `cp.async.bulk` whose byte count depends on the rows (a ragged tail tile is shorter). The
// descriptor and the data are published through the same mbarrier; a sentinel descriptor
// (rows = -1) published with a plain arrive ends the consumers.
//
// Y[r] = dot(X[r][0..D), W[g(r)][0..D)) for every row r of G = 8 experts, D = 128.
// 160 threads: warp 0 lane 0 scheduler + producer; warps 1..4 consumers (warp cw = 0..3 takes
//   rows cw, cw + 4, ... of a tile; lanes split the 128 columns, then a shuffle reduction).
// Shared: x_s[4][16][D] (ring), desc_s[4] (int4: tile, expert, first row, rows).
// Barriers: full[s] (count 1: the producer's arrive.expect_tx of rows * D * 4 bytes after it
//   wrote desc_s[s], or its plain arrive for the sentinel); empty[s] (count 4: lane 0 of each
//   consumer warp after __syncwarp, once the warp is done with x_s[s] and desc_s[s]).
//   Producer waits empty[s] with ((it / 4) & 1) ^ 1, consumers wait full[s] with (it / 4) & 1;
//   the ring index and parity run on across the tiles of the persistent loop.
// Consumers do not arrive for the sentinel's slot; the producer exits after publishing it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int G = 8, D = 128, TR = 16, STAGES = 4, CWARPS = 4;

struct Groups {
    int row_off[G + 1];   // first row of each expert, rows of all experts at [G]
    int tile_off[G + 1];  // first tile of each expert, tiles of all experts at [G]
};

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(smem_u32(bar)), "r"(parity) : "memory");
    } while (!done);
}
__device__ __forceinline__ void bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(smem_u32(dst)), "l"(src), "r"(bytes), "r"(smem_u32(bar)) : "memory");
}

__global__ __launch_bounds__(160, 1)
void moe_sched_kernel(const float *X, const float *W, float *Y, int *counter, const Groups grp) {
    __shared__ alignas(128) float x_s[STAGES][TR][D];
    __shared__ int4 desc_s[STAGES];
    __shared__ alignas(8) uint64_t full[STAGES], empty[STAGES];
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], CWARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (threadIdx.x < 32) {
        if (threadIdx.x == 0) {
            for (int it = 0;; it++) {
                const int s = it % STAGES;
                mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
                const int t = atomicAdd(counter, 1);
                if (t >= grp.tile_off[G]) {
                    desc_s[s] = make_int4(t, -1, 0, -1);
                    mbar_arrive(&full[s]);
                    break;
                }
                int g = 0;
                while (grp.tile_off[g + 1] <= t) g++;
                const int r0 = grp.row_off[g] + (t - grp.tile_off[g]) * TR;
                const int rows = min(TR, grp.row_off[g + 1] - r0);
                desc_s[s] = make_int4(t, g, r0, rows);
                mbar_arrive_expect_tx(&full[s], rows * D * 4);
                bulk_load(&x_s[s][0][0], X + (size_t)r0 * D, rows * D * 4, &full[s]);
            }
        }
    } else {
        const int cw = threadIdx.x / 32 - 1, lane = threadIdx.x & 31;
        for (int it = 0;; it++) {
            const int s = it % STAGES;
            mbar_wait(&full[s], (it / STAGES) & 1);
            const int4 d = desc_s[s];
            if (d.w < 0) break;
            const float *w = W + (size_t)d.y * D;
            for (int r = cw; r < d.w; r += CWARPS) {
                float acc = 0.0f;
                for (int k = lane; k < D; k += 32) acc += x_s[s][r][k] * w[k];
                for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
                if (lane == 0) Y[d.z + r] = acc;
            }
            __syncwarp();
            if (lane == 0) mbar_arrive(&empty[s]);
        }
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    Groups grp;
    const int rows_of[G] = {3001, 517, 12000, 9, 4096, 7777, 130, 2049};
    grp.row_off[0] = 0; grp.tile_off[0] = 0;
    for (int g = 0; g < G; g++) {
        grp.row_off[g + 1] = grp.row_off[g] + rows_of[g];
        grp.tile_off[g + 1] = grp.tile_off[g] + (rows_of[g] + TR - 1) / TR;
    }
    const int R = grp.row_off[G];
    std::vector<float> hX((size_t)R * D), hW((size_t)G * D);
    uint32_t seed = 3102u;
    for (auto &v : hX) v = 2.0f * lcg_uniform(seed);
    for (auto &v : hW) v = 2.0f * lcg_uniform(seed);
    float *dX, *dW, *dY; int *dC;
    CUDA_CHECK(cudaMalloc(&dX, hX.size() * 4));
    CUDA_CHECK(cudaMalloc(&dW, hW.size() * 4));
    CUDA_CHECK(cudaMalloc(&dY, (size_t)R * 4));
    CUDA_CHECK(cudaMalloc(&dC, 4));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), hX.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dW, hW.data(), hW.size() * 4, cudaMemcpyHostToDevice));
    std::vector<float> hY(R);
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dY, 0xff, (size_t)R * 4));  // NaN poison
        CUDA_CHECK(cudaMemset(dC, 0, 4));
        moe_sched_kernel<<<132, 160>>>(dX, dW, dY, dC, grp);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hY.data(), dY, (size_t)R * 4, cudaMemcpyDeviceToHost));
        for (int g = 0; g < G; g++)
            for (int r = grp.row_off[g]; r < grp.row_off[g + 1]; r++) {
                double ref = 0.0;
                for (int k = 0; k < D; k++) ref += (double)hX[(size_t)r * D + k] * hW[(size_t)g * D + k];
                const double e = std::isfinite(hY[r]) ? fabs(hY[r] - ref) : 1e30;
                if (e > max_err) max_err = e;
            }
    }
    const bool ok = max_err <= 1e-3;
    printf("moe_group_sched R=%d max_abs_err=%.6f\n", R, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dW); cudaFree(dY); cudaFree(dC);
    return ok ? 0 : 1;
}
