// dissemination_barrier.cu -- a grid-wide barrier with no central counter: the dissemination
// (Hensgen, Finkel and Manber) barrier over per-block, per-round flags in global memory. In round r
// of barrier e, thread 0 of block b raises flag[r][(b + 2^r) mod G] to e with `st.release.gpu` and
// spins with `ld.acquire.gpu` until its own flag[r][b] reaches e; after ceil(log2 G) rounds every
// block has heard, transitively, from every other. The flags hold epochs (1, 2, ...) and only grow,
// so one set of flags serves every barrier of the launch. `__syncthreads()` before the rounds orders
// the block's stores before thread 0's releases; `__syncthreads()` after them lets the block go on.
//
// A multi-phase kernel on it: PHASES times, every thread computes b[i] = a[i] + 3 a[(i + s_p) mod N]
// (mod 2^32) with a shift s_p that reaches into another block's slice, then the grid barrier, then
// the roles of a and b swap. G = 64 blocks of 256 threads (all resident), N = 64 * 1024 words. The
// host replays the phases and checks every word over 3 launches (flags zeroed by the host).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int G = 64, LOGG = 6, T = 256, PER = 4, SLICE = T * PER, N = G * SLICE, PHASES = 12;

__device__ __forceinline__ void st_release(unsigned *p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ void dissemination_barrier(unsigned *flag, unsigned epoch) {
    __syncthreads();
    if (threadIdx.x == 0) {
        const int b = blockIdx.x;
        for (int r = 0; r < LOGG; r++) {
            const int partner = (b + (1 << r)) % G;
            st_release(&flag[r * G + partner], epoch);
            while (ld_acquire(&flag[r * G + b]) < epoch) {
            }
        }
    }
    __syncthreads();
}

__global__ __launch_bounds__(T)
void phases_kernel(unsigned *a, unsigned *b, unsigned *flag) {
    unsigned *src = a, *dst = b;
    for (int p = 0; p < PHASES; p++) {
        const int shift = (p * 9973 + 1531) % N;
        for (int k = 0; k < PER; k++) {
            const int i = blockIdx.x * SLICE + k * T + threadIdx.x;
            dst[i] = src[i] + 3u * src[(i + shift) % N];
        }
        dissemination_barrier(flag, (unsigned)(p + 1));
        unsigned *t = src; src = dst; dst = t;
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    std::vector<unsigned> h(N), want, out(N);
    uint32_t seed = 4242u;
    for (auto &v : h) { seed = seed * 1664525u + 1013904223u; v = seed >> 8; }
    want = h;
    {
        std::vector<unsigned> nxt(N);
        for (int p = 0; p < PHASES; p++) {
            const int shift = (p * 9973 + 1531) % N;
            for (int i = 0; i < N; i++) nxt[i] = want[i] + 3u * want[(i + shift) % N];
            want.swap(nxt);
        }
    }
    unsigned *da, *db, *dflag;
    CUDA_CHECK(cudaMalloc(&da, N * 4));
    CUDA_CHECK(cudaMalloc(&db, N * 4));
    CUDA_CHECK(cudaMalloc(&dflag, LOGG * G * 4));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemcpy(da, h.data(), N * 4, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(db, 0x5a, N * 4));
        CUDA_CHECK(cudaMemset(dflag, 0, LOGG * G * 4));
        phases_kernel<<<G, T>>>(da, db, dflag);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(out.data(), PHASES % 2 ? db : da, N * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++)
            if (out[i] != want[i]) { bad++; if (first < 0) first = i; }
    }
    printf("dissemination_barrier blocks=%d phases=%d wrong=%ld first_wrong=%ld\n", G, PHASES, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(da); cudaFree(db); cudaFree(dflag);
    return bad == 0 ? 0 : 1;
}
