// pdl_stats_chain.cu -- a chain of two kernels overlapped with programmatic dependent launch
// (PDL): each kernel is launched with `cudaLaunchAttributeProgrammaticStreamSerialization`, lets
// its dependent start early with `griddepcontrol.launch_dependents` at its top, and waits for its
// prerequisite grid with `griddepcontrol.wait` before it reads what that grid wrote (plain CUDA +
// inline PTX, no TK).
//
// Three rounds of a row normalisation, ping-ponging between buffers a and b (ROWS = 2048 rows of
// COLS = 1024):
//   row_stats(in)        -> stats[r] = (mean_r, 1 / sqrt(var_r + eps))
//   normalize(in, stats) -> out[r][j] = (in[r][j] - mean_r) * rstd_r * gamma[j]
// launched as S0(a) N0(a -> b) S1(b) N1(b -> a) S2(a) N2(a -> b). One block per row, 256 threads,
// 4 columns each. row_stats waits before it reads `in` (written by the previous normalize);
// normalize reads gamma (written by no kernel) before its wait, then thread 0 waits, reads the row's
// stats into the shared pair st_s and `__syncthreads()` hands them (and the visibility of the
// prerequisite grid's writes, made visible to the whole grid by the wait) to the block.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int ROWS = 2048, COLS = 1024, THREADS = 256, PER = COLS / THREADS, ROUNDS = 3;
constexpr float EPS = 1e-5f;

__device__ inline void pdl_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
__device__ inline void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

__global__ __launch_bounds__(THREADS)
void row_stats(const float *in, float2 *stats) {
    __shared__ float red_s[2][THREADS / 32];
    pdl_launch_dependents();
    pdl_wait();
    const float *xr = in + (size_t)blockIdx.x * COLS;
    float s = 0.0f, q = 0.0f;
    for (int k = 0; k < PER; k++) {
        const float v = xr[threadIdx.x + k * THREADS];
        s += v;
        q += v * v;
    }
    for (int off = 16; off > 0; off >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, off);
        q += __shfl_xor_sync(0xffffffffu, q, off);
    }
    if (threadIdx.x % 32 == 0) {
        red_s[0][threadIdx.x / 32] = s;
        red_s[1][threadIdx.x / 32] = q;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float ts = 0.0f, tq = 0.0f;
        for (int w = 0; w < THREADS / 32; w++) {
            ts += red_s[0][w];
            tq += red_s[1][w];
        }
        const float mean = ts / COLS;
        const float var = fmaxf(tq / COLS - mean * mean, 0.0f);
        stats[blockIdx.x] = make_float2(mean, rsqrtf(var + EPS));
    }
}

__global__ __launch_bounds__(THREADS)
void normalize(const float *in, const float2 *stats, const float *gamma, float *out) {
    __shared__ float2 st_s;
    pdl_launch_dependents();
    float g[PER];
    for (int k = 0; k < PER; k++) g[k] = gamma[threadIdx.x + k * THREADS];
    if (threadIdx.x == 0) {
        pdl_wait();
        st_s = stats[blockIdx.x];
    }
    __syncthreads();
    const float2 st = st_s;
    const float *xr = in + (size_t)blockIdx.x * COLS;
    float *yr = out + (size_t)blockIdx.x * COLS;
    for (int k = 0; k < PER; k++) {
        const int j = threadIdx.x + k * THREADS;
        yr[j] = (xr[j] - st.x) * st.y * g[k];
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

// launch with programmatic stream serialisation: the kernel may start once its predecessor in the
// stream has triggered (griddepcontrol.launch_dependents in every block) or exited
template <typename... Params, typename... Args>
static cudaError_t launch_pdl(void (*kernel)(Params...), cudaStream_t stream, Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(ROWS);
    cfg.blockDim = dim3(THREADS);
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}

int main() {
    const size_t n = (size_t)ROWS * COLS;
    std::vector<float> hx(n), hg(COLS), hy(n);
    uint32_t seed = 6505u;
    for (auto &v : hx) v = 4.0f * lcg_uniform(seed) + 0.25f;
    for (auto &v : hg) v = 1.0f + lcg_uniform(seed);
    // reference: ROUNDS rounds in double
    std::vector<double> cur(hx.begin(), hx.end()), nxt(n);
    for (int it = 0; it < ROUNDS; it++) {
        for (int r = 0; r < ROWS; r++) {
            const double *xr = cur.data() + (size_t)r * COLS;
            double s = 0.0, q = 0.0;
            for (int j = 0; j < COLS; j++) { s += xr[j]; q += xr[j] * xr[j]; }
            const double mean = s / COLS, var = fmax(q / COLS - mean * mean, 0.0), rstd = 1.0 / sqrt(var + EPS);
            for (int j = 0; j < COLS; j++) nxt[(size_t)r * COLS + j] = (xr[j] - mean) * rstd * hg[j];
        }
        cur.swap(nxt);
    }
    float *da, *db, *dg;
    float2 *dstats;
    CUDA_CHECK(cudaMalloc(&da, n * 4));
    CUDA_CHECK(cudaMalloc(&db, n * 4));
    CUDA_CHECK(cudaMalloc(&dg, COLS * 4));
    CUDA_CHECK(cudaMalloc(&dstats, ROWS * sizeof(float2)));
    CUDA_CHECK(cudaMemcpy(dg, hg.data(), COLS * 4, cudaMemcpyHostToDevice));
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemcpy(da, hx.data(), n * 4, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(db, 0xff, n * 4));  // NaN poison
        CUDA_CHECK(cudaMemset(dstats, 0xff, ROWS * sizeof(float2)));
        CUDA_CHECK(cudaDeviceSynchronize());
        float *src = da, *dst = db;
        for (int it = 0; it < ROUNDS; it++) {
            CUDA_CHECK(launch_pdl(row_stats, stream, (const float *)src, dstats));
            CUDA_CHECK(launch_pdl(normalize, stream, (const float *)src, (const float2 *)dstats, (const float *)dg, dst));
            float *t = src; src = dst; dst = t;
        }
        CUDA_CHECK(cudaStreamSynchronize(stream));
        CUDA_CHECK(cudaMemcpy(hy.data(), src, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) {
            const double e = std::isfinite(hy[i]) ? fabs(hy[i] - cur[i]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    const bool ok = max_err <= 2e-3;
    printf("pdl_stats_chain rows=%d cols=%d rounds=%d max_abs_err=%.3g\n", ROWS, COLS, ROUNDS, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(da); cudaFree(db); cudaFree(dg); cudaFree(dstats);
    cudaStreamDestroy(stream);
    return ok ? 0 : 1;
}
