// worklist_termination.cu -- a persistent dynamic WORK LIST with DISTRIBUTED TERMINATION DETECTION
// in global memory: the items are the nodes of a complete binary tree of depth 14 (32767 items,
// found as the work runs: an item of depth < 14 pushes its two children). Lane 0 of every warp
// claims a slot with `atomicAdd(head, 1)`, then spins (`ld.acquire.gpu`, `__nanosleep` back-off)
// until the slot's flag is raised -- or until the `pending` counter (items pushed and not yet
// finished) reads 0, which proves no item will ever be pushed again: the warp leaves. The item is
// broadcast to the warp by `__shfl_sync`; the warp hashes 32 sub-values and lane 0 adds the sum to
// the result. Lane 0 then pushes the children: `atomicAdd(pending, 2)` FIRST, `atomicAdd(tail, 2)`,
// the two slots stored, each published by `st.release.gpu` of its flag; only then does it retire
// its own item (`atom.add.release.gpu` of -1 on `pending`).
//
// 132 blocks x 128 threads (528 workers); the host checks the hash sum and the item count, over 3
// launches (queue, flags and counters re-initialised by the host before each).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 128, NB = 132, DEPTH = 14, NSLOT = (1 << (DEPTH + 1)) - 1;

struct Ctl { unsigned head, tail, pending, items, sum; };

__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(unsigned *p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void add_release(unsigned *p, unsigned v) {
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned mix(unsigned x) {
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    return x;
}

__global__ void __launch_bounds__(T) worklist(unsigned *queue, unsigned *flag, Ctl *ctl) {
    const int lane = threadIdx.x % 32;
    for (;;) {
        int item = -1;
        if (lane == 0) {
            const unsigned h = atomicAdd(&ctl->head, 1u);
            if (h < NSLOT) {
                unsigned ns = 32;
                for (;;) {
                    if (ld_acquire(&flag[h]) != 0u) { item = (int)queue[h]; break; }
                    if (ld_acquire(&ctl->pending) == 0u) break;
                    __nanosleep(ns);
                    if (ns < 1024) ns *= 2;
                }
            }
        }
        item = __shfl_sync(0xffffffffu, item, 0);
        if (item < 0) break;
        unsigned v = mix((unsigned)item * 32u + (unsigned)lane);
        for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) {
            atomicAdd(&ctl->sum, v);
            atomicAdd(&ctl->items, 1u);
            const int depth = 31 - __clz(item + 1);
            if (depth < DEPTH) {
                atomicAdd(&ctl->pending, 2u);
                const unsigned t = atomicAdd(&ctl->tail, 2u);
                queue[t] = 2u * (unsigned)item + 1u;
                queue[t + 1] = 2u * (unsigned)item + 2u;
                st_release(&flag[t], 1u);
                st_release(&flag[t + 1], 1u);
            }
            add_release(&ctl->pending, 0xffffffffu);
        }
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    unsigned want = 0;
    for (unsigned it = 0; it < (unsigned)NSLOT; it++)
        for (unsigned l = 0; l < 32; l++) {
            unsigned x = it * 32u + l;
            x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
            want += x;
        }
    unsigned *dq, *df;
    Ctl *dc;
    CUDA_CHECK(cudaMalloc(&dq, NSLOT * 4));
    CUDA_CHECK(cudaMalloc(&df, NSLOT * 4));
    CUDA_CHECK(cudaMalloc(&dc, sizeof(Ctl)));
    long bad = 0;
    Ctl got{};
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        const unsigned root = 0u, one = 1u;
        const Ctl init{0u, 1u, 1u, 0u, 0u};
        CUDA_CHECK(cudaMemset(df, 0, NSLOT * 4));
        CUDA_CHECK(cudaMemcpy(dq, &root, 4, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(df, &one, 4, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(dc, &init, sizeof(Ctl), cudaMemcpyHostToDevice));
        worklist<<<NB, T>>>(dq, df, dc);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(&got, dc, sizeof(Ctl), cudaMemcpyDeviceToHost));
        if (got.sum != want || got.items != (unsigned)NSLOT || got.pending != 0u) bad++;
    }
    printf("worklist_termination items=%u want_items=%d sum=%u want=%u pending=%u bad_launches=%ld\n", got.items, NSLOT,
           got.sum, want, got.pending, bad);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dq); cudaFree(df); cudaFree(dc);
    return bad == 0 ? 0 : 1;
}
