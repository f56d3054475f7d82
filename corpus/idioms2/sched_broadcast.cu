// sched_broadcast.cu -- persistent kernel with a tile-scheduler warp: lane 0 of warp 0 takes tile
// indices from a global atomic counter and broadcasts each through a double-buffered slot in
// shared memory; a sentinel (-1) ends the workers. TK semaphores, no TMA.
//
// y = x * x + 1 over NT tiles of 1024 floats; 160 threads = warp 0 scheduler + warps 1..4
// workers (warp w handles elements 256 (w - 1) .. + 255 of a tile, 8 per lane).
// Shared: tile_s[NSLOT=2] ints.
// Barriers: slot_full[b] (1): the scheduler's arrive after writing tile_s[b];
//   slot_empty[b] (4): lane 0 of each worker warp after the whole warp has read tile_s[b]
//   (__syncwarp first; TK's thread-scope arrive arrives once per calling thread, hence the guard). Scheduler waits slot_empty with sph ^ 1 (fresh barrier: the first round
//   passes), workers wait slot_full with ph; both flip their phase when the slot index wraps.
// The scheduler publishes the sentinel like any tile and exits; the workers all read it from the
// same slot and exit (their last slot_empty arrivals are never waited for).
#include "kittens.cuh"
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int NSLOT = 2, WORKERS = 4, TILE = 1024;

__global__ __launch_bounds__(160, 1)
void sched_kernel(const float *X, float *Y, int *counter, int NT) {
    __shared__ int tile_s[NSLOT];
    __shared__ semaphore slot_full[NSLOT], slot_empty[NSLOT];
    if (threadIdx.x == 0) {
        for (int i = 0; i < NSLOT; i++) {
            init_semaphore(slot_full[i], 1, 0);
            init_semaphore(slot_empty[i], WORKERS, 0);
        }
    }
    __syncthreads();

    if (warpid() == 0) {
        if (laneid() == 0) {
            int sb = 0, sph = 0;
            for (;;) {
                wait(slot_empty[sb], sph ^ 1);
                const int t = atomicAdd(counter, 1);
                tile_s[sb] = t < NT ? t : -1;
                arrive(slot_full[sb]);
                if (t >= NT) break;
                if (++sb == NSLOT) { sb = 0; sph ^= 1; }
            }
        }
    } else {
        const int w = warpid() - 1;
        int b = 0, ph = 0;
        for (;;) {
            wait(slot_full[b], ph);
            const int t = tile_s[b];
            __syncwarp();
            if (laneid() == 0) arrive(slot_empty[b]);
            if (t < 0) break;
            const size_t base = (size_t)t * TILE + w * 256;
            for (int j = 0; j < 8; j++) {
                const float v = X[base + j * 32 + laneid()];
                Y[base + j * 32 + laneid()] = v * v + 1.0f;
            }
            if (++b == NSLOT) { b = 0; ph ^= 1; }
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
    const int NT = 16384;
    std::vector<float> hX((size_t)NT * TILE);
    uint32_t seed = 2504u;
    for (auto &v : hX) v = 4.0f * lcg_uniform(seed);
    float *dX, *dY; int *dC;
    CUDA_CHECK(cudaMalloc(&dX, hX.size() * 4));
    CUDA_CHECK(cudaMalloc(&dY, hX.size() * 4));
    CUDA_CHECK(cudaMalloc(&dC, 4));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), hX.size() * 4, cudaMemcpyHostToDevice));
    std::vector<float> hY(hX.size());
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dY, 0xff, hX.size() * 4));  // NaN poison
        CUDA_CHECK(cudaMemset(dC, 0, 4));
        sched_kernel<<<132, 160>>>(dX, dY, dC, NT);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hY.data(), dY, hY.size() * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < hY.size(); i++) {
            const double ref = (double)hX[i] * hX[i] + 1.0;
            double e = std::isfinite(hY[i]) ? fabs(hY[i] - ref) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    bool ok = max_err <= 1e-4;
    printf("sched_broadcast NT=%d max_abs_err=%.6f\n", NT, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dY); cudaFree(dC);
    return ok ? 0 : 1;
}
