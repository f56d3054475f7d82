// ordered_splitk_turnstile.cu -- a deterministic split-K matrix-vector product: the SPLITS blocks of
// a row tile add their partials into the output in split order through a per-tile turnstile in
// global memory, written with libcu++ C++20 atomic waiting (`cuda::atomic_ref<int,
// cuda::thread_scope_device>`): thread 0 of split s loads the tile's `turn` with acquire and sleeps
// in `turn.wait(v, acquire)` until it reads s; `__syncthreads()` passes the turn to the block; every
// thread adds its partial into y (split 0 stores); `__syncthreads()` again, and thread 0 passes the
// turn on with `turn.store(s + 1, release)` + `turn.notify_all()`. The last split stores 0, so the
// turnstile is ready for the next launch with no host reset. Plain CUDA + libcu++, no inline PTX.
//
// y[r] = sum_k A[r][k] x[k]; R = 4096 rows, K = 4096; a tile is 128 rows (one a thread), K is cut
// in SPLITS = 4 ranges of 1024; grid (32, 4) = 128 blocks (all resident at once on an H100/H200,
// which the turnstile needs). The order of the additions is fixed, so the host checks y against
// the same order of float operations, over 3 launches.
#include <cuda/atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int R = 4096, K = 4096, TR = 128, SPLITS = 4, KS = K / SPLITS;

__global__ void __launch_bounds__(TR) splitk_ordered(const float *A, const float *x, float *y, int *turns) {
    const int tile = blockIdx.x, split = blockIdx.y, t = threadIdx.x, r = tile * TR + t;
    float p = 0.f;
    const float *a = A + (size_t)r * K + split * KS;
    const float *xs = x + split * KS;
    for (int k = 0; k < KS; k++) p = fmaf(a[k], xs[k], p);
    if (t == 0) {
        cuda::atomic_ref<int, cuda::thread_scope_device> turn(turns[tile]);
        int v = turn.load(cuda::memory_order_acquire);
        while (v != split) {
            turn.wait(v, cuda::memory_order_acquire);
            v = turn.load(cuda::memory_order_acquire);
        }
    }
    __syncthreads();
    if (split == 0) y[r] = p;
    else y[r] += p;
    __syncthreads();
    if (t == 0) {
        cuda::atomic_ref<int, cuda::thread_scope_device> turn(turns[tile]);
        turn.store(split + 1 == SPLITS ? 0 : split + 1, cuda::memory_order_release);
        turn.notify_all();
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    std::vector<float> A((size_t)R * K), x(K), want(R), got(R);
    uint32_t seed = 31u;
    for (auto &v : A) { seed = seed * 1664525u + 1013904223u; v = (float)((seed >> 9) & 0xffff) / 65536.f - 0.5f; }
    for (auto &v : x) { seed = seed * 1664525u + 1013904223u; v = (float)((seed >> 9) & 0xffff) / 65536.f - 0.5f; }
    for (int r = 0; r < R; r++) {
        float y = 0.f;
        for (int s = 0; s < SPLITS; s++) {
            float p = 0.f;
            for (int k = 0; k < KS; k++) p = fmaf(A[(size_t)r * K + s * KS + k], x[s * KS + k], p);
            y = s == 0 ? p : y + p;
        }
        want[r] = y;
    }
    float *dA, *dx, *dy;
    int *dturn;
    CUDA_CHECK(cudaMalloc(&dA, A.size() * 4));
    CUDA_CHECK(cudaMalloc(&dx, K * 4));
    CUDA_CHECK(cudaMalloc(&dy, R * 4));
    CUDA_CHECK(cudaMalloc(&dturn, (R / TR) * 4));
    CUDA_CHECK(cudaMemcpy(dA, A.data(), A.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dx, x.data(), K * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dturn, 0, (R / TR) * 4));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, R * 4));
        splitk_ordered<<<dim3(R / TR, SPLITS), TR>>>(dA, dx, dy, dturn);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(got.data(), dy, R * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < R; i++)
            if (!(fabsf(got[i] - want[i]) <= 1e-4f * (1.f + fabsf(want[i])))) { bad++; if (first < 0) first = i; }
    }
    printf("ordered_splitk_turnstile rows=%d splits=%d wrong=%ld first_wrong=%ld\n", R, SPLITS, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dx); cudaFree(dy); cudaFree(dturn);
    return bad == 0 ? 0 : 1;
}
