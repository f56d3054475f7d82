// atominc_last_block.cu -- a one-pass grid reduction whose last block finishes the job, with the
// retirement ticket taken by `atomicInc` (the wrapping increment: the counter returns to 0 by
// itself after the last block, so the next launch needs no reset). Each block reduces its chunk
// in shared memory, thread 0 stores the block's partial sum to global memory, `__threadfence()`
// (release), takes a ticket `atomicInc(&retire_count, gridDim.x - 1)`, `__threadfence()` again
// (acquire side), and publishes "am I last" to its block through a `__shared__ bool`; after
// `__syncthreads()` the last block reads every partial (volatile loads) and writes the total.
// Each warp's lane 0 also folds the warp's maximum into a global `atomicMax`, before the block's
// first barrier, so it is ordered before thread 0's release fence; the last block reads the
// global maximum after its ticket (plain CUDA, no inline PTX, no TK).
//
// BLOCKS = 528 blocks of T = 256 threads, each block PER = 4096 ints in [-1000, 1000]. Outputs:
// out[0] = the sum of all, out[1] = the maximum as the last block read it. The host checks both
// exactly, over 5 launches (the ticket counter is never reset by the host).
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 256, BLOCKS = 528, PER = 4096;

__device__ unsigned int retire_count = 0;

__global__ __launch_bounds__(T)
void reduce_last_block(const int *x, int *partial, int *gmax, int *out) {
    __shared__ int red_s[T];
    __shared__ bool am_last;
    const int t = threadIdx.x;
    int s = 0, m = INT_MIN;
    for (int i = t; i < PER; i += T) {
        const int v = x[(size_t)blockIdx.x * PER + i];
        s += v;
        m = max(m, v);
    }
    for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((t & 31) == 0) atomicMax(gmax, m);
    red_s[t] = s;
    __syncthreads();
    for (int w = T / 2; w > 0; w >>= 1) {
        if (t < w) red_s[t] += red_s[t + w];
        __syncthreads();
    }
    if (t == 0) {
        partial[blockIdx.x] = red_s[0];
        __threadfence();
        const unsigned ticket = atomicInc(&retire_count, gridDim.x - 1);
        __threadfence();
        am_last = (ticket == gridDim.x - 1);
    }
    __syncthreads();
    if (am_last) {
        int s2 = 0;
        for (int i = t; i < (int)gridDim.x; i += T) s2 += ((volatile int *)partial)[i];
        red_s[t] = s2;
        __syncthreads();
        for (int w = T / 2; w > 0; w >>= 1) {
            if (t < w) red_s[t] += red_s[t + w];
            __syncthreads();
        }
        if (t == 0) {
            out[0] = red_s[0];
            out[1] = *(volatile int *)gmax;
        }
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)BLOCKS * PER;
    std::vector<int> hx(n);
    uint32_t seed = 9101u;
    long long sum = 0;
    int mx = INT_MIN;
    for (auto &v : hx) {
        seed = seed * 1664525u + 1013904223u;
        v = (int)((seed >> 8) % 2001u) - 1000;
        sum += v;
        mx = v > mx ? v : mx;
    }
    hx[(size_t)BLOCKS * PER - 5] = 5000;  // the maximum sits in the last block's chunk
    sum = 0;
    for (auto v : hx) sum += v;
    mx = 5000;
    int *dx, *dp, *dm, *dout;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&dp, BLOCKS * 4));
    CUDA_CHECK(cudaMalloc(&dm, 4));
    CUDA_CHECK(cudaMalloc(&dout, 8));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
    int bad = 0, hout[2] = {0, 0};
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        const int lo = INT_MIN;
        CUDA_CHECK(cudaMemcpy(dm, &lo, 4, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(dout, 0x7f, 8));  // poison
        CUDA_CHECK(cudaMemset(dp, 0x7f, BLOCKS * 4));
        reduce_last_block<<<BLOCKS, T>>>(dx, dp, dm, dout);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hout, dout, 8, cudaMemcpyDeviceToHost));
        bad += (hout[0] != (int)sum) + (hout[1] != mx);
    }
    printf("atominc_last_block blocks=%d sum=%d (want %lld) max=%d (want %d) bad=%d\n", BLOCKS, hout[0], sum, hout[1],
           mx, bad);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dp); cudaFree(dm); cudaFree(dout);
    return bad == 0 ? 0 : 1;
}
