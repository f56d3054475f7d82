// streamk_fixup_flags.cu -- a stream-K split of a tiled reduction with the fix-up through per-tile
// flags (plain CUDA + libcu++, no TK, no MMA: the "MAC loop" is an integer multiply-add so the result
// is exact). The NT * K iterations (K per output tile) are cut into G equal contiguous ranges, one
// per block, so range boundaries fall inside tiles and a tile is covered by two or three blocks.
// A block walks its range tile segment by tile segment. A segment that starts at the tile's first
// iteration makes the block the tile's OWNER; every other segment (only a block's first one can be
// such) is a CONTRIBUTION: the block stores its partial accumulators into its own workspace row
// `part[block][*]`, `__syncthreads()`, and thread 0 counts itself in with
// `atomic_ref<int, device>(flag[t]).fetch_add(1, release)`. The owner knows from the range
// arithmetic how many blocks contribute (n_contrib); its thread 0 spins with `load(acquire)` until
// `flag[t] == n_contrib`, `__syncthreads()`, every thread adds the contributors' rows, stores the
// tile, and thread 0 resets `flag[t]` to 0 for the next launch (no other block touches it again in
// this launch). Owners wait only on contributions, which never wait, and all G blocks are resident
// (G = 132, one small block per SM), so the waits always end.
//
// NT = 96 tiles of 128 words, K = 40 iterations: out[t][j] = sum_k (k + 1) * A[t][k][j] (mod 2^32).
// Host checks every word over 3 launches.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda/atomic>

constexpr int T = 128, NT = 96, K = 40, G = 132, TOTAL = NT * K;
using dref = cuda::atomic_ref<int, cuda::thread_scope_device>;

__host__ __device__ inline int range_begin(int b) { return (int)((long long)b * TOTAL / G); }
__device__ inline int block_of(int it) {
    int b = (int)((long long)it * G / TOTAL);
    while (b + 1 < G && range_begin(b + 1) <= it) b++;
    while (range_begin(b) > it) b--;
    return b;
}

__global__ void __launch_bounds__(T) streamk(const unsigned *A, unsigned *part, int *flag, unsigned *out) {
    const int tid = threadIdx.x, blk = blockIdx.x;
    const int end = range_begin(blk + 1);
    int it = range_begin(blk);
    while (it < end) {
        const int t = it / K, tb = t * K, te = tb + K;
        const int seg_end = te < end ? te : end;
        unsigned acc = 0;
        for (int k = it - tb; k < seg_end - tb; k++) acc += (unsigned)(k + 1) * A[((size_t)t * K + k) * T + tid];
        if (it != tb) {
            part[(size_t)blk * T + tid] = acc;
            __syncthreads();
            if (tid == 0) dref(flag[t]).fetch_add(1, cuda::memory_order_release);
        } else {
            const int last = block_of(te - 1);
            const int n_contrib = last - blk;
            if (n_contrib > 0) {
                if (tid == 0)
                    while (dref(flag[t]).load(cuda::memory_order_acquire) != n_contrib) {
                    }
                __syncthreads();
                for (int c = blk + 1; c <= last; c++) acc += part[(size_t)c * T + tid];
                if (tid == 0) dref(flag[t]).store(0, cuda::memory_order_relaxed);
            }
            out[(size_t)t * T + tid] = acc;
        }
        it = seg_end;
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t na = (size_t)NT * K * T, no = (size_t)NT * T;
    std::vector<unsigned> h(na), want(no, 0u), got(no);
    uint32_t seed = 2024u;
    for (auto &v : h) { seed = seed * 1664525u + 1013904223u; v = seed; }
    for (int t = 0; t < NT; t++)
        for (int k = 0; k < K; k++)
            for (int j = 0; j < T; j++) want[(size_t)t * T + j] += (unsigned)(k + 1) * h[((size_t)t * K + k) * T + j];
    unsigned *dA, *dpart, *dout;
    int *dflag;
    CUDA_CHECK(cudaMalloc(&dA, na * 4));
    CUDA_CHECK(cudaMalloc(&dpart, (size_t)G * T * 4));
    CUDA_CHECK(cudaMalloc(&dout, no * 4));
    CUDA_CHECK(cudaMalloc(&dflag, NT * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(dA, h.data(), na * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dflag, 0, NT * sizeof(int)));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dout, 0x5a, no * 4));
        CUDA_CHECK(cudaMemset(dpart, 0xa5, (size_t)G * T * 4));
        streamk<<<G, T>>>(dA, dpart, dflag, dout);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(got.data(), dout, no * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < no; i++)
            if (got[i] != want[i]) { bad++; if (first < 0) first = (long)i; }
    }
    printf("streamk_fixup_flags tiles=%d blocks=%d wrong=%ld first_wrong=%ld\n", NT, G, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dpart); cudaFree(dout); cudaFree(dflag);
    return bad == 0 ? 0 : 1;
}
