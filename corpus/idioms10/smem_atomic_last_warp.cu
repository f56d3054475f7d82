// smem_atomic_last_warp.cu -- a block reduction with no block barrier after the warps' partials:
// the last warp to finish, found with a shared-memory atomic counter, does the block's epilogue
// (the "last one out" pattern at block scope). Thread 0 zeroes a `__shared__` arrival counter,
// `__syncthreads()`; each warp reduces its segment with `__shfl_xor_sync`, lane 0 stores the warp's
// partial sum and maximum to shared arrays, `__threadfence_block()` (release), and takes a ticket
// `atomicAdd(&arrived_s, 1)` on the shared counter; the ticket is broadcast to the warp with
// `__shfl_sync`, and the warp whose ticket is WARPS - 1 fences again (acquire side), reads every
// warp's partial (volatile) and writes the row's sum and maximum (plain CUDA, no TK).
//
// ROWS = 2048 blocks of T = 256 threads (8 warps), each row 8192 ints in [-1000, 1000]. The host
// checks every row's sum and maximum exactly, over 3 launches.
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 256, WARPS = T / 32, ROWS = 2048, COLS = 8192, SEG = COLS / WARPS;

__global__ __launch_bounds__(T)
void row_sum_max(const int *x, int *out) {
    __shared__ int part_sum_s[WARPS];
    __shared__ int part_max_s[WARPS];
    __shared__ unsigned arrived_s;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) arrived_s = 0;
    __syncthreads();
    const int *row = x + (size_t)blockIdx.x * COLS + warp * SEG;
    int s = 0, m = INT_MIN;
    for (int i = lane; i < SEG; i += 32) {
        const int v = row[i];
        s += v;
        m = max(m, v);
    }
    for (int o = 16; o > 0; o >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, o);
        m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    }
    unsigned ticket = 0;
    if (lane == 0) {
        part_sum_s[warp] = s;
        part_max_s[warp] = m;
        __threadfence_block();
        ticket = atomicAdd(&arrived_s, 1u);
    }
    ticket = __shfl_sync(0xffffffffu, ticket, 0);
    if (ticket == WARPS - 1) {
        __threadfence_block();
        int ts = 0, tm = INT_MIN;
        if (lane < WARPS) {
            ts = ((volatile int *)part_sum_s)[lane];
            tm = ((volatile int *)part_max_s)[lane];
        }
        for (int o = 16; o > 0; o >>= 1) {
            ts += __shfl_xor_sync(0xffffffffu, ts, o);
            tm = max(tm, __shfl_xor_sync(0xffffffffu, tm, o));
        }
        if (lane == 0) {
            out[2 * blockIdx.x] = ts;
            out[2 * blockIdx.x + 1] = tm;
        }
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)ROWS * COLS;
    std::vector<int> hx(n), want(2 * ROWS), hout(2 * ROWS);
    uint32_t seed = 777u;
    for (auto &v : hx) { seed = seed * 1664525u + 1013904223u; v = (int)((seed >> 8) % 2001u) - 1000; }
    for (int r = 0; r < ROWS; r++) {
        hx[(size_t)r * COLS + (r * 37) % COLS] = 2000 + r;  // each row's maximum in a different warp's segment
        int s = 0, m = INT_MIN;
        for (int c = 0; c < COLS; c++) { s += hx[(size_t)r * COLS + c]; m = m > hx[(size_t)r * COLS + c] ? m : hx[(size_t)r * COLS + c]; }
        want[2 * r] = s;
        want[2 * r + 1] = m;
    }
    int *dx, *dout;
    CUDA_CHECK(cudaMalloc(&dx, n * 4));
    CUDA_CHECK(cudaMalloc(&dout, 2 * ROWS * 4));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
    long bad = 0;
    int first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dout, 0x7f, 2 * ROWS * 4));  // poison
        row_sum_max<<<ROWS, T>>>(dx, dout);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hout.data(), dout, 2 * ROWS * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < 2 * ROWS; i++)
            if (hout[i] != want[i]) { bad++; if (first < 0) first = i; }
    }
    printf("smem_atomic_last_warp rows=%d wrong=%ld first_wrong=%d\n", ROWS, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dout);
    return bad == 0 ? 0 : 1;
}
