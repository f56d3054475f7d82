// latch_semaphore_bucket.cu -- libcu++ synchronisation objects instead of barriers and spin loops:
// a block-scope `cuda::latch` in shared memory (constructed by thread 0 with placement new, made
// visible by `__syncthreads()`) gates a staging phase (`arrive_and_wait()`), and device-scope
// `cuda::binary_semaphore`s in global memory (one per bucket, constructed by a set-up kernel) make
// each block's read-modify-write of its bucket's accumulator row a critical section: thread 0
// `acquire()`s, `__syncthreads()`, every thread updates its element with plain loads and stores,
// `__syncthreads()`, thread 0 `release()`s (plain CUDA + libcu++, no inline PTX, no TK).
//
// BLOCKS = 528 blocks of T = 256 threads; block b stages x[b][0 .. T) in shared memory, thread t
// computes c = x[b][t] + 2 x[b][(t + 1) % T] (a neighbour's staged value) and adds it into
// acc[b % NB][t] inside the critical section of bucket b % NB (NB = 8: 66 blocks contend for each
// bucket). The host checks every acc element exactly (ints).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>
#include <cuda/latch>
#include <cuda/semaphore>

constexpr int T = 256, BLOCKS = 528, NB = 8;
using block_latch = cuda::latch<cuda::thread_scope_block>;
using bucket_sem = cuda::binary_semaphore<cuda::thread_scope_device>;

__global__ void make_sems(bucket_sem *sems) {
    if (threadIdx.x < NB) new (&sems[threadIdx.x]) bucket_sem(1);
}

__global__ __launch_bounds__(T)
void bucket_accumulate(const int *x, int *acc, bucket_sem *sems) {
    __shared__ alignas(block_latch) unsigned char latch_mem[sizeof(block_latch)];
    block_latch &staged = *reinterpret_cast<block_latch *>(latch_mem);
    __shared__ int stage_s[T];
    const int t = threadIdx.x;
    const int b = blockIdx.x, bucket = b % NB;
    if (t == 0) new (latch_mem) block_latch(T);
    __syncthreads();
    stage_s[t] = x[(size_t)b * T + t];
    staged.arrive_and_wait();
    const int c = stage_s[t] + 2 * stage_s[(t + 1) % T];
    if (t == 0) sems[bucket].acquire();
    __syncthreads();
    acc[(size_t)bucket * T + t] += c;
    __syncthreads();
    if (t == 0) sems[bucket].release();
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    std::vector<int> hx((size_t)BLOCKS * T), ref((size_t)NB * T, 0), hacc((size_t)NB * T);
    uint32_t seed = 9409u;
    for (auto &v : hx) {
        seed = seed * 1664525u + 1013904223u;
        v = (int)((seed >> 8) % 201u) - 100;
    }
    for (int b = 0; b < BLOCKS; b++)
        for (int t = 0; t < T; t++)
            ref[(size_t)(b % NB) * T + t] += hx[(size_t)b * T + t] + 2 * hx[(size_t)b * T + (t + 1) % T];
    int *dx, *dacc;
    bucket_sem *dsem;
    CUDA_CHECK(cudaMalloc(&dx, hx.size() * 4));
    CUDA_CHECK(cudaMalloc(&dacc, hacc.size() * 4));
    CUDA_CHECK(cudaMalloc(&dsem, NB * sizeof(bucket_sem)));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
    make_sems<<<1, 32>>>(dsem);
    CUDA_CHECK(cudaGetLastError());
    long bad = 0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dacc, 0, hacc.size() * 4));
        bucket_accumulate<<<BLOCKS, T>>>(dx, dacc, dsem);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hacc.data(), dacc, hacc.size() * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < hacc.size(); i++) bad += hacc[i] != ref[i];
    }
    printf("latch_semaphore_bucket blocks=%d buckets=%d acc[0]=%d (want %d) bad=%ld\n", BLOCKS, NB, hacc[0], ref[0], bad);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dacc); cudaFree(dsem);
    return bad == 0 ? 0 : 1;
}
