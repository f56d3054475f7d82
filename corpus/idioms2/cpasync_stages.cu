// cpasync_stages.cu -- Ampere-style multi-stage cp.async pipeline (CUTLASS "multistage" shape),
// plain CUDA + PTX, no TK: y = A x for an fp32 matrix A [M x K], one 64-row strip per block.
//
// 256 threads; shared a_s[STAGES=3][64][64] floats (16 KiB a stage). Chunk k (columns
// 64k .. 64k+63 of the strip) is copied by all threads, 4 x 16-byte cp.async each, into stage
// k % STAGES, and each copy round ends with one cp.async.commit_group (also when nothing was
// issued, so the group count stays in step). Prologue: chunks 0 .. STAGES-2, one group each.
// Iteration k: issue chunk k + STAGES - 1 into the stage read in iteration k - 1, commit,
//   cp.async.wait_group STAGES - 1 (chunk k's group is complete), __syncthreads (other threads'
//   copies are visible), read the stage (thread t: row t / 4, columns 16 (t % 4) .. + 15, words
//   copied by other threads), __syncthreads (the stage is free to refill in iteration k + 1).
// The four partial dot products of a row are combined with __shfl_xor_sync.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

constexpr int ROWS = 64, CHUNK = 64, STAGES = 3;

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}

__global__ __launch_bounds__(256)
void gemv_kernel(const float *A, const float *x, float *y, int K) {
    extern __shared__ float4 smem4[];
    float (*a_s)[ROWS][CHUNK] = reinterpret_cast<float (*)[ROWS][CHUNK]>(smem4);
    const int row0 = blockIdx.x * ROWS;
    const int nk = K / CHUNK;
    const int t = threadIdx.x;

    auto issue = [&](int k) {
        float (*dst)[CHUNK] = a_s[k % STAGES];
        for (int e = t; e < ROWS * CHUNK / 4; e += 256) {
            const int r = e / (CHUNK / 4), c4 = e % (CHUNK / 4);
            cp_async16(&dst[r][c4 * 4], &A[(size_t)(row0 + r) * K + k * CHUNK + c4 * 4]);
        }
    };

    for (int k = 0; k < STAGES - 1; k++) {
        if (k < nk) issue(k);
        cp_async_commit();
    }
    const int r = t / 4, q = t % 4;
    float acc = 0.0f;
    for (int k = 0; k < nk; k++) {
        if (k + STAGES - 1 < nk) issue(k + STAGES - 1);
        cp_async_commit();
        cp_async_wait<STAGES - 1>();
        __syncthreads();
        const float (*src)[CHUNK] = a_s[k % STAGES];
        for (int j = 0; j < 16; j++) acc += src[r][q * 16 + j] * x[k * CHUNK + q * 16 + j];
        __syncthreads();
    }
    acc += __shfl_xor_sync(0xffffffff, acc, 1);
    acc += __shfl_xor_sync(0xffffffff, acc, 2);
    if (q == 0) y[row0 + r] = acc;
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int M = 8192, K = 4096;
    std::vector<float> hA((size_t)M * K), hx(K);
    uint32_t seed = 2503u;
    for (auto &v : hA) v = lcg_uniform(seed);
    for (auto &v : hx) v = lcg_uniform(seed);
    float *dA, *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dA, hA.size() * 4));
    CUDA_CHECK(cudaMalloc(&dx, K * 4));
    CUDA_CHECK(cudaMalloc(&dy, M * 4));
    CUDA_CHECK(cudaMemcpy(dA, hA.data(), hA.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), K * 4, cudaMemcpyHostToDevice));
    const int smem = STAGES * ROWS * CHUNK * 4;
    CUDA_CHECK(cudaFuncSetAttribute(gemv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    std::vector<double> ref(M, 0.0);
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++) ref[m] += (double)hA[(size_t)m * K + k] * hx[k];
    double max_err = 0.0;
    std::vector<float> hy(M);
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, M * 4));  // NaN poison
        gemv_kernel<<<M / ROWS, 256, smem>>>(dA, dx, dy, K);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hy.data(), dy, M * 4, cudaMemcpyDeviceToHost));
        for (int m = 0; m < M; m++) {
            double e = std::isfinite(hy[m]) ? fabs(hy[m] - ref[m]) : 1e30;
            if (e > max_err) max_err = e;
        }
    }
    bool ok = max_err <= 1e-3;
    printf("cpasync_stages M=%d K=%d stages=%d max_abs_err=%.6f\n", M, K, STAGES, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dA); cudaFree(dx); cudaFree(dy);
    return ok ? 0 : 1;
}
