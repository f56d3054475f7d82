// spinlock_accum.cu -- blocks fold their statistics into one shared global accumulator under a
// global spin lock: thread 0 of each block takes the lock with `atomicCAS(lock, 0, 1)` (spinning
// with `__nanosleep`), `__threadfence()` (acquire side), updates the four fields of the
// accumulator with plain (volatile) loads and stores, `__threadfence()` (release side), and
// releases the lock with `atomicExch(lock, 0)` (plain CUDA, no TK).
//
// BLOCKS = 1056 blocks of 256 threads, CHUNK = 4096 ints a block (16 a thread, values in
// [-1000, 1000]). Each block reduces its chunk to (sum, sum of squares, max): warp shuffles,
// the 8 warp results in ws/wq/wm (lane 0 of each warp), __syncthreads, thread 0 adds the 8. Then
// thread 0 alone, under the lock: acc.sum += sum, acc.sumsq += sumsq, acc.max = max(acc.max, max),
// acc.blocks += 1. The host checks the four fields exactly (integers).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <climits>
#include <vector>

constexpr int THREADS = 256, WARPS = THREADS / 32, PER = 16, CHUNK = THREADS * PER, BLOCKS = 1056;

struct Acc {
    long long sum, sumsq;
    int max, blocks;
};

__global__ __launch_bounds__(THREADS)
void locked_accum_kernel(const int *x, Acc *acc, int *lock) {
    __shared__ long long ws[WARPS], wq[WARPS];
    __shared__ int wm[WARPS];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    long long s = 0, q = 0;
    int m = INT_MIN;
    for (int k = 0; k < PER; k++) {
        const int v = x[(size_t)blockIdx.x * CHUNK + threadIdx.x + k * THREADS];
        s += v;
        q += (long long)v * v;
        m = v > m ? v : m;
    }
    for (int o = 16; o > 0; o >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, o);
        q += __shfl_xor_sync(0xffffffffu, q, o);
        m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    }
    if (lane == 0) {
        ws[warp] = s;
        wq[warp] = q;
        wm[warp] = m;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        long long bs = 0, bq = 0;
        int bm = INT_MIN;
        for (int w = 0; w < WARPS; w++) {
            bs += ws[w];
            bq += wq[w];
            bm = max(bm, wm[w]);
        }
        while (atomicCAS(lock, 0, 1) != 0) __nanosleep(32);
        __threadfence();
        volatile Acc *a = acc;
        a->sum = a->sum + bs;
        a->sumsq = a->sumsq + bq;
        if (bm > a->max) a->max = bm;
        a->blocks = a->blocks + 1;
        __threadfence();
        atomicExch(lock, 0);
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)BLOCKS * CHUNK;
    std::vector<int> hx(n);
    uint32_t seed = 7505u;
    long long rs = 0, rq = 0;
    int rm = INT_MIN;
    for (auto &v : hx) {
        seed = seed * 1664525u + 1013904223u;
        v = (int)((seed >> 8) % 2001u) - 1000;
        rs += v;
        rq += (long long)v * v;
        rm = v > rm ? v : rm;
    }
    int *dx, *dlock;
    Acc *dacc;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&dacc, sizeof(Acc)));
    CUDA_CHECK(cudaMalloc(&dlock, sizeof(int)));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
    bool ok = true;
    Acc h{};
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        const Acc zero{0, 0, INT_MIN, 0};
        CUDA_CHECK(cudaMemcpy(dacc, &zero, sizeof(Acc), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(dlock, 0, sizeof(int)));
        locked_accum_kernel<<<BLOCKS, THREADS>>>(dx, dacc, dlock);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(&h, dacc, sizeof(Acc), cudaMemcpyDeviceToHost));
        ok = ok && h.sum == rs && h.sumsq == rq && h.max == rm && h.blocks == BLOCKS;
    }
    printf("spinlock_accum blocks=%d sum=%lld/%lld sumsq=%lld/%lld max=%d/%d seen=%d\n", BLOCKS, h.sum, rs, h.sumsq, rq,
           h.max, rm, h.blocks);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dacc); cudaFree(dlock);
    return ok ? 0 : 1;
}
