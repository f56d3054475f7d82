// seqlock_snapshot.cu -- a sequence lock (seqlock) in global memory: one writer warp updates a
// record of W words while reader warps in other blocks take consistent snapshots without a lock.
// The writer's lane 0 makes the sequence number odd, `__threadfence()`, `__syncwarp()`; lanes
// 0..W-1 store the record (volatile); `__syncwarp()`; lane 0 `__threadfence()` and stores the
// next even number with `st.release.gpu`, then the warp sleeps 2 us (`__nanosleep`) so that
// readers find windows between versions. A reader's lane 0 loads the sequence number with
// `ld.acquire.gpu` (s1), `__syncwarp()`, broadcast; an odd s1 is retried; lanes load the record
// (volatile), `__threadfence()`, `__syncwarp()`, lane 0 loads the number again (s2); the snapshot
// counts only when s1 == s2. Readers stop once they read the writer's final number (plain CUDA +
// inline PTX, no TK).
//
// Block 0 is the writer, blocks 1..READERS the readers, 32 threads each; UPDATES = 20000 versions
// a launch, version v writes data[k] = v * (k + 1). Every counted snapshot must be whole (all W
// words of one version, the version s1 / 2). The host checks that no snapshot was torn and the
// final record, over 3 launches (the sequence number goes on from launch to launch).
#include <cstdint>
#include <cstdio>
#include <cstdlib>

constexpr int W = 8, READERS = 64, UPDATES = 20000;

__device__ __forceinline__ void store_release(unsigned *p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned load_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__global__ __launch_bounds__(32)
void seqlock_kernel(unsigned *seq, unsigned *data, unsigned *torn, unsigned *snaps, unsigned base) {
    const unsigned lane = threadIdx.x;
    const unsigned full = 0xffffffffu;
    if (blockIdx.x == 0) {
        for (unsigned v = base + 1; v <= base + UPDATES; v++) {
            if (lane == 0) {
                *(volatile unsigned *)seq = 2u * v - 1u;
                __threadfence();
            }
            __syncwarp();
            if (lane < W) ((volatile unsigned *)data)[lane] = v * (lane + 1u);
            __syncwarp();
            if (lane == 0) {
                __threadfence();
                store_release(seq, 2u * v);
            }
            __nanosleep(2000);  // leave the readers a window between versions
        }
        return;
    }
    const unsigned last = 2u * (base + UPDATES);
    unsigned got = 0, bad = 0;
    for (;;) {
        unsigned s1 = 0;
        if (lane == 0) s1 = load_acquire(seq);
        __syncwarp();
        s1 = __shfl_sync(full, s1, 0);
        if (s1 & 1u) continue;
        unsigned d = 0;
        if (lane < W) d = ((volatile unsigned *)data)[lane];
        __threadfence();
        __syncwarp();
        unsigned s2 = 0;
        if (lane == 0) s2 = *(volatile unsigned *)seq;
        s2 = __shfl_sync(full, s2, 0);
        if (s1 != s2) continue;
        const bool whole = lane >= W || d == (s1 / 2u) * (lane + 1u);
        if (!__all_sync(full, whole)) bad++;
        got++;
        if (s1 == last) break;
    }
    if (lane == 0) {
        atomicAdd(torn, bad);
        atomicAdd(snaps, got);
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    unsigned *dseq, *ddata, *dtorn, *dsnaps;
    CUDA_CHECK(cudaMalloc(&dseq, 4));
    CUDA_CHECK(cudaMalloc(&ddata, W * 4));
    CUDA_CHECK(cudaMalloc(&dtorn, 4));
    CUDA_CHECK(cudaMalloc(&dsnaps, 4));
    CUDA_CHECK(cudaMemset(dseq, 0, 4));
    CUDA_CHECK(cudaMemset(ddata, 0, W * 4));
    long bad = 0;
    unsigned htorn = 0, hsnaps = 0, hdata[W];
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dtorn, 0, 4));
        CUDA_CHECK(cudaMemset(dsnaps, 0, 4));
        const unsigned base = (unsigned)rep * UPDATES;
        seqlock_kernel<<<1 + READERS, 32>>>(dseq, ddata, dtorn, dsnaps, base);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(&htorn, dtorn, 4, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&hsnaps, dsnaps, 4, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(hdata, ddata, W * 4, cudaMemcpyDeviceToHost));
        bad += htorn;
        for (int k = 0; k < W; k++) bad += hdata[k] != (base + UPDATES) * (k + 1u);
    }
    printf("seqlock_snapshot readers=%d updates=%d torn_last=%u snaps_last=%u bad=%ld\n", READERS, UPDATES, htorn,
           hsnaps, bad);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dseq); cudaFree(ddata); cudaFree(dtorn); cudaFree(dsnaps);
    return bad == 0 ? 0 : 1;
}
