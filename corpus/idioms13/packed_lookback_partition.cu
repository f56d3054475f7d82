// packed_lookback_partition.cu -- a single-pass STABLE PARTITION (even keys first, odd keys apart)
// with decoupled look-back over PACKED status words: the status (0 invalid, 1 aggregate, 2
// inclusive prefix) and the tile's even count share one 64-bit word, written by one
// `st.release.gpu.u64` and read by one `ld.acquire.gpu.u64`, so flag and value can never be seen
// apart. Tiles are taken in launch order from an `atomicAdd` ticket broadcast through the shared
// scalar `tile_s`; the block counts its even keys (4 a thread) with a warp `__shfl_up_sync`
// scan and per-warp totals in `warp_s` behind `__syncthreads()`. Thread 0 publishes the
// aggregate, looks back over the predecessors (spinning while a status is 0, adding aggregates
// until an inclusive prefix), publishes its own inclusive prefix and hands the exclusive count to
// the block through `excl_s` and a `__syncthreads()`; every thread then scatters its evens to
// `even_out[excl + rank]` and its odds to `odd_out[tile * 1024 - excl + rank]`.
//
// 2048 tiles of 1024 keys (256 threads a block); the host checks both outputs against a stable
// partition, over 3 launches (status words and ticket zeroed before each).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 256, IPT = 4, TILE = T * IPT, NT = 2048;

__device__ __forceinline__ unsigned long long ld_acquire64(const unsigned long long *p) {
    unsigned long long v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release64(unsigned long long *p, unsigned long long v) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__global__ void __launch_bounds__(T)
partition(const unsigned *keys, unsigned *even_out, unsigned *odd_out, unsigned long long *status, unsigned *ticket) {
    __shared__ unsigned tile_s, excl_s;
    __shared__ unsigned warp_s[T / 32];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    if (tid == 0) tile_s = atomicAdd(ticket, 1u);
    __syncthreads();
    const unsigned tile = tile_s;
    unsigned k[IPT], mine = 0;
    for (int j = 0; j < IPT; j++) {
        k[j] = keys[tile * TILE + tid * IPT + j];
        mine += (k[j] & 1u) == 0u;
    }
    // exclusive scan of `mine` over the block: shuffles inside the warp, warp totals in warp_s
    unsigned incl = mine;
    for (int o = 1; o < 32; o *= 2) {
        const unsigned y = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += y;
    }
    if (lane == 31) warp_s[warp] = incl;
    __syncthreads();
    unsigned before = 0, total = 0;
    for (int w = 0; w < T / 32; w++) {
        if (w < warp) before += warp_s[w];
        total += warp_s[w];
    }
    const unsigned rank = before + incl - mine;
    if (tid == 0) {
        unsigned excl = 0;
        if (tile == 0) {
            st_release64(&status[0], (2ull << 32) | total);
        } else {
            st_release64(&status[tile], (1ull << 32) | total);
            for (int p = (int)tile - 1; p >= 0; p--) {
                unsigned long long w;
                do { w = ld_acquire64(&status[p]); } while ((w >> 32) == 0ull);
                excl += (unsigned)w;
                if ((w >> 32) == 2ull) break;
            }
            st_release64(&status[tile], (2ull << 32) | (excl + total));
        }
        excl_s = excl;
    }
    __syncthreads();
    const unsigned excl = excl_s;
    unsigned e = excl + rank, o = tile * TILE - excl + (unsigned)(tid * IPT) - rank;
    for (int j = 0; j < IPT; j++) {
        if ((k[j] & 1u) == 0u) even_out[e++] = k[j];
        else odd_out[o++] = k[j];
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const int n = NT * TILE;
    std::vector<unsigned> h(n), want_e, want_o, got_e(n), got_o(n);
    uint32_t seed = 31337u;
    for (auto &v : h) { seed = seed * 1664525u + 1013904223u; v = seed >> 3; }
    for (unsigned v : h) ((v & 1u) == 0u ? want_e : want_o).push_back(v);
    unsigned *dk, *de, *dod, *dt;
    unsigned long long *ds;
    CUDA_CHECK(cudaMalloc(&dk, n * 4));
    CUDA_CHECK(cudaMalloc(&de, n * 4));
    CUDA_CHECK(cudaMalloc(&dod, n * 4));
    CUDA_CHECK(cudaMalloc(&ds, NT * 8));
    CUDA_CHECK(cudaMalloc(&dt, 4));
    CUDA_CHECK(cudaMemcpy(dk, h.data(), n * 4, cudaMemcpyHostToDevice));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(ds, 0, NT * 8));
        CUDA_CHECK(cudaMemset(dt, 0, 4));
        CUDA_CHECK(cudaMemset(de, 0xff, n * 4));
        CUDA_CHECK(cudaMemset(dod, 0xff, n * 4));
        partition<<<NT, T>>>(dk, de, dod, ds, dt);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(got_e.data(), de, n * 4, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(got_o.data(), dod, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < want_e.size(); i++)
            if (got_e[i] != want_e[i]) { bad++; if (first < 0) first = (long)i; }
        for (size_t i = 0; i < want_o.size(); i++)
            if (got_o[i] != want_o[i]) { bad++; if (first < 0) first = (long)i; }
    }
    printf("packed_lookback_partition tiles=%d evens=%zu wrong=%ld first_wrong=%ld\n", NT, want_e.size(), bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dk); cudaFree(de); cudaFree(dod); cudaFree(ds); cudaFree(dt);
    return bad == 0 ? 0 : 1;
}
