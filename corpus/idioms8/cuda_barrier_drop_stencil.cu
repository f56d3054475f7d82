// cuda_barrier_drop_stencil.cu -- a shrinking 1-D relaxation in shared memory synchronised by one
// libcu++ `cuda::barrier<cuda::thread_scope_block>` used as a split barrier: every thread writes
// its new value, `arrive()`s (keeping the token), does register-only work, then `wait()`s on the
// token; threads whose part of the domain is finished leave the barrier for good with
// `arrive_and_drop()`, so every later phase expects one arrival fewer (plain CUDA + libcu++, no
// inline PTX, no TK).
//
// Block b relaxes a row of W = 256 floats for K = 12 sweeps, ping-ponging between b_s[0] and
// b_s[1] (each with a zero halo at index 0 and W + 1). Sweep k updates the active prefix
// t < A(k) = W - 16 k: nxt[t] = 0.5 cur[t] + 0.25 (cur[t - 1] + cur[t + 1]) + 0.01 k; elements
// t >= A(k) are frozen. 256 threads, thread t owns element t.
// Thread t is active in sweeps k < L(t) = min(K, (W - t + 15) / 16). At sweep L(t) (if < K) it
// copies its final value into the buffer sweep L(t) writes (so both buffers hold it), arrives with
// arrive_and_drop() and writes its outputs; the others read that copy after the phase's wait.
// Between arrive and wait an active thread folds its new value into a weighted running sum
// (registers only): out2[t] = sum_k (k + 1) v_k(t).
// The ping-pong needs one barrier phase a sweep: sweep k writes the buffer sweep k - 1 read, and
// every reader of sweep k - 1 arrived before any writer of sweep k passed that phase's wait.
// Bar init: thread 0 `init(&bar, W)`, then __syncthreads before any use.
#include <cuda/barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

#pragma nv_diag_suppress static_var_with_dynamic_init

constexpr int W = 256, K = 12, BLOCKS = 1056;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

__global__ __launch_bounds__(W)
void drop_stencil(const float *x, float *out, float *out2) {
    __shared__ float b_s[2][W + 2];
    __shared__ block_barrier bar;
    const int t = threadIdx.x;
    if (t == 0) {
        init(&bar, W);
        b_s[0][0] = b_s[0][W + 1] = b_s[1][0] = b_s[1][W + 1] = 0.0f;
    }
    const float x0 = x[(size_t)blockIdx.x * W + t];
    b_s[0][t + 1] = x0;
    b_s[1][t + 1] = x0;
    __syncthreads();
    const int last = min(K, (W - t + 15) / 16);
    float v = x0, acc = 0.0f;
    for (int k = 0; k < K; k++) {
        const float *cur = b_s[k & 1];
        float *nxt = b_s[(k + 1) & 1];
        if (k == last) {
            nxt[t + 1] = v;
            bar.arrive_and_drop();
            break;
        }
        v = 0.5f * cur[t + 1] + 0.25f * (cur[t] + cur[t + 2]) + 0.01f * k;
        nxt[t + 1] = v;
        auto tok = bar.arrive();
        acc += (k + 1) * v;
        bar.wait(std::move(tok));
    }
    out[(size_t)blockIdx.x * W + t] = v;
    out2[(size_t)blockIdx.x * W + t] = acc;
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const size_t n = (size_t)BLOCKS * W;
    std::vector<float> hx(n), ref(n), ref2(n), hy(n), hy2(n);
    uint32_t seed = 8101u;
    for (auto &v : hx) v = 2.0f * lcg_uniform(seed);
    for (int b = 0; b < BLOCKS; b++) {
        std::vector<double> cur(W + 2, 0.0), nxt(W + 2, 0.0), acc(W, 0.0);
        for (int t = 0; t < W; t++) cur[t + 1] = nxt[t + 1] = hx[(size_t)b * W + t];
        for (int k = 0; k < K; k++) {
            const int active = W - 16 * k;
            for (int t = 0; t < W; t++) nxt[t + 1] = cur[t + 1];
            for (int t = 0; t < active; t++) {
                nxt[t + 1] = 0.5 * cur[t + 1] + 0.25 * (cur[t] + cur[t + 2]) + 0.01 * k;
                acc[t] += (k + 1) * nxt[t + 1];
            }
            std::swap(cur, nxt);
        }
        for (int t = 0; t < W; t++) { ref[(size_t)b * W + t] = (float)cur[t + 1]; ref2[(size_t)b * W + t] = (float)acc[t]; }
    }
    float *dx, *dy, *dy2;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&dy, n * 4));
    CUDA_CHECK(cudaMalloc(&dy2, n * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, n * 4));  // NaN poison
        CUDA_CHECK(cudaMemset(dy2, 0xff, n * 4));
        drop_stencil<<<BLOCKS, W>>>(dx, dy, dy2);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, n * 4, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(hy2.data(), dy2, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) {
            const double e = std::isfinite(hy[i]) ? fabs(hy[i] - ref[i]) / (1.0 + fabs(ref[i])) : 1e30;
            const double e2 = std::isfinite(hy2[i]) ? fabs(hy2[i] - ref2[i]) / (1.0 + fabs(ref2[i])) : 1e30;
            max_err = fmax(max_err, fmax(e, e2));
        }
    }
    const bool ok = max_err <= 1e-4;
    printf("cuda_barrier_drop_stencil blocks=%d sweeps=%d max_rel_err=%.3g\n", BLOCKS, K, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy); cudaFree(dy2);
    return ok ? 0 : 1;
}
