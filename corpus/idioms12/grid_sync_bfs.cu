// grid_sync_bfs.cu -- level-synchronous breadth-first search in ONE cooperative launch: the grid
// walks the frontier of level L, claims each unvisited neighbour with `atomicCAS(&dist[v], -1,
// L + 1)` and appends it to the next frontier with `atomicAdd(&cnt[next], 1)`, then meets at
// `grid.sync()` (cooperative groups, cudaLaunchCooperativeKernel, every block resident). The
// frontier counters rotate over three slots: level L reads cnt[L % 3], appends to cnt[(L + 1) % 3]
// and thread 0 of the grid clears cnt[(L + 2) % 3], the slot every block read at the top of level
// L - 1 (before the grid barrier that closed it) and that level L + 1 appends to (after the one
// that closes L). Every block reads the same count after the barrier, so all leave the loop
// together when the frontier is empty (a grid barrier must be reached by every thread).
//
// A random graph of N = 65536 vertices with out-degree 6 (CSR), source 0; the host runs the same
// BFS and checks every distance over 3 launches.
#include <cooperative_groups.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <queue>

namespace cg = cooperative_groups;
constexpr int N = 65536, DEG = 6, T = 256;

__global__ __launch_bounds__(T)
void bfs_levels(const int *row, const int *col, int *dist, int *queue, int *cnt) {
    cg::grid_group grid = cg::this_grid();
    const int gtid = blockIdx.x * blockDim.x + threadIdx.x;
    const int gstride = gridDim.x * blockDim.x;
    int level = 0, cur = 0;
    while (true) {
        const int n = cnt[cur];
        if (n == 0) break;
        const int nxt = (cur + 1) % 3;
        const int *q = queue + cur * N;
        int *qn = queue + nxt * N;
        for (int i = gtid; i < n; i += gstride) {
            const int u = q[i];
            for (int e = row[u]; e < row[u + 1]; e++) {
                const int v = col[e];
                if (atomicCAS(&dist[v], -1, level + 1) == -1) {
                    const int pos = atomicAdd(&cnt[nxt], 1);
                    qn[pos] = v;
                }
            }
        }
        if (gtid == 0) cnt[(cur + 2) % 3] = 0;
        grid.sync();
        cur = nxt;
        level++;
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

int main() {
    std::vector<int> row(N + 1), col(N * DEG), want(N, -1), out(N);
    uint32_t seed = 777u;
    for (int u = 0; u < N; u++) {
        row[u] = u * DEG;
        for (int d = 0; d < DEG; d++) {
            seed = seed * 1664525u + 1013904223u;
            // mostly local edges plus a few long ones: many levels, frontiers of varied size
            col[u * DEG + d] = d < 4 ? (int)((u + 1 + (seed >> 16) % 64) % N) : (int)((seed >> 8) % N);
        }
    }
    row[N] = N * DEG;
    {
        std::queue<int> q; want[0] = 0; q.push(0);
        while (!q.empty()) { int u = q.front(); q.pop();
            for (int e = row[u]; e < row[u + 1]; e++) if (want[col[e]] < 0) { want[col[e]] = want[u] + 1; q.push(col[e]); } }
    }
    int dev = 0, sms = 0, per_sm = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, bfs_levels, T, 0));
    const int blocks = sms * (per_sm < 2 ? per_sm : 2);
    int *drow, *dcol, *ddist, *dq, *dcnt;
    CUDA_CHECK(cudaMalloc(&drow, (N + 1) * 4));
    CUDA_CHECK(cudaMalloc(&dcol, N * DEG * 4));
    CUDA_CHECK(cudaMalloc(&ddist, N * 4));
    CUDA_CHECK(cudaMalloc(&dq, 3 * N * 4));
    CUDA_CHECK(cudaMalloc(&dcnt, 3 * 4));
    CUDA_CHECK(cudaMemcpy(drow, row.data(), (N + 1) * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dcol, col.data(), N * DEG * 4, cudaMemcpyHostToDevice));
    long bad = 0, first = -1;
    const int reps = getenv("ONE_REP") ? 1 : 3;
    for (int rep = 0; rep < reps; rep++) {
        std::vector<int> d0(N, -1); d0[0] = 0;
        const int c0[3] = {1, 0, 0}, src = 0;
        CUDA_CHECK(cudaMemcpy(ddist, d0.data(), N * 4, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(dq, 0xff, 3 * N * 4));
        CUDA_CHECK(cudaMemcpy(dq, &src, 4, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(dcnt, c0, 3 * 4, cudaMemcpyHostToDevice));
        void *args[] = {&drow, &dcol, &ddist, &dq, &dcnt};
        CUDA_CHECK(cudaLaunchCooperativeKernel((void *)bfs_levels, blocks, T, args, 0, 0));
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(out.data(), ddist, N * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++)
            if (out[i] != want[i]) { bad++; if (first < 0) first = i; }
    }
    int maxd = 0; for (int d : want) maxd = d > maxd ? d : maxd;
    printf("grid_sync_bfs blocks=%d levels=%d wrong=%ld first_wrong=%ld\n", blocks, maxd, bad, first);
    printf("%s\n", bad == 0 ? "PASS" : "FAIL");
    cudaFree(drow); cudaFree(dcol); cudaFree(ddist); cudaFree(dq); cudaFree(dcnt);
    return bad == 0 ? 0 : 1;
}
