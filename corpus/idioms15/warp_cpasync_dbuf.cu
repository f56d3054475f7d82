// warp_cpasync_dbuf.cu -- a per-warp double-buffered cp.async pipeline with no block barrier after
// the start: every warp streams its own rows through its own two shared buffers, copying chunk
// c + 1 with 16-byte `cp.async.cg.shared.global` while it computes on chunk c. Each lane copies 4
// pieces of 16 bytes (float4 q of the chunk is copied by lane q % 32) and reads 16 consecutive floats
// (lane l reads floats 16 l .. 16 l + 15, i.e. the float4s that lanes 4 l % 32 .. 4 l % 32 + 3
// copied), so every read depends on other lanes' copies. Per iteration: issue chunk c + 1 into
// buf[warp][(c + 1) & 1] (none in the last iteration), `cp.async.commit_group` (always, so the group
// count stays in step), `cp.async.wait_group 1` (chunk c's group is complete for this lane),
// `__syncwarp()` (the other lanes' copies are visible), compute, `__syncwarp()` (the buffer is free
// to refill in the next iteration). Plain CUDA + inline PTX, no TK.
//
// 132 blocks x 256 threads (8 warps); warp w of block b handles NC = 24 chunks of 512 floats of
// stream (b * 8 + w); y[stream][c][lane] = sum_{m < 16} (m + 1) * chunk[16 lane + m]. Host checks all
// over 3 launches.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int T = 256, WARPS = T / 32, NB = 132, NC = 24, CH = 512;

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp16(void *dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_groups() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

__device__ __forceinline__ void issue_chunk(float *dst, const float *src, int lane) {
    for (int q = lane; q < CH / 4; q += 32) cp16(dst + 4 * q, src + 4 * q);
}

__global__ void __launch_bounds__(T) warp_stream(const float *x, float *y) {
    __shared__ alignas(16) float buf[WARPS][2][CH];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const size_t stream = (size_t)blockIdx.x * WARPS + warp;
    const int wbuf = warp;
    const float *xs = x + stream * NC * CH;
    issue_chunk(&buf[wbuf][0][0], xs, lane);
    commit();
    for (int c = 0; c < NC; c++) {
        if (c + 1 < NC) issue_chunk(&buf[wbuf][(c + 1) & 1][0], xs + (size_t)(c + 1) * CH, lane);
        commit();
        wait_groups<1>();
        __syncwarp();
        const float *b = &buf[wbuf][c & 1][16 * lane];
        float acc = 0.f;
        for (int m = 0; m < 16; m++) acc += (float)(m + 1) * b[m];
        y[(stream * NC + c) * 32 + lane] = acc;
        __syncwarp();
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t streams = (size_t)NB * WARPS, nx = streams * NC * CH, ny = streams * NC * 32;
    std::vector<float> h(nx), want(ny), got(ny);
    uint32_t seed = 4242u;
    for (auto &v : h) { seed = seed * 1664525u + 1013904223u; v = (float)((seed >> 10) % 512u) - 256.f; }
    for (size_t s = 0; s < streams * NC; s++)
        for (int l = 0; l < 32; l++) {
            float acc = 0.f;
            for (int m = 0; m < 16; m++) acc += (float)(m + 1) * h[s * CH + 16 * l + m];
            want[s * 32 + l] = acc;
        }
    float *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, nx * 4));
    CUDA_CHECK(cudaMalloc(&dy, ny * 4));
    CUDA_CHECK(cudaMemcpy(dx, h.data(), nx * 4, cudaMemcpyHostToDevice));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dy, 0xff, ny * 4));
        warp_stream<<<NB, T>>>(dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(got.data(), dy, ny * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < ny; i++)
            if (got[i] != want[i]) { bad++; if (first < 0) first = (long)i; }
    }
    printf("warp_cpasync_dbuf blocks=%d chunks=%d wrong=%ld first_wrong=%ld\n", NB, NC, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(dx); cudaFree(dy);
    return bad == 0 ? 0 : 1;
}
