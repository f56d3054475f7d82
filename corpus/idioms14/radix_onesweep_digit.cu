// radix_onesweep_digit.cu -- one digit pass of a "onesweep" radix sort (Adinets and Merrill): an
// upsweep kernel counts the 16 digit values of the pass over all keys; the onesweep kernel then
// takes tiles in a dynamic order (thread 0 draws the tile index from a global counter and
// broadcasts it through a `__shared__` int), ranks each key inside its tile with a shared-memory
// atomic on the digit's counter, and runs a decoupled look-back PER DIGIT: thread d (d < 16)
// publishes the tile's count of digit d as an aggregate in a packed status word (flag in bits
// 30-31: 1 aggregate, 2 inclusive prefix; count in bits 0-29) with `cuda::atomic_ref::store(
// release)`, walks back over the previous tiles' words for digit d (spinning with acquire loads
// while a word is still 0), adds aggregates until it meets an inclusive prefix, publishes its own
// inclusive prefix, and leaves the tile's base for digit d in `__shared__` `base[d]`. After a block
// barrier every thread scatters its keys to base[digit] + rank. Plain CUDA + libcu++, no TK.
//
// N = 2^20 keys, tiles of 2048 (256 threads x 8), 512 tiles = 512 blocks; digit = (key >> 4) & 15.
// The dynamic tile order makes the look-back progress whatever order the blocks start in. The host
// checks that every output position holds a key of its bucket's digit and that every bucket holds
// exactly the input's keys of that digit (the order inside a bucket is not fixed), over 3 launches
// (counter, status words and histogram cleared by the host before each).
#include <cuda/atomic>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 256, ITEMS = 8, TILE = T * ITEMS, N = 1 << 20, NT = N / TILE, SHIFT = 4;
constexpr unsigned FLAG_AGG = 1u << 30, FLAG_INC = 2u << 30, MASK = (1u << 30) - 1u;

__global__ void __launch_bounds__(T) upsweep(const unsigned *in, unsigned *hist) {
    __shared__ unsigned h[16];
    if (threadIdx.x < 16) h[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * T + threadIdx.x; i < N; i += gridDim.x * T) atomicAdd(&h[(in[i] >> SHIFT) & 15u], 1u);
    __syncthreads();
    if (threadIdx.x < 16) atomicAdd(&hist[threadIdx.x], h[threadIdx.x]);
}

__global__ void __launch_bounds__(T) onesweep(const unsigned *in, unsigned *out, const unsigned *hist,
                                              unsigned *status, int *tile_ctr) {
    __shared__ int tile_s;
    __shared__ unsigned cnt[16], base[16];
    const int tid = threadIdx.x;
    if (tid == 0) tile_s = atomicAdd(tile_ctr, 1);
    if (tid < 16) cnt[tid] = 0;
    __syncthreads();
    const int tile = tile_s;
    unsigned key[ITEMS], rank[ITEMS];
    for (int j = 0; j < ITEMS; j++) {
        key[j] = in[tile * TILE + j * T + tid];
        rank[j] = atomicAdd(&cnt[(key[j] >> SHIFT) & 15u], 1u);
    }
    __syncthreads();
    if (tid < 16) {
        const int d = tid;
        const unsigned agg = cnt[d];
        unsigned start = 0;
        for (int e = 0; e < d; e++) start += hist[e];
        cuda::atomic_ref<unsigned, cuda::thread_scope_device> mine(status[tile * 16 + d]);
        mine.store((tile == 0 ? FLAG_INC : FLAG_AGG) | agg, cuda::memory_order_release);
        unsigned prefix = 0;
        for (int j = tile - 1; j >= 0; j--) {
            cuda::atomic_ref<unsigned, cuda::thread_scope_device> prev(status[j * 16 + d]);
            unsigned w;
            do { w = prev.load(cuda::memory_order_acquire); } while ((w >> 30) == 0u);
            prefix += w & MASK;
            if ((w >> 30) == 2u) break;
        }
        if (tile > 0) mine.store(FLAG_INC | (prefix + agg), cuda::memory_order_release);
        base[d] = start + prefix;
    }
    __syncthreads();
    for (int j = 0; j < ITEMS; j++) out[base[(key[j] >> SHIFT) & 15u] + rank[j]] = key[j];
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    std::vector<unsigned> h(N), got(N);
    uint32_t seed = 2024u;
    for (auto &v : h) { seed = seed * 1664525u + 1013904223u; v = seed; }
    std::vector<std::vector<unsigned>> want(16);
    for (unsigned v : h) want[(v >> SHIFT) & 15u].push_back(v);
    for (auto &b : want) std::sort(b.begin(), b.end());
    unsigned *din, *dout, *dhist, *dstatus;
    int *dctr;
    CUDA_CHECK(cudaMalloc(&din, N * 4));
    CUDA_CHECK(cudaMalloc(&dout, N * 4));
    CUDA_CHECK(cudaMalloc(&dhist, 16 * 4));
    CUDA_CHECK(cudaMalloc(&dstatus, NT * 16 * 4));
    CUDA_CHECK(cudaMalloc(&dctr, 4));
    CUDA_CHECK(cudaMemcpy(din, h.data(), N * 4, cudaMemcpyHostToDevice));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dout, 0xff, N * 4));
        CUDA_CHECK(cudaMemset(dhist, 0, 16 * 4));
        CUDA_CHECK(cudaMemset(dstatus, 0, NT * 16 * 4));
        CUDA_CHECK(cudaMemset(dctr, 0, 4));
        upsweep<<<132, T>>>(din, dhist);
        CUDA_CHECK(cudaGetLastError());
        onesweep<<<NT, T>>>(din, dout, dhist, dstatus, dctr);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(got.data(), dout, N * 4, cudaMemcpyDeviceToHost));
        size_t p = 0;
        for (int d = 0; d < 16; d++) {
            std::vector<unsigned> b(got.begin() + p, got.begin() + p + want[d].size());
            std::sort(b.begin(), b.end());
            for (size_t i = 0; i < b.size(); i++)
                if (b[i] != want[d][i]) { bad++; if (first < 0) first = (long)(p + i); }
            p += want[d].size();
        }
    }
    printf("radix_onesweep_digit keys=%d tiles=%d wrong=%ld first_wrong=%ld\n", N, NT, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(din); cudaFree(dout); cudaFree(dhist); cudaFree(dstatus); cudaFree(dctr);
    return bad == 0 ? 0 : 1;
}
