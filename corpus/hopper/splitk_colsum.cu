// splitk_colsum.cu -- column sums of a bf16 matrix, split over the rows (split-K style), with a
// last-arriver reduction through global memory and a per-block tile index broadcast in shared
// memory.
//
// Shapes: X is R x C bf16 (C % 128 == 0, R % (SPLITS * 2) == 0); out[C] fp32.
// Grid: (C / 128 column tiles, SPLITS row slices); 256 threads = 8 warps per block.
//   thread 0 reads the block's column tile from `order` (a permutation of the tiles: the
//   scheduler) into the shared scalar `tile_s`; __syncthreads() publishes it to every warp.
//   Thread t sums column t % 128 over half (t / 128) of the block's row slice; the two halves
//   meet in shared memory (`half_s`, __syncthreads() between write and read), and threads
//   0-127 store the slice's partial sums with plain stores to `partials`.
// Global protocol (per column tile):
//   __syncthreads() gathers the block's stores, then thread 0 runs __threadfence() (release
//   pattern: fence + relaxed atomic) and atomicAdd(&counters[tile], 1); the block whose add
//   returns SPLITS - 1 is the last one: thread 0 writes that into the shared flag `am_last`,
//   __syncthreads() publishes it, and the last block's threads run __threadfence() (acquire
//   pattern: they observed the count, through the flag and the barrier) before reading the
//   SPLITS partials of every column; thread 0 then resets the counter for the next launch.
#include "kittens.cuh"
#include <cstdio>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int COLS_PER_TILE = 128;
constexpr int SPLITS = 4;
constexpr int THREADS = 256;

__global__ __launch_bounds__(THREADS, 1)
void splitk_colsum_kernel(const bf16 *x, const int *order, float *partials, unsigned *counters,
                          float *out, int rows, int cols) {
    __shared__ int tile_s;
    __shared__ bool am_last;
    __shared__ float half_s[COLS_PER_TILE];

    if (threadIdx.x == 0) tile_s = order[blockIdx.x];
    __syncthreads();   // the tile index is visible to every warp
    const int tile = tile_s;
    const int split = blockIdx.y;
    const int c = threadIdx.x % COLS_PER_TILE, half = threadIdx.x / COLS_PER_TILE;
    const int slice = rows / SPLITS, half_rows = slice / 2;
    const int col = tile * COLS_PER_TILE + c;

    float s = 0.0f;
    for (int r = 0; r < half_rows; r++)
        s += __bfloat162float(x[(size_t)(split * slice + half * half_rows + r) * cols + col]);
    if (half == 1) half_s[c] = s;
    __syncthreads();   // the second half's sums are written before the first half reads them
    if (half == 0) partials[(tile * SPLITS + split) * COLS_PER_TILE + c] = s + half_s[c];
    __syncthreads();   // every partial of the block is stored before the count

    if (threadIdx.x == 0) {
        __threadfence();   // release: the block's partials before the count
        unsigned old = atomicAdd(&counters[tile], 1);
        am_last = (old == SPLITS - 1);
    }
    __syncthreads();   // the flag is visible to every warp
    if (am_last) {
        __threadfence();   // acquire: the other blocks' partials after the count
        if (half == 0) {
            float acc = 0.0f;
            for (int sp = 0; sp < SPLITS; sp++) acc += partials[(tile * SPLITS + sp) * COLS_PER_TILE + c];
            out[col] = acc;
        }
        if (threadIdx.x == 0) counters[tile] = 0;   // ready for the next launch
    }
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
    const int R = 4096, C = 8192;
    const int tiles = C / COLS_PER_TILE;
    std::vector<bf16> hX((size_t)R * C);
    uint32_t seed = 2718u;
    for (auto &v : hX) v = __float2bfloat16(lcg_uniform(seed));
    std::vector<int> hOrder(tiles);
    for (int i = 0; i < tiles; i++) hOrder[i] = (i * 37) % tiles;   // 37 is prime to 64: a permutation

    bf16 *dX; int *dOrder; float *dPart, *dOut; unsigned *dCnt;
    CUDA_CHECK(cudaMalloc(&dX, hX.size() * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dOrder, tiles * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dPart, (size_t)tiles * SPLITS * COLS_PER_TILE * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dOut, C * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dCnt, tiles * sizeof(unsigned)));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), hX.size() * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dOrder, hOrder.data(), tiles * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dCnt, 0, tiles * sizeof(unsigned)));
    CUDA_CHECK(cudaMemset(dOut, 0, C * sizeof(float)));

    for (int rep = 0; rep < 3; rep++)   // the counters reset themselves between launches
        splitk_colsum_kernel<<<dim3(tiles, SPLITS), THREADS>>>(dX, dOrder, dPart, dCnt, dOut, R, C);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    std::vector<float> hOut(C);
    CUDA_CHECK(cudaMemcpy(hOut.data(), dOut, C * sizeof(float), cudaMemcpyDeviceToHost));
    double max_err = 0.0;
    for (int c = 0; c < C; c++) {
        double ref = 0.0;
        for (int r = 0; r < R; r++) ref += __bfloat162float(hX[(size_t)r * C + c]);
        max_err = std::fmax(max_err, std::fabs(ref - hOut[c]));
    }
    printf("max_abs_err=%g\n", max_err);
    const bool ok = max_err < 1e-2;
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dOrder); cudaFree(dPart); cudaFree(dOut); cudaFree(dCnt);
    return ok ? 0 : 1;
}
