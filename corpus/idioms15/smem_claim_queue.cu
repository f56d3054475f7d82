// smem_claim_queue.cu -- a single-producer / multi-consumer work queue in shared memory: warp 0
// produces items into a ring of CAP slots, and three consumer warps CLAIM items in order with a
// shared-memory `fetch_add` on `head` (lane 0, the index broadcast by `__shfl_sync`), so which warp
// takes which item is decided at run time. The ring is guarded per slot: `freed[s]` counts the
// items consumed from slot s (the consumer of item i stores i / CAP + 1 with release once it has
// read the slot), the producer's lane 0 waits (acquire) until `freed[s]` reaches the lap of the item
// it is about to write; `tail` counts the items published (the producer's lane 0 stores i + 1 with
// release after `__syncwarp()`), a consumer's lane 0 waits (acquire) until `tail > i`. All indices
// are libcu++ `cuda::atomic_ref<int, cuda::thread_scope_block>` on `__shared__` ints; between lane
// 0's wait and the other lanes' accesses, and before lane 0's release, a `__syncwarp()`. Thread 0
// zeroes the indices before one `__syncthreads()`; no block barrier after it.
//
// 132 blocks x 128 threads; NITEMS = 384 items a block of 32 words; item i of block b:
// slot[lane] = x[b][i][lane] * 5 + i; out[b][i][lane] = slot[lane] ^ (slot[31 - lane] << 1). Host checks
// every item over 3 launches.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda/atomic>

constexpr int T = 128, CAP = 4, NITEMS = 384, NB = 132;
using ref_t = cuda::atomic_ref<int, cuda::thread_scope_block>;

__global__ void __launch_bounds__(T) claim_queue(const unsigned *x, unsigned *out) {
    __shared__ unsigned slot[CAP][32];
    __shared__ int tail, head;
    __shared__ int freed[CAP];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (threadIdx.x == 0) {
        tail = 0;
        head = 0;
        for (int s = 0; s < CAP; s++) freed[s] = 0;
    }
    __syncthreads();
    const unsigned *xb = x + (size_t)blockIdx.x * NITEMS * 32;
    unsigned *ob = out + (size_t)blockIdx.x * NITEMS * 32;
    if (warp == 0) {
        for (int i = 0; i < NITEMS; i++) {
            const int s = i % CAP, lap = i / CAP;
            if (lane == 0)
                while (ref_t(freed[s]).load(cuda::memory_order_acquire) < lap) {
                }
            __syncwarp();
            slot[s][lane] = xb[i * 32 + lane] * 5u + (unsigned)i;
            __syncwarp();
            if (lane == 0) ref_t(tail).store(i + 1, cuda::memory_order_release);
        }
    } else {
        for (;;) {
            int i = 0;
            if (lane == 0) i = ref_t(head).fetch_add(1, cuda::memory_order_relaxed);
            i = __shfl_sync(0xffffffffu, i, 0);
            if (i >= NITEMS) break;
            const int s = i % CAP;
            if (lane == 0)
                while (ref_t(tail).load(cuda::memory_order_acquire) <= i) {
                }
            __syncwarp();
            const unsigned v = slot[s][lane] ^ (slot[s][31 - lane] << 1);
            __syncwarp();
            if (lane == 0) ref_t(freed[s]).store(i / CAP + 1, cuda::memory_order_release);
            ob[i * 32 + lane] = v;
        }
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)NB * NITEMS * 32;
    std::vector<unsigned> h(n), want(n), got(n);
    uint32_t seed = 99u;
    for (auto &v : h) { seed = seed * 1664525u + 1013904223u; v = seed; }
    for (size_t it = 0; it < (size_t)NB * NITEMS; it++) {
        const unsigned i = (unsigned)(it % NITEMS);
        for (int l = 0; l < 32; l++) {
            const unsigned a = h[it * 32 + l] * 5u + i, b = h[it * 32 + 31 - l] * 5u + i;
            want[it * 32 + l] = a ^ (b << 1);
        }
    }
    unsigned *dx, *dout;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&dout, n * 4));
    CUDA_CHECK(cudaMemcpy(dx, h.data(), n * 4, cudaMemcpyHostToDevice));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dout, 0x5a, n * 4));
        claim_queue<<<NB, T>>>(dx, dout);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(got.data(), dout, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
            if (got[i] != want[i]) { bad++; if (first < 0) first = (long)i; }
    }
    printf("smem_claim_queue blocks=%d items=%d wrong=%ld first_wrong=%ld\n", NB, NITEMS, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dout);
    return bad == 0 ? 0 : 1;
}
