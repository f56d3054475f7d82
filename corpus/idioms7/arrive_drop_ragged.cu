// arrive_drop_ragged.cu -- consumer warps with a ragged amount of work leave an mbarrier with
// `mbarrier.arrive_drop`: eight consumer warps sum row slices of a block's tiles, an epilogue warp
// adds their partial rows once all warps still working have arrived on `done`; warps 4-7 have
// fewer tiles (a ragged tail) and, on their last tile, arrive with arrive_drop, so every later
// phase of `done` expects one arrival fewer while the others keep using the barrier (plain CUDA +
// inline PTX, no TK).
//
// Block b, NT = 12 tiles of CW = 8 slices x ROWS = 4 rows x 64 columns. Consumer warp w works on
// tiles t < L(w) = NT - max(0, w - 3) (12, 12, 12, 12, 11, 10, 9, 8): part[w][j] = sum of its 4
// rows of column j. Epilogue (warp 8): out[b][t][j] = sum over warps w with L(w) > t of
// part[w][j].
// Barriers: done (count CW: lane 0 of each consumer warp after __syncwarp, one arrival a tile;
// on its last tile a warp arrives with arrive_drop), waited by the epilogue with parity t & 1;
// free (count 1: the epilogue's lane 0 after __syncwarp once it has read the parts of tile t),
// waited by a consumer before it rewrites part[w] for tile t (t > 0) with parity (t - 1) & 1.
// Init by thread 0, __syncthreads before any use.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int CW = 8, THREADS = 32 * (CW + 1), NT = 12, ROWS = 4, COLS = 64, BLOCKS = 264;
constexpr int TILE = CW * ROWS * COLS;

__host__ __device__ constexpr int tiles_of(int w) { return NT - (w > 3 ? w - 3 : 0); }

__device__ inline uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ inline void mbar_init(uint64_t *bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count) : "memory");
}

__device__ inline void mbar_arrive(uint64_t *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(bar)) : "memory");
}

// arrive once for the current phase and leave: every later phase expects one arrival fewer
__device__ inline void mbar_arrive_drop(uint64_t *bar) {
    asm volatile("mbarrier.arrive_drop.shared::cta.b64 _, [%0];" :: "r"(smem_addr(bar)) : "memory");
}

__device__ inline void mbar_wait(uint64_t *bar, uint32_t parity) {
    asm volatile(
        "{\n\t.reg .pred P;\n"
        "WAIT_%=:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\n\t"
        "@!P bra WAIT_%=;\n\t}"
        :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}

__global__ __launch_bounds__(THREADS)
void ragged_kernel(const float *x, float *out) {
    __shared__ float part[CW][COLS];
    __shared__ alignas(8) uint64_t done, free_bar;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        mbar_init(&done, CW);
        mbar_init(&free_bar, 1);
    }
    __syncthreads();
    if (warp < CW) {
        const int last = tiles_of(warp) - 1;
        for (int t = 0; t <= last; t++) {
            const float *src = x + ((size_t)blockIdx.x * NT + t) * TILE + warp * ROWS * COLS;
            float a0 = 0.0f, a1 = 0.0f;
            for (int r = 0; r < ROWS; r++) {
                a0 += src[r * COLS + lane];
                a1 += src[r * COLS + lane + 32];
            }
            if (t > 0) mbar_wait(&free_bar, (t - 1) & 1);
            part[warp][lane] = a0;
            part[warp][lane + 32] = a1;
            __syncwarp();
            if (lane == 0) {
                if (t == last) mbar_arrive_drop(&done);
                else mbar_arrive(&done);
            }
        }
    } else {
        for (int t = 0; t < NT; t++) {
            mbar_wait(&done, t & 1);
            float s0 = 0.0f, s1 = 0.0f;
            for (int w = 0; w < CW; w++)
                if (tiles_of(w) > t) {
                    s0 += part[w][lane];
                    s1 += part[w][lane + 32];
                }
            out[((size_t)blockIdx.x * NT + t) * COLS + lane] = s0;
            out[((size_t)blockIdx.x * NT + t) * COLS + lane + 32] = s1;
            __syncwarp();
            if (lane == 0) mbar_arrive(&free_bar);
        }
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const size_t n = (size_t)BLOCKS * NT * TILE, no = (size_t)BLOCKS * NT * COLS;
    std::vector<float> hx(n), ref(no), hy(no);
    uint32_t seed = 7202u;
    for (auto &v : hx) v = 2.0f * lcg_uniform(seed);
    for (int b = 0; b < BLOCKS; b++)
        for (int t = 0; t < NT; t++)
            for (int j = 0; j < COLS; j++) {
                float s = 0.0f;
                for (int w = 0; w < CW; w++) {
                    if (tiles_of(w) <= t) continue;
                    float a = 0.0f;
                    for (int r = 0; r < ROWS; r++) a += hx[((size_t)b * NT + t) * TILE + (w * ROWS + r) * COLS + j];
                    s += a;
                }
                ref[((size_t)b * NT + t) * COLS + j] = s;
            }
    float *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&dy, no * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, no * 4));  // NaN poison
        ragged_kernel<<<BLOCKS, THREADS>>>(dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, no * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < no; i++) {
            const double e = std::isfinite(hy[i]) ? fabs(hy[i] - ref[i]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err <= 1e-4;
    printf("arrive_drop_ragged blocks=%d tiles=%d max_abs_err=%.3g\n", BLOCKS, NT, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy);
    return ok ? 0 : 1;
}
