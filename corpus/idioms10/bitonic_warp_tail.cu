// bitonic_warp_tail.cu -- a shared-memory bitonic sort whose short-stride steps synchronise with
// `__syncwarp()` only (the "warp-synchronous tail" of sorting networks): for a compare-exchange
// distance j <= 32 the 32 threads of a warp touch exactly one 64-element segment of their own, so
// two consecutive steps that are both warp-local need only the warp's barrier; any step next to a
// longer-distance step (and the copy-out) needs `__syncthreads()`. The choice is made per step from
// this step's distance and the next one's (uniform over the block), so every `__syncthreads()` is
// reached by all threads (plain CUDA, no TK).
//
// SEGS = 2048 blocks of T = 512 threads, each sorting its own N = 1024 ints ascending (thread t
// loads and stores elements t and t + 512). The host checks every segment against std::sort, over
// 3 launches.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 512, N = 2 * T, SEGS = 2048;

__global__ __launch_bounds__(T)
void bitonic_sort(const int *x, int *y) {
    __shared__ int key_s[N];
    const int t = threadIdx.x;
    const int *src = x + (size_t)blockIdx.x * N;
    key_s[t] = src[t];
    key_s[t + T] = src[t + T];
    __syncthreads();
    for (int k = 2; k <= N; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            const int i = 2 * j * (t / j) + t % j;
            const int a = key_s[i], b = key_s[i + j];
            const bool up = (i & k) == 0;
            if ((a > b) == up) {
                key_s[i] = b;
                key_s[i + j] = a;
            }
            const int next_j = j > 1 ? j >> 1 : (k < N ? k : 0);
            if (j <= 32 && next_j <= 32 && next_j > 0)
                __syncwarp();
            else
                __syncthreads();
        }
    }
    int *dst = y + (size_t)blockIdx.x * N;
    dst[t] = key_s[t];
    dst[t + T] = key_s[t + T];
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)SEGS * N;
    std::vector<int> hx(n), want(n), hy(n);
    uint32_t seed = 31337u;
    for (auto &v : hx) { seed = seed * 1664525u + 1013904223u; v = (int)(seed >> 4) - (1 << 27); }
    want = hx;
    for (int s = 0; s < SEGS; s++) std::sort(want.begin() + (size_t)s * N, want.begin() + (size_t)(s + 1) * N);
    int *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&dy, n * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
    long bad = 0;
    long first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0, n * 4));
        bitonic_sort<<<SEGS, T>>>(dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
            if (hy[i] != want[i]) { bad++; if (first < 0) first = (long)i; }
    }
    printf("bitonic_warp_tail segs=%d n=%d wrong=%ld first_wrong=%ld\n", SEGS, N, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy);
    return bad == 0 ? 0 : 1;
}
