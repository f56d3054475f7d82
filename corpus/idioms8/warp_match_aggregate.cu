// warp_match_aggregate.cu -- a weighted histogram with warp-aggregated shared atomics: in a
// data-dependent branch (only valid keys) the lanes find their peers with the same key by
// `__match_any_sync(valid_mask, key)`, sum their weights with `__reduce_add_sync(peers, w)` (the
// `redux.sync` instruction, one call per peer group, each group with its own member mask), and
// the group's leader (lowest lane) adds count and weight into the block's shared histogram with
// one atomicAdd each; `valid_mask` comes from `__ballot_sync` over the whole warp before the branch
// (plain CUDA, no inline PTX, no TK).
//
// Keys in [-8, NB) with NB = 64 bins (negative keys are invalid and skipped), integer weights
// 1..7; per block: cnt[b][k] and wsum[b][k] over CHUNK = 16384 items (grid-stride within the
// block's chunk, 256 threads, 64 items a thread). Shared: cnt_s[NB], wsum_s[NB], zeroed by
// threads 0..63, then __syncthreads; after the loop __syncthreads, then threads 0..63 write the
// block's bins out. The host checks every bin exactly.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int NB = 64, THREADS = 256, CHUNK = 16384, BLOCKS = 1056;

__global__ __launch_bounds__(THREADS)
void match_hist(const int *keys, const int *wts, int *cnt, int *wsum) {
    __shared__ int cnt_s[NB], wsum_s[NB];
    const int t = threadIdx.x, lane = t % 32;
    if (t < NB) {
        cnt_s[t] = 0;
        wsum_s[t] = 0;
    }
    __syncthreads();
    const size_t base = (size_t)blockIdx.x * CHUNK;
    for (int i = t; i < CHUNK; i += THREADS) {
        const int key = keys[base + i], w = wts[base + i];
        const bool valid = key >= 0;
        const unsigned valid_mask = __ballot_sync(0xffffffffu, valid);
        if (valid) {
            const unsigned peers = __match_any_sync(valid_mask, key);
            const int wgroup = (int)__reduce_add_sync(peers, (unsigned)w);
            const int leader = __ffs(peers) - 1;
            if (lane == leader) {
                atomicAdd(&cnt_s[key], __popc(peers));
                atomicAdd(&wsum_s[key], wgroup);
            }
        }
    }
    __syncthreads();
    if (t < NB) {
        cnt[(size_t)blockIdx.x * NB + t] = cnt_s[t];
        wsum[(size_t)blockIdx.x * NB + t] = wsum_s[t];
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    const size_t n = (size_t)BLOCKS * CHUNK;
    std::vector<int> hk(n), hw(n), rc((size_t)BLOCKS * NB, 0), rw((size_t)BLOCKS * NB, 0), gc(rc.size()), gw(rw.size());
    uint32_t s = 8404u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        // skewed keys (many equal keys in a warp): a few hot bins, the rest spread, 1 in 9 invalid
        const uint32_t r = s >> 8;
        int key = (r % 9 == 0) ? -1 - (int)(r % 8) : ((r >> 4) % 4 == 0 ? (int)((r >> 8) % NB) : (int)((r >> 8) % 4));
        hk[i] = key;
        hw[i] = 1 + (int)((r >> 16) % 7);
        if (key >= 0) {
            rc[(i / CHUNK) * NB + key] += 1;
            rw[(i / CHUNK) * NB + key] += hw[i];
        }
    }
    int *dk, *dw, *dc, *dws;
    CUDA_CHECK(cudaMalloc(&dk, n * 4));
    CUDA_CHECK(cudaMalloc(&dw, n * 4));
    CUDA_CHECK(cudaMalloc(&dc, rc.size() * 4));
    CUDA_CHECK(cudaMalloc(&dws, rw.size() * 4));
    CUDA_CHECK(cudaMemcpy(dk, hk.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dw, hw.data(), n * 4, cudaMemcpyHostToDevice));
    long bad = 0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dc, 0xff, rc.size() * 4));
        CUDA_CHECK(cudaMemset(dws, 0xff, rw.size() * 4));
        match_hist<<<BLOCKS, THREADS>>>(dk, dw, dc, dws);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(gc.data(), dc, rc.size() * 4, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(gw.data(), dws, rw.size() * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < rc.size(); i++) bad += (gc[i] != rc[i]) + (gw[i] != rw[i]);
    }
    const bool ok = bad == 0;
    printf("warp_match_aggregate blocks=%d bins=%d wrong_bins=%ld\n", BLOCKS, NB, bad);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dk); cudaFree(dw); cudaFree(dc); cudaFree(dws);
    return ok ? 0 : 1;
}
