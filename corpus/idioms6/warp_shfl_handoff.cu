// warp_shfl_handoff.cu -- a warp split in two half-warps that reduce different quantities with
// `__shfl_down_sync(mask, v, off, 16)` under partial masks (0x0000ffff for lanes 0-15, 0xffff0000
// for lanes 16-31) inside a divergent branch, hand their results to the whole warp through
// per-warp shared slots, and meet at `__syncwarp()` (full mask) before the slots are read and
// again before they are rewritten for the next row; the other half's value comes back with a
// full-mask `__shfl_sync` (plain CUDA, no block barrier anywhere, no TK).
//
// Rows of 32 floats, one per warp iteration (a warp walks RPW = 64 rows). For row r:
//   lo = sum of x[r][0..15], hi = max |x[r][16..31]|,
//   y[r][j] = (x[r][j] - lo / 16) / (1 + hi) + x[r][31 - j] / 8.
// Lanes 0-15 reduce lo (lane 0 writes lo_s[warp]), lanes 16-31 reduce hi (lane 16 writes
// hi_s[warp]); the mirrored element x[r][31 - j] comes from lane 31 - j by `__shfl_sync`.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int WARPS = 8, THREADS = 32 * WARPS, RPW = 64, BLOCKS = 528;
constexpr int ROWS = BLOCKS * WARPS * RPW;
constexpr unsigned FULL = 0xffffffffu, LO = 0x0000ffffu, HI = 0xffff0000u;

__global__ __launch_bounds__(THREADS)
void handoff_kernel(const float *x, float *y) {
    __shared__ float lo_s[WARPS];
    __shared__ float hi_s[WARPS];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const size_t first = ((size_t)blockIdx.x * WARPS + warp) * RPW;
    for (int r = 0; r < RPW; r++) {
        const size_t row = first + r;
        const float v = x[row * 32 + lane];
        if (lane < 16) {
            float s = v;
            for (int off = 8; off > 0; off >>= 1) s += __shfl_down_sync(LO, s, off, 16);
            if (lane == 0) lo_s[warp] = s;
        } else {
            float m = fabsf(v);
            for (int off = 8; off > 0; off >>= 1) m = fmaxf(m, __shfl_down_sync(HI, m, off, 16));
            if (lane == 16) hi_s[warp] = m;
        }
        __syncwarp();
        const float mirror = __shfl_sync(FULL, v, 31 - lane);
        y[row * 32 + lane] = (v - lo_s[warp] / 16.0f) / (1.0f + hi_s[warp]) + mirror / 8.0f;
        __syncwarp();
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const size_t n = (size_t)ROWS * 32;
    std::vector<float> hx(n), ref(n), hy(n);
    uint32_t seed = 6404u;
    for (auto &v : hx) v = 4.0f * lcg_uniform(seed);
    for (int r = 0; r < ROWS; r++) {
        const float *xr = hx.data() + (size_t)r * 32;
        double lo = 0.0, hi = 0.0;
        for (int j = 0; j < 16; j++) lo += xr[j];
        for (int j = 16; j < 32; j++) hi = fmax(hi, fabs(xr[j]));
        for (int j = 0; j < 32; j++) ref[(size_t)r * 32 + j] = (float)((xr[j] - lo / 16.0) / (1.0 + hi) + xr[31 - j] / 8.0);
    }
    float *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&dy, n * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, n * 4));  // NaN poison
        handoff_kernel<<<BLOCKS, THREADS>>>(dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) {
            const double e = std::isfinite(hy[i]) ? fabs(hy[i] - ref[i]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err <= 1e-4;
    printf("warp_shfl_handoff rows=%d blocks=%d max_abs_err=%.3g\n", ROWS, BLOCKS, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy);
    return ok ? 0 : 1;
}
