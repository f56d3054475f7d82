// lookback_scan.cu -- a single-pass inclusive prefix sum with decoupled look-back (the CUB / Merrill
// and Garland "single-pass parallel prefix scan" shape): every tile publishes its own aggregate as
// soon as it is known (status A), then walks back over its predecessors' status words, adding
// aggregates until it meets an inclusive prefix (status P), and publishes its own inclusive prefix.
// Tile order comes from a global `atomicAdd` ticket (a block only ever waits on tiles whose blocks
// already started, so no block waits on one that is not resident). Status words and values live in
// separate global arrays: `agg[t]` / `incl[t]` are plain stores released by `st.release.gpu` of
// `flag[t]` (0 = X, not yet; 1 = A, aggregate; 2 = P, inclusive prefix), read after an
// `ld.acquire.gpu` of the flag. Thread 0 does the look-back; the exclusive prefix and the ticket
// reach the other threads through `__shared__` scalars behind `__syncthreads()` (plain CUDA + PTX).
//
// TILES = 4096 tiles of 1024 ints (256 threads x 4). The host checks every output exactly over 3
// launches (flags, ticket and values re-poisoned each launch).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 256, ITEMS = 4, TILE = T * ITEMS, TILES = 4096, WARPS = T / 32;

__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(unsigned *p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__global__ __launch_bounds__(T)
void scan_lookback(const int *in, int *out, unsigned *flag, int *agg, int *incl, unsigned *ticket) {
    __shared__ unsigned tile_s;
    __shared__ int warp_s[WARPS];
    __shared__ int excl_s;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    if (tid == 0) tile_s = atomicAdd(ticket, 1u);
    __syncthreads();
    const unsigned tile = tile_s;
    const int *src = in + (size_t)tile * TILE + tid * ITEMS;
    int v[ITEMS], run = 0;
    for (int i = 0; i < ITEMS; i++) { run += src[i]; v[i] = run; }
    int x = run;  // inclusive warp scan of the threads' sums
    for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) warp_s[warp] = x;
    __syncthreads();
    int before = 0, total = 0;
    for (int w = 0; w < WARPS; w++) {
        if (w < warp) before += warp_s[w];
        total += warp_s[w];
    }
    before += x - run;  // sum of every element before this thread's first
    if (tid == 0) {
        if (tile == 0) {
            incl[0] = total;
            st_release(&flag[0], 2u);
            excl_s = 0;
        } else {
            agg[tile] = total;
            st_release(&flag[tile], 1u);
            int excl = 0;
            for (int p = (int)tile - 1; p >= 0; --p) {
                unsigned f;
                while ((f = ld_acquire(&flag[p])) == 0u) {
                }
                if (f == 2u) {
                    excl += incl[p];
                    break;
                }
                excl += agg[p];
            }
            incl[tile] = excl + total;
            st_release(&flag[tile], 2u);
            excl_s = excl;
        }
    }
    __syncthreads();
    const int base = excl_s + before;
    int *dst = out + (size_t)tile * TILE + tid * ITEMS;
    for (int i = 0; i < ITEMS; i++) dst[i] = base + v[i];
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)TILES * TILE;
    std::vector<int> hx(n), want(n), hout(n);
    uint32_t seed = 12345u;
    for (auto &v : hx) { seed = seed * 1664525u + 1013904223u; v = (int)((seed >> 9) % 201u) - 100; }
    int acc = 0;
    for (size_t i = 0; i < n; i++) { acc += hx[i]; want[i] = acc; }
    int *din, *dout, *dagg, *dincl;
    unsigned *dflag, *dticket;
    CUDA_CHECK(cudaMalloc(&din, n * 4));
    CUDA_CHECK(cudaMalloc(&dout, n * 4));
    CUDA_CHECK(cudaMalloc(&dagg, TILES * 4));
    CUDA_CHECK(cudaMalloc(&dincl, TILES * 4));
    CUDA_CHECK(cudaMalloc(&dflag, TILES * 4));
    CUDA_CHECK(cudaMalloc(&dticket, 4));
    CUDA_CHECK(cudaMemcpy(din, hx.data(), n * 4, cudaMemcpyHostToDevice));
    long bad = 0;
    long first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dout, 0x7f, n * 4));
        CUDA_CHECK(cudaMemset(dagg, 0x5a, TILES * 4));   // poison: a value read before its flag shows
        CUDA_CHECK(cudaMemset(dincl, 0x5a, TILES * 4));
        CUDA_CHECK(cudaMemset(dflag, 0, TILES * 4));
        CUDA_CHECK(cudaMemset(dticket, 0, 4));
        scan_lookback<<<TILES, T>>>(din, dout, dflag, dagg, dincl, dticket);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hout.data(), dout, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
            if (hout[i] != want[i]) { bad++; if (first < 0) first = (long)i; }
    }
    printf("lookback_scan tiles=%d wrong=%ld first_wrong=%ld\n", TILES, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(din); cudaFree(dout); cudaFree(dagg); cudaFree(dincl); cudaFree(dflag); cudaFree(dticket);
    return bad == 0 ? 0 : 1;
}
