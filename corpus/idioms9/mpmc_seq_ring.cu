// mpmc_seq_ring.cu -- a bounded multi-producer / multi-consumer queue in global memory between the
// blocks of one grid (Vyukov's sequence-number ring, one warp per operation): every slot carries a
// sequence number. A producer warp reserves a position with `atomicAdd(&tail, 1)` (lane 0, the
// position broadcast by `__shfl_sync`), lane 0 spins until the slot's sequence equals the position
// (`ld.acquire.gpu`: the consumer of the previous lap has finished reading it), `__syncwarp()`, the
// 32 lanes write the payload, `__syncwarp()`, lane 0 publishes sequence = position + 1
// (`st.release.gpu`). A consumer warp reserves with `atomicAdd(&head, 1)`, lane 0 spins until
// sequence = position + 1 (acquire), `__syncwarp()`, the lanes read the payload, `__syncwarp()`,
// lane 0 hands the slot to the next lap with sequence = position + S (release). No block barrier,
// no mbarrier (plain CUDA + inline PTX, no TK).
//
// P = 8 producer blocks and C = 8 consumer blocks (all resident at once: 16 blocks of 128
// threads), 4 warps each; S = 16 slots of 32 ints; each producer warp enqueues ITEMS = 64 items
// (id = its global warp index * ITEMS + i, payload[lane] = id * 131 + lane * 7), NITEMS = 2048 in
// all; consumers dequeue until the head passes NITEMS and write out[id][lane] = payload[lane] + 1.
// The host checks every element of out and that every item came out once.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int P = 8, C = 8, WARPS = 4, S = 16, ITEMS = 64, NITEMS = P * WARPS * ITEMS;

struct Ring {
    unsigned tail, head;
    unsigned seq[S];
    int id[S];
    int payload[S][32];
};

__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(unsigned *p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

__global__ __launch_bounds__(WARPS * 32)
void mpmc(Ring *q, int *out) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (blockIdx.x < P) {
        const int gw = blockIdx.x * WARPS + warp;
        for (int i = 0; i < ITEMS; i++) {
            unsigned pos = 0;
            if (lane == 0) pos = atomicAdd(&q->tail, 1u);
            pos = __shfl_sync(0xffffffffu, pos, 0);
            const int slot = pos % S;
            if (lane == 0)
                while (ld_acquire(&q->seq[slot]) != pos) __nanosleep(32);
            __syncwarp();
            const int id = gw * ITEMS + i;
            q->payload[slot][lane] = id * 131 + lane * 7;
            if (lane == 0) q->id[slot] = id;
            __syncwarp();
            if (lane == 0) st_release(&q->seq[slot], pos + 1);
        }
    } else {
        for (;;) {
            unsigned pos = 0;
            if (lane == 0) pos = atomicAdd(&q->head, 1u);
            pos = __shfl_sync(0xffffffffu, pos, 0);
            if (pos >= (unsigned)NITEMS) break;
            const int slot = pos % S;
            if (lane == 0)
                while (ld_acquire(&q->seq[slot]) != pos + 1) __nanosleep(32);
            __syncwarp();
            const int v = q->payload[slot][lane];
            const int id = q->id[slot];
            __syncwarp();
            if (lane == 0) st_release(&q->seq[slot], pos + S);
            out[(size_t)id * 32 + lane] = v + 1;
        }
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    Ring init{};
    for (int s = 0; s < S; s++) init.seq[s] = s;
    Ring *dq;
    int *dout;
    std::vector<int> hout((size_t)NITEMS * 32);
    CUDA_CHECK(cudaMalloc(&dq, sizeof(Ring)));
    CUDA_CHECK(cudaMalloc(&dout, hout.size() * 4));
    long bad = 0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemcpy(dq, &init, sizeof(Ring), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(dout, 0xff, hout.size() * 4));
        mpmc<<<P + C, WARPS * 32>>>(dq, dout);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hout.data(), dout, hout.size() * 4, cudaMemcpyDeviceToHost));
        for (int id = 0; id < NITEMS; id++)
            for (int l = 0; l < 32; l++) bad += hout[(size_t)id * 32 + l] != id * 131 + l * 7 + 1;
    }
    printf("mpmc_seq_ring items=%d slots=%d out[0][1]=%d bad=%ld\n", NITEMS, S, hout[1], bad);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dq); cudaFree(dout);
    return bad == 0 ? 0 : 1;
}
