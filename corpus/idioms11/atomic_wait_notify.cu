// atomic_wait_notify.cu -- rounds of a persistent grid coordinated with C++20 atomic waiting on
// device memory (libcu++ `cuda::atomic_ref<unsigned, cuda::thread_scope_device>`): each round every
// block reduces its slice to a partial, thread 0 stores it to `part[b]` and counts it in with
// `done.fetch_add(1, release)`; block 0's thread 0 (the coordinator) waits with
// `done.wait(seen, acquire)` until the round's G partials are in, combines them into `total_g`, and
// opens the next round with `gen.store(r + 1, release)` + `gen.notify_all()`; every block's thread
// 0 waits with `gen.wait(r, acquire)` (it returns once the value differs from r), passes the total
// to its warps through a `__shared__` scalar behind `__syncthreads()`, and every thread updates its
// elements. All G = 64 blocks are resident (one per SM at most), so the waits make progress.
//
// G = 64 blocks of 256 threads, 4096 unsigned words a block, ROUNDS = 16 rounds of
// v' = 3 v + total (mod 2^32), total = sum of all words of the previous values. The host replays
// the rounds and checks every word exactly over 3 launches (counters zeroed by the host).
#include <cuda/atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int G = 64, T = 256, PER = 16, SLICE = T * PER, ROUNDS = 16;

__global__ __launch_bounds__(T)
void rounds_wait_notify(unsigned *v, unsigned *part, unsigned *total_g, unsigned *done_p, unsigned *gen_p) {
    __shared__ unsigned red_s[T / 32];
    __shared__ unsigned total_s;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> done(*done_p);
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> gen(*gen_p);
    unsigned *mine = v + (size_t)blockIdx.x * SLICE;
    for (unsigned r = 0; r < ROUNDS; r++) {
        unsigned s = 0;
        for (int i = 0; i < PER; i++) s += mine[i * T + tid];
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) red_s[warp] = s;
        __syncthreads();
        if (tid == 0) {
            unsigned b = 0;
            for (int w = 0; w < T / 32; w++) b += red_s[w];
            part[blockIdx.x] = b;
            done.fetch_add(1u, cuda::memory_order_release);
            if (blockIdx.x == 0) {
                const unsigned target = (r + 1) * G;
                unsigned seen = done.load(cuda::memory_order_acquire);
                while (seen < target) {
                    done.wait(seen, cuda::memory_order_acquire);
                    seen = done.load(cuda::memory_order_acquire);
                }
                unsigned tot = 0;
                for (int k = 0; k < G; k++) tot += part[k];
                *total_g = tot;
                gen.store(r + 1, cuda::memory_order_release);
                gen.notify_all();
            }
            gen.wait(r, cuda::memory_order_acquire);
            total_s = *total_g;
        }
        __syncthreads();
        const unsigned tot = total_s;
        for (int i = 0; i < PER; i++) mine[i * T + tid] = 3u * mine[i * T + tid] + tot;
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)G * SLICE;
    std::vector<unsigned> hx(n), want(n), hout(n);
    uint32_t seed = 31337u;
    for (auto &v : hx) { seed = seed * 1664525u + 1013904223u; v = seed; }
    want = hx;
    for (int r = 0; r < ROUNDS; r++) {
        unsigned tot = 0;
        for (auto w : want) tot += w;
        for (auto &w : want) w = 3u * w + tot;
    }
    unsigned *dv, *dpart, *dtot, *dctr;
    CUDA_CHECK(cudaMalloc(&dv, n * 4));
    CUDA_CHECK(cudaMalloc(&dpart, G * 4));
    CUDA_CHECK(cudaMalloc(&dtot, 4));
    CUDA_CHECK(cudaMalloc(&dctr, 2 * 4));
    long bad = 0;
    long first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemcpy(dv, hx.data(), n * 4, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(dpart, 0x5a, G * 4));
        CUDA_CHECK(cudaMemset(dtot, 0x5a, 4));
        CUDA_CHECK(cudaMemset(dctr, 0, 2 * 4));
        rounds_wait_notify<<<G, T>>>(dv, dpart, dtot, dctr, dctr + 1);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hout.data(), dv, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
            if (hout[i] != want[i]) { bad++; if (first < 0) first = (long)i; }
    }
    printf("atomic_wait_notify blocks=%d rounds=%d wrong=%ld first_wrong=%ld\n", G, ROUNDS, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dv); cudaFree(dpart); cudaFree(dtot); cudaFree(dctr);
    return bad == 0 ? 0 : 1;
}
