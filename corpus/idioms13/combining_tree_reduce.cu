// combining_tree_reduce.cu -- a one-pass grid reduction up a COMBINING TREE of arrival counters
// (fan-in 4), no co-residency needed and no spin: each block reduces its 2048 words, thread 0
// stores the block's value into its slot of level 0, `__threadfence()`s and `atomicAdd`s the
// counter of its parent node; the block that sees the old count FAN - 1 is the last of its four
// siblings and climbs: "am I last" goes to the other threads through the shared scalar `last_s`
// and a `__syncthreads()`, the other blocks leave. The climber's warp 0 fences, reads the four
// sibling values (`__ldcg`), sums them with two shuffles and the climb repeats one level up until
// the root (5 levels: 1024 blocks). The last arriver of a node resets its counter for the next
// launch; the root's climber writes the result. A second `__syncthreads()` ends every level before
// thread 0 writes `last_s` again.
//
// 1024 blocks x 256 threads, 2 M words; the host checks the result and that every counter is back
// to 0, over 3 launches.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 256, FAN = 4, LEVELS = 5, G = 1024, PER = 2048;
constexpr int NVALS = G + G / 4 + G / 16 + G / 64 + G / 256, NCNT = G / 4 + G / 16 + G / 64 + G / 256 + 1;

__global__ void __launch_bounds__(T) tree_reduce(const unsigned *in, unsigned *vals, unsigned *cnt, unsigned *result) {
    __shared__ unsigned warp_s[T / 32];
    __shared__ int last_s;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    unsigned s = 0;
    for (int i = tid; i < PER; i += T) s += in[blockIdx.x * PER + i] * (unsigned)(2 * i + 1);
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) warp_s[warp] = s;
    __syncthreads();
    if (tid == 0)
        for (int w = 1; w < T / 32; w++) s += warp_s[w];
    unsigned idx = blockIdx.x;
    int voff = 0, coff = 0, width = G;
    for (int l = 0; l < LEVELS; l++) {
        if (tid == 0) {
            vals[voff + idx] = s;
            __threadfence();
            const unsigned old = atomicAdd(&cnt[coff + idx / FAN], 1u);
            last_s = (old == FAN - 1);
        }
        __syncthreads();
        if (!last_s) return;
        if (tid == 0) cnt[coff + idx / FAN] = 0;
        if (warp == 0) {
            __threadfence();
            unsigned v = lane < FAN ? __ldcg(&vals[voff + (idx / FAN) * FAN + lane]) : 0u;
            v += __shfl_xor_sync(0xffffffffu, v, 1);
            v += __shfl_xor_sync(0xffffffffu, v, 2);
            s = v;
        }
        voff += width;
        coff += width / FAN;
        width /= FAN;
        idx /= FAN;
        __syncthreads();
    }
    if (tid == 0) *result = s;
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const int n = G * PER;
    std::vector<unsigned> h(n), c(NCNT);
    uint32_t seed = 4242u;
    unsigned want = 0;
    for (int i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = seed;
        want += seed * (unsigned)(2 * (i % PER) + 1);
    }
    unsigned *din, *dvals, *dcnt, *dres;
    CUDA_CHECK(cudaMalloc(&din, n * 4));
    CUDA_CHECK(cudaMalloc(&dvals, NVALS * 4));
    CUDA_CHECK(cudaMalloc(&dcnt, NCNT * 4));
    CUDA_CHECK(cudaMalloc(&dres, 4));
    CUDA_CHECK(cudaMemcpy(din, h.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dcnt, 0, NCNT * 4));
    long bad = 0;
    unsigned got = 0;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dres, 0x5a, 4));
        tree_reduce<<<G, T>>>(din, dvals, dcnt, dres);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(&got, dres, 4, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(c.data(), dcnt, NCNT * 4, cudaMemcpyDeviceToHost));
        if (got != want) bad++;
        for (int i = 0; i < NCNT; i++)
            if (c[i] != 0) { bad++; break; }
    }
    printf("combining_tree_reduce blocks=%d result=%u want=%u bad_launches=%ld\n", G, got, want, bad);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(din); cudaFree(dvals); cudaFree(dcnt); cudaFree(dres);
    return bad == 0 ? 0 : 1;
}
