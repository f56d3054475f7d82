// rowsum_cpasync.cu -- memory-bound row and column sums of a bf16 matrix with cp.async
// (TK's non-TMA load_async) double buffering, warp-level and block-level syncs.
//
// Shapes: X is R x C bf16 (R % 64 == 0, C % 128 == 0); outputs fp32 rowsum[R] and
// colsum[C] (colsum is accumulated across blocks with atomicAdd; zeroed by the host).
// One block = 4 warps = 128 threads, one 64-row slab of X, walked in 128-column chunks.
// Warp w owns rows [16w, 16w+16) of the slab.
// Shared memory (dynamic, shared_allocator):
//   stripe[w][2]  st_bf<16,128>: warp w's private double buffer; ONLY warp w writes it
//                 (warp::load_async = cp.async + commit_group per lane) and ONLY warp w
//                 reads it, so warp::load_async_wait<N>() (cp.async.wait_group N +
//                 __syncwarp) is the whole synchronisation it needs.
//   colpart[w]    sv_fl<128>: warp w's column partial sums of the current chunk; read by
//                 ALL threads (thread t sums column t over the 4 warps), so writes and
//                 reads are separated by __syncthreads() -- a warp sync is too narrow --
//                 and a second __syncthreads() keeps the next chunk's writes behind the
//                 reads.
// No mbarriers, no TMA, no warp specialisation: every warp runs the same loop (same trip
// count), every __syncthreads() is reached by all 128 threads.
#include "kittens.cuh"
#include <cstdio>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int WARPS = 4;
constexpr int NUM_THREADS = WARPS * 32;
constexpr int CHUNK = 128;

using stripe_t = st_bf<16, CHUNK>;
using part_t   = sv_fl<CHUNK>;
using x_gl     = gl<bf16, 1, 1, -1, -1, stripe_t>;
using vec_gl   = gl<float, 1, 1, 1, -1>;

struct rowsum_globals { x_gl X; vec_gl rowsum; float *colsum; };

constexpr size_t SMEM_BYTES = WARPS * 2 * sizeof(stripe_t) + WARPS * sizeof(part_t) + 1024;

__global__ __launch_bounds__(NUM_THREADS)
void rowsum_cpasync_kernel(const __grid_constant__ rowsum_globals g) {
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    stripe_t (&stripe)[WARPS][2] = al.allocate<stripe_t, WARPS, 2>();
    part_t   (&colpart)[WARPS]   = al.allocate<part_t, WARPS>();

    const int w = warpid();
    const int row_tile = blockIdx.x * WARPS + w;   // in 16-row units
    const int n_chunks = g.X.cols() / CHUNK;

    rt_fl<16, CHUNK> x;
    typename rt_fl<16, CHUNK>::col_vec rsum;   // one value per row of the stripe
    typename rt_fl<16, CHUNK>::row_vec csum;   // one value per column of the chunk
    warp::zero(rsum);

    warp::load_async(stripe[w][0], g.X, {0, 0, row_tile, 0});   // prologue: chunk 0
    for (int k = 0; k < n_chunks; k++) {
        const int buf = k % 2;
        if (k + 1 < n_chunks) {
            // the other buffer was last read (warp::load) by this warp in iteration k - 1
            warp::load_async(stripe[w][buf ^ 1], g.X, {0, 0, row_tile, k + 1});
            warp::load_async_wait<1>();   // chunk k landed (chunk k + 1 may still fly); warp sync
        } else {
            warp::load_async_wait<0>();
        }
        warp::load(x, stripe[w][buf]);
        warp::row_sum(rsum, x, rsum);
        warp::col_sum(csum, x);
        warp::store(colpart[w], csum);
        __syncthreads();   // every warp's colpart is written before anyone reads it
        {
            const int t = threadIdx.x;   // column t of this chunk
            float s = colpart[0].data[t] + colpart[1].data[t] + colpart[2].data[t] + colpart[3].data[t];
            atomicAdd(&g.colsum[k * CHUNK + t], s);
        }
        __syncthreads();   // reads done before the next chunk overwrites colpart
    }
    warp::store(g.rowsum, rsum, {0, 0, 0, row_tile});
}

// ---------------------------------------------------------------------------------------
// host harness: deterministic inputs, CPU reference, max_abs_err, PASS/FAIL
// ---------------------------------------------------------------------------------------
#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int R = 8192, C = 4096;
    std::vector<bf16> hX((size_t)R * C);
    uint32_t seed = 5150u;
    for (auto &x : hX) x = __float2bfloat16(lcg_uniform(seed));

    bf16 *dX; float *drow, *dcol;
    CUDA_CHECK(cudaMalloc(&dX, hX.size() * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&drow, R * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dcol, C * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), hX.size() * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(drow, 0, R * sizeof(float)));
    CUDA_CHECK(cudaMemset(dcol, 0, C * sizeof(float)));

    rowsum_globals g{x_gl{dX, nullptr, nullptr, R, C}, vec_gl{drow, nullptr, nullptr, nullptr, R}, dcol};
    CUDA_CHECK(cudaFuncSetAttribute(rowsum_cpasync_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    rowsum_cpasync_kernel<<<R / 64, NUM_THREADS, SMEM_BYTES>>>(g);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    std::vector<float> hrow(R), hcol(C);
    CUDA_CHECK(cudaMemcpy(hrow.data(), drow, R * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hcol.data(), dcol, C * sizeof(float), cudaMemcpyDeviceToHost));
    std::vector<double> rref(R, 0.0), cref(C, 0.0);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            double v = __bfloat162float(hX[(size_t)r * C + c]);
            rref[r] += v;
            cref[c] += v;
        }
    double max_err = 0.0;
    for (int r = 0; r < R; r++) max_err = fmax(max_err, std::isfinite(hrow[r]) ? fabs(hrow[r] - rref[r]) : 1e30);
    for (int c = 0; c < C; c++) max_err = fmax(max_err, std::isfinite(hcol[c]) ? fabs(hcol[c] - cref[c]) : 1e30);
    bool ok = max_err <= 0.05;
    printf("rowsum_cpasync R=%d C=%d max_abs_err=%.5f\n", R, C, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(drow); cudaFree(dcol);
    return ok ? 0 : 1;
}
