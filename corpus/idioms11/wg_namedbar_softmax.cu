// wg_namedbar_softmax.cu -- a row softmax where each of the block's four warpgroups owns its rows and
// synchronises only its own 128 threads, through a named barrier whose id it computes
// (`bar.sync %0, %1` with id = 1 + warpgroup, count 128, in inline PTX; id 0 stays
// `__syncthreads()`'s). A row's maximum and sum are reduced with shuffles inside each warp, the
// four warp partials go through per-warpgroup `__shared__` slots (`max_s[wg][w]`, `sum_s[wg][w]`),
// and one named-barrier sync after each write makes them visible to the warpgroup; the next row's
// write of `max_s` comes after the sum's barrier, which every warp passes only after reading
// `max_s`, so two barriers a row are enough. A bias row is staged in shared memory by the whole
// block once, behind `__syncthreads()`. Plain CUDA + inline PTX.
//
// ROWS = 4096 rows of COLS = 4096 floats, 128 blocks x 4 warpgroups, 8 rows per warpgroup;
// y = softmax(x + bias) per row. The host checks every element against a double-precision reference
// (max abs error < 1e-6) over 3 launches.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 512, WGS = 4, COLS = 4096, ROWS = 4096, BLOCKS = 128, PER = COLS / 128,
              ROWS_PER_WG = ROWS / (BLOCKS * WGS);

__device__ __forceinline__ void wg_bar(int id, int count) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}

__global__ __launch_bounds__(T)
void softmax_wg(const float *x, const float *bias, float *y) {
    __shared__ float bias_s[COLS];
    __shared__ float max_s[WGS][4];
    __shared__ float sum_s[WGS][4];
    const int tid = threadIdx.x, wg = tid / 128, w = (tid / 32) % 4, lane = tid % 32, t = tid % 128;
    for (int c = tid; c < COLS; c += T) bias_s[c] = bias[c];
    __syncthreads();
    const int bar_id = 1 + wg;
    for (int r = 0; r < ROWS_PER_WG; r++) {
        const size_t row = ((size_t)blockIdx.x * WGS + wg) * ROWS_PER_WG + r;
        const float *xr = x + row * COLS;
        float v[PER];
        float m = -INFINITY;
        for (int i = 0; i < PER; i++) {
            v[i] = xr[i * 128 + t] + bias_s[i * 128 + t];
            m = fmaxf(m, v[i]);
        }
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (lane == 0) max_s[wg][w] = m;
        wg_bar(bar_id, 128);
        m = fmaxf(fmaxf(max_s[wg][0], max_s[wg][1]), fmaxf(max_s[wg][2], max_s[wg][3]));
        float s = 0.f;
        for (int i = 0; i < PER; i++) {
            v[i] = __expf(v[i] - m);
            s += v[i];
        }
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) sum_s[wg][w] = s;
        wg_bar(bar_id, 128);
        const float inv = 1.f / (sum_s[wg][0] + sum_s[wg][1] + sum_s[wg][2] + sum_s[wg][3]);
        float *yr = y + row * COLS;
        for (int i = 0; i < PER; i++) yr[i * 128 + t] = v[i] * inv;
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)ROWS * COLS;
    std::vector<float> hx(n), hb(COLS), hy(n);
    std::vector<double> want(n);
    uint32_t seed = 2024u;
    auto rnd = [&]() { seed = seed * 1664525u + 1013904223u; return (float)((seed >> 8) % 20001u) / 1000.f - 10.f; };
    for (auto &v : hx) v = rnd();
    for (auto &v : hb) v = rnd() * 0.3f;
    for (int r = 0; r < ROWS; r++) {
        double m = -1e300, s = 0;
        for (int c = 0; c < COLS; c++) m = std::fmax(m, (double)hx[(size_t)r * COLS + c] + hb[c]);
        for (int c = 0; c < COLS; c++) s += std::exp((double)hx[(size_t)r * COLS + c] + hb[c] - m);
        for (int c = 0; c < COLS; c++) want[(size_t)r * COLS + c] = std::exp((double)hx[(size_t)r * COLS + c] + hb[c] - m) / s;
    }
    float *dx, *db, *dy;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&db, COLS * 4));
    CUDA_CHECK(cudaMalloc(&dy, n * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db, hb.data(), COLS * 4, cudaMemcpyHostToDevice));
    double err = 0;
    long bad = 0;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0x7f, n * 4));
        softmax_wg<<<BLOCKS, T>>>(dx, db, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) {
            const double e = std::fabs((double)hy[i] - want[i]);
            if (!(e < 1e-6)) bad++;
            if (e > err || e != e) err = e;
        }
    }
    printf("wg_namedbar_softmax rows=%d max_abs_err=%g wrong=%ld\n", ROWS, err, bad);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(db); cudaFree(dy);
    return bad == 0 ? 0 : 1;
}
