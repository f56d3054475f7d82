// persistent_steal_doneflags.cu -- a persistent kernel whose blocks steal chunks from one global
// work counter and whose final combine waits on per-BLOCK done flags (no last-block counter): thread
// 0 draws a chunk with `atomicAdd(next, 1)` into the `__shared__` int `chunk_s`, `__syncthreads()`,
// every thread reads it (all leave together once it passes NCHUNK), works on the chunk, and a
// `__syncthreads()` at the end of the iteration keeps thread 0 from overwriting `chunk_s` while others
// still read it. When the counter runs dry a block reduces its threads' running totals (warp
// shuffles, `wsum[8]` + `__syncthreads()`), thread 0 stores `partial[b]` and raises `done[b] = epoch`
// with `atomic_ref<unsigned, device>::store(release)` (the launch number as epoch: no reset between
// launches). Block 0 then waits for every block: thread t < G spins with `load(acquire)` until
// `done[t] == epoch`, `__syncthreads()`, and warp 0 sums the partials. Only block 0 waits, and it
// waits on blocks that never wait, so no co-residency is needed.
//
// G = 132 blocks x 256 threads; NCHUNK = 2048 chunks of 1024 words; y[c][j] = x[c][j]^2 + c, total =
// sum of all y (mod 2^32). The host resets `next` before each of the 3 launches and checks every y
// and the total.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda/atomic>

constexpr int T = 256, G = 132, NCHUNK = 2048, CW = 1024;
using uref = cuda::atomic_ref<unsigned, cuda::thread_scope_device>;

__global__ void __launch_bounds__(T) steal(const unsigned *x, int *next, unsigned *y, unsigned *partial,
                                           unsigned *done, unsigned epoch, unsigned *total) {
    __shared__ int chunk_s;
    __shared__ unsigned wsum[T / 32];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    unsigned mine = 0;
    for (;;) {
        if (tid == 0) chunk_s = atomicAdd(next, 1);
        __syncthreads();
        const int c = chunk_s;
        if (c >= NCHUNK) break;
        for (int j = tid; j < CW; j += T) {
            const unsigned w = x[(size_t)c * CW + j];
            const unsigned v = w * w + (unsigned)c;
            y[(size_t)c * CW + j] = v;
            mine += v;
        }
        __syncthreads();
    }
    for (int d = 16; d > 0; d /= 2) mine += __shfl_xor_sync(0xffffffffu, mine, d);
    if (lane == 0) wsum[warp] = mine;
    __syncthreads();
    if (tid == 0) {
        unsigned p = 0;
        for (int w = 0; w < T / 32; w++) p += wsum[w];
        partial[blockIdx.x] = p;
        uref(done[blockIdx.x]).store(epoch, cuda::memory_order_release);
    }
    if (blockIdx.x != 0) return;
    if (tid < G)
        while (uref(done[tid]).load(cuda::memory_order_acquire) != epoch) {
        }
    __syncthreads();
    if (tid < 32) {
        unsigned s = 0;
        for (int b = tid; b < G; b += 32) s += partial[b];
        for (int d = 16; d > 0; d /= 2) s += __shfl_xor_sync(0xffffffffu, s, d);
        if (tid == 0) *total = s;
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)NCHUNK * CW;
    std::vector<unsigned> h(n), want(n), got(n);
    uint32_t seed = 31337u;
    for (auto &v : h) { seed = seed * 1664525u + 1013904223u; v = seed; }
    unsigned want_total = 0;
    for (size_t i = 0; i < n; i++) {
        want[i] = h[i] * h[i] + (unsigned)(i / CW);
        want_total += want[i];
    }
    unsigned *dx, *dy, *dpart, *ddone, *dtotal;
    int *dnext;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&dy, n * 4));
    CUDA_CHECK(cudaMalloc(&dpart, G * 4));
    CUDA_CHECK(cudaMalloc(&ddone, G * 4));
    CUDA_CHECK(cudaMalloc(&dtotal, 4));
    CUDA_CHECK(cudaMalloc(&dnext, 4));
    CUDA_CHECK(cudaMemcpy(dx, h.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(ddone, 0, G * 4));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        unsigned got_total = 0;
        CUDA_CHECK(cudaMemset(dnext, 0, 4));
        CUDA_CHECK(cudaMemset(dy, 0x5a, n * 4));
        CUDA_CHECK(cudaMemset(dtotal, 0x5a, 4));
        steal<<<G, T>>>(dx, dnext, dy, dpart, ddone, (unsigned)(rep + 1), dtotal);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(got.data(), dy, n * 4, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&got_total, dtotal, 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
            if (got[i] != want[i]) { bad++; if (first < 0) first = (long)i; }
        if (got_total != want_total) { bad++; if (first < 0) first = (long)n; }
    }
    printf("persistent_steal_doneflags blocks=%d chunks=%d wrong=%ld first_wrong=%ld\n", G, NCHUNK, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy); cudaFree(dpart); cudaFree(ddone); cudaFree(dtotal); cudaFree(dnext);
    return bad == 0 ? 0 : 1;
}
