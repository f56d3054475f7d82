// ws_chained_scan.cu -- a single-pass inclusive prefix sum with a warp-specialised block: eight
// scan warps and one "chain" warp that waits for the previous tile's inclusive prefix in global
// memory, polling its flag with `ld.acquire.gpu` and an exponential `__nanosleep` back-off, and
// publishes its own with `st.release.gpu` (plain CUDA + PTX, no TK). Tiles are taken in order
// from a global ticket (atomicAdd), so the tile a block waits for is always held by a running
// block.
//
// out[i] = x[0] + ... + x[i] over N = 2^20 ints; a tile is 2048 ints (8 per scan thread).
// 288 threads: warps 0..7 scan, warp 8 chains (lane 0 does the work).
// Named barriers (each 288 threads, bar.arrive by one side and bar.sync by the other):
//   1: the chain warp took the ticket and wrote tile_s -> the scan warps read it;
//   3: the scan warps wrote the tile's total to agg_s -> the chain warp reads it;
//   4: the chain warp wrote the tile's exclusive prefix to excl_s -> the scan warps read it.
//   Barrier 2 (256 threads) is the scan warps' own, between warp totals and their scan.
// Chain: tile t > 0 polls flag[t - 1] (back-off 32 ns doubling to 1 us), reads incl[t - 1]
//   (ordered by the acquire), stores incl[t] = prefix + total with a plain store, then
//   st.release.gpu flag[t] = 1 (the release orders the value before the flag).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int N = 1 << 20, PER = 8, SCAN_THREADS = 256, TILE = SCAN_THREADS * PER, NT = N / TILE;
constexpr int THREADS = SCAN_THREADS + 32;

__device__ __forceinline__ void named_sync(int id, int count) {
    asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int count) {
    asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ int poll_flag(const int *p) {
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void raise_flag(int *p) {
    asm volatile("st.release.gpu.global.b32 [%0], %1;" :: "l"(p), "r"(1) : "memory");
}

__global__ __launch_bounds__(THREADS, 1)
void chained_scan_kernel(const int *x, int *out, int *incl, int *flag, int *ticket) {
    __shared__ int tile_s, agg_s, excl_s;
    __shared__ int wsum_s[8];
    if (threadIdx.x >= SCAN_THREADS) {
        if (threadIdx.x == SCAN_THREADS) tile_s = atomicAdd(ticket, 1);
        __syncwarp();
        named_arrive(1, THREADS);
        named_sync(3, THREADS);
        if (threadIdx.x == SCAN_THREADS) {
            const int t = tile_s;
            int prefix = 0;
            if (t > 0) {
                unsigned ns = 32;
                while (poll_flag(&flag[t - 1]) == 0) {
                    __nanosleep(ns);
                    if (ns < 1024) ns *= 2;
                }
                prefix = incl[t - 1];
            }
            incl[t] = prefix + agg_s;
            raise_flag(&flag[t]);
            excl_s = prefix;
        }
        __syncwarp();
        named_arrive(4, THREADS);
        return;
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    named_sync(1, THREADS);
    const int t = tile_s;
    const int *xt = x + (size_t)t * TILE + threadIdx.x * PER;
    int v[PER];
    int run = 0;
#pragma unroll
    for (int i = 0; i < PER; i++) { run += xt[i]; v[i] = run; }
    int inc = run;
    for (int o = 1; o < 32; o <<= 1) {
        const int u = __shfl_up_sync(0xffffffffu, inc, o);
        if (lane >= o) inc += u;
    }
    if (lane == 31) wsum_s[warp] = inc;
    named_sync(2, SCAN_THREADS);
    int before = 0, total = 0;
    for (int w = 0; w < 8; w++) {
        const int s = wsum_s[w];
        if (w < warp) before += s;
        total += s;
    }
    if (threadIdx.x == 0) agg_s = total;
    named_arrive(3, THREADS);
    named_sync(4, THREADS);
    const int base = excl_s + before + inc - run;
    int *o = out + (size_t)t * TILE + threadIdx.x * PER;
#pragma unroll
    for (int i = 0; i < PER; i++) o[i] = base + v[i];
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    std::vector<int> hx(N), ref(N);
    uint32_t seed = 5309u;
    long long acc = 0;
    for (int i = 0; i < N; i++) {
        seed = seed * 1664525u + 1013904223u;
        hx[i] = (int)(seed >> 29);  // 0..7
        acc += hx[i];
        ref[i] = (int)acc;
    }
    int *dx, *dout, *dincl, *dflag, *dticket;
    CUDA_CHECK(cudaMalloc(&dx, N * 4));
    CUDA_CHECK(cudaMalloc(&dout, N * 4));
    CUDA_CHECK(cudaMalloc(&dincl, NT * 4));
    CUDA_CHECK(cudaMalloc(&dflag, NT * 4));
    CUDA_CHECK(cudaMalloc(&dticket, 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), N * 4, cudaMemcpyHostToDevice));
    std::vector<int> hout(N);
    long long bad = 0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dout, 0xff, N * 4));
        CUDA_CHECK(cudaMemset(dincl, 0xff, NT * 4));
        CUDA_CHECK(cudaMemset(dflag, 0, NT * 4));
        CUDA_CHECK(cudaMemset(dticket, 0, 4));
        chained_scan_kernel<<<NT, THREADS>>>(dx, dout, dincl, dflag, dticket);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hout.data(), dout, N * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) bad += hout[i] != ref[i];
    }
    printf("ws_chained_scan N=%d tiles=%d mismatches=%lld\n", N, NT, bad);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dout); cudaFree(dincl); cudaFree(dflag); cudaFree(dticket);
    return bad == 0 ? 0 : 1;
}
