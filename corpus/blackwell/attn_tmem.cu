// attn_tmem.cu -- Blackwell (sm_100a) attention forward, non-causal, bf16, head dim 64, with the
// scores S, the probabilities P and the output O in ONE tensor-memory allocation.
// COMPILE-ONLY in this project: no Blackwell GPU was available, so this kernel has been
// built with nvcc (-c, sm_100a) against the real TK headers but never run; its harness is
// written to run unchanged on a B200.
//
// One CTA = one 128-row Q tile of one (batch, head); KV tiles of 128 rows, two stages.
// Roles (192 threads = 6 warps):
//   warps 0..3  softmax (one warpgroup): warp w owns rows [32w, 32w+32) = TMEM lane quarter w.
//               Reads S (tcgen05.ld), writes P = exp2(scale * (S - m)) as bf16 (tcgen05.st),
//               rescales O in TMEM when the row maximum grows, and writes O / l at the end.
//   warp 4      loader (lane 0): Q once, then K and V of every KV tile into the ring.
//   warp 5      MMA issuer (lane 0): S = Q K^T (smem x smem), O += P V (P read from TMEM).
// TMEM: tensor_allocator<1, 1, false> (512 columns), provisioned by warp 0, released by warp 0
//   after the final block barrier:  S = tt<float, 128, 128> at column 0,
//                                   P = tt<bf16, 128, 128>  at column 128,
//                                   O = tt<float, 128, 64>  at column 256.
// Barriers (thread 0 initialises, then __syncthreads):
//   q_arrived          (0, 1) + 16384 B: the loader's expect and Q load; waited once.
//   kv_arrived[s]      (0, 1) + 32768 B: K and V of the stage.
//   kv_finished[s]     1: tensor_commit after the PV MMA that last reads the stage.
//   s_full             1: the commit of the S MMA (mm_ABt(S, Q, K, s_full)).
//   p_ready            4: lane 0 of every softmax warp, after P (and the rescaled O) are
//                      written and fenced: the MMA thread may read P and overwrite S.
//   o_done             1: the commit of the PV MMA: P may be overwritten and O read.
// Schedule: the MMA thread issues S(j) after PV(j-1), which waits p_ready(j-1); the softmax
//   warps write P(j) and rescale O only after o_done(j-1).
#include "kittens.cuh"
#include <cstdio>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int D = 64, BQ = 128, BKV = 128, KV_STAGES = 2;
constexpr int SOFTMAX_WARPS = 4, LOADER_WARP = 4, MMA_WARP = 5;
constexpr int NUM_THREADS = 6 * 32;

using q_tile = st_bf<BQ, D>;
using kv_tile = st_bf<BKV, D>;
using s_tt = tt<float, BQ, BKV>;
using p_tt = tt<bf16, BQ, BKV>;
using o_tt = tt<float, BQ, D>;
using q_gl = gl<bf16, -1, -1, -1, -1, q_tile>;
using kv_gl = gl<bf16, -1, -1, -1, -1, kv_tile>;
using o_gl = gl<bf16, -1, -1, -1, -1>;

struct attn_globals { q_gl Q; kv_gl K, V; o_gl O; int kv_tiles; };

constexpr size_t SMEM_BYTES = sizeof(q_tile) + 2 * KV_STAGES * sizeof(kv_tile) + 1024;

__global__ __launch_bounds__(NUM_THREADS, 1)
void attn_tmem_kernel(const __grid_constant__ attn_globals g) {
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    q_tile &Q_s = al.allocate<q_tile>();
    kv_tile (&K_s)[KV_STAGES] = al.allocate<kv_tile, KV_STAGES>();
    kv_tile (&V_s)[KV_STAGES] = al.allocate<kv_tile, KV_STAGES>();

    __shared__ semaphore q_arrived, kv_arrived[KV_STAGES], kv_finished[KV_STAGES];
    __shared__ semaphore s_full, p_ready, o_done;
    __shared__ uint32_t tmem_base;

    const int qt = blockIdx.x, head = blockIdx.y, batch = blockIdx.z;
    const int n = g.kv_tiles;

    if (threadIdx.x == 0) {
        init_semaphore(q_arrived, 0, 1);
        for (int s = 0; s < KV_STAGES; s++) {
            init_semaphore(kv_arrived[s], 0, 1);
            init_semaphore(kv_finished[s], 0, 1);
        }
        init_semaphore(s_full, 0, 1);
        init_semaphore(p_ready, SOFTMAX_WARPS, 0);
        init_semaphore(o_done, 0, 1);
    }
    tensor_allocator<1, 1, false> tm;
    if (warpid() == 0) tm.provision(tmem_base);
    tensor_before_thread_sync();
    __syncthreads();
    tensor_after_thread_sync();
    tm.set_addr(tmem_base);
    s_tt S = tm.allocate<s_tt>(0);
    p_tt P = tm.allocate<p_tt>(BKV);
    o_tt O = tm.allocate<o_tt>(2 * BKV);

    const int warp = warpid();
    if (warp < SOFTMAX_WARPS) {
        // ---------------- softmax (warps 0..3, TMEM lane quarter = warp) ----------------
        const float scale = 1.44269504f / 8.0f;   // log2(e) / sqrt(D)
        typename rt_fl<32, 64>::col_vec m, l, m_new, alpha;
        rt_fl<32, 64> s[2], o;
        rt_bf<32, 64> p[2];
        tt<float, 32, 64> o_rows = O.template subtile<tt<float, 32, 64>>(32 * warp, 0);   // this warp's lanes of O
        tt<bf16, 32, 64> p_lo = P.template subtile<tt<bf16, 32, 64>>(32 * warp, 0);      // and of P
        tt<bf16, 32, 64> p_hi = P.template subtile<tt<bf16, 32, 64>>(32 * warp, BKV / 2);
        for (int j = 0; j < n; j++) {
            wait(s_full, j % 2);
            tensor_after_thread_sync();
            #pragma unroll
            for (int c = 0; c < 2; c++)
                warp::load_async(s[c], S.template subtile<tt<float, 32, 64>>(32 * warp, 64 * c));
            tensor_load_wait();
            warp::row_max(m_new, s[0]);
            warp::row_max(m_new, s[1], m_new);
            if (j > 0) warp::max(m_new, m_new, m);
            #pragma unroll
            for (int c = 0; c < 2; c++) {
                warp::sub_row(s[c], s[c], m_new);
                warp::mul(s[c], s[c], scale);
                warp::exp2(s[c], s[c]);
                warp::copy(p[c], s[c]);
            }
            if (j > 0) {
                warp::sub(alpha, m, m_new);
                warp::mul(alpha, alpha, scale);
                warp::exp2(alpha, alpha);
                warp::mul(l, l, alpha);
                warp::row_sum(l, s[0], l);
                warp::row_sum(l, s[1], l);
                wait(o_done, (j - 1) % 2);   // PV(j-1) done: P is free, O holds the sum so far
                tensor_after_thread_sync();
                warp::load_async(o, o_rows);
                tensor_load_wait();
                warp::mul_row(o, o, alpha);
                warp::store_async(o_rows, o);
            } else {
                warp::row_sum(l, s[0]);
                warp::row_sum(l, s[1], l);
            }
            warp::copy(m, m_new);
            warp::store_async(p_lo, p[0]);
            warp::store_async(p_hi, p[1]);
            tensor_store_wait();
            tensor_before_thread_sync();
            __syncwarp();
            if (laneid() == 0) arrive(p_ready);
        }
        wait(o_done, (n - 1) % 2);   // the last PV
        tensor_after_thread_sync();
        warp::load_async(o, o_rows);
        tensor_load_wait();
        warp::div_row(o, o, l);
        rt_bf<32, 64> o_bf;
        warp::copy(o_bf, o);
        warp::store(g.O, o_bf, {batch, head, 4 * qt + warp, 0});
    } else if (warp == LOADER_WARP) {
        // ---------------- loader (one lane) ----------------
        if (laneid() == 0) {
            tma::expect(q_arrived, Q_s);
            tma::load_async(Q_s, g.Q, {batch, head, qt, 0}, q_arrived);
            for (int j = 0; j < n; j++) {
                const int s = j % KV_STAGES;
                wait(kv_finished[s], ((j / KV_STAGES) % 2) ^ 1);
                tma::expect(kv_arrived[s], K_s[s], V_s[s]);
                tma::load_async(K_s[s], g.K, {batch, head, j, 0}, kv_arrived[s]);
                tma::load_async(V_s[s], g.V, {batch, head, j, 0}, kv_arrived[s]);
            }
            for (int j = n; j < n + KV_STAGES; j++)   // drain: the last commit on each stage has landed
                wait(kv_finished[j % KV_STAGES], ((j / KV_STAGES) % 2) ^ 1);
        }
    } else {
        // ---------------- MMA issuer (one lane) ----------------
        if (laneid() == 0) {
            wait(q_arrived, 0);
            for (int j = 0; j < n; j++) {
                const int s = j % KV_STAGES;
                wait(kv_arrived[s], (j / KV_STAGES) % 2);
                if (j > 0) {
                    const int sp = (j - 1) % KV_STAGES;
                    wait(p_ready, (j - 1) % 2);   // P(j-1) written, S(j-1) read, O rescaled
                    tensor_after_thread_sync();
                    if (j == 1) mm_AB(O, P, V_s[sp], o_done);
                    else        mma_AB(O, P, V_s[sp], o_done);
                    tensor_commit<1>(kv_finished[sp]);
                }
                mm_ABt(S, Q_s, K_s[s], s_full);
            }
            const int sl = (n - 1) % KV_STAGES;
            wait(p_ready, (n - 1) % 2);
            tensor_after_thread_sync();
            if (n == 1) mm_AB(O, P, V_s[sl], o_done);
            else        mma_AB(O, P, V_s[sl], o_done);
            tensor_commit<1>(kv_finished[sl]);
        }
    }
    __syncwarp();
    tensor_before_thread_sync();
    __syncthreads();   // every TMEM access of every role is done before the release
    tensor_after_thread_sync();
    if (warp == 0) tm.deprovision();
}

// ---------------------------------------------------------------------------------------
// host harness: deterministic inputs, naive GPU reference, max_abs_err, PASS/FAIL
// ---------------------------------------------------------------------------------------
__global__ void attn_reference(const bf16 *Q, const bf16 *K, const bf16 *V, float *O, int N) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x, bh = blockIdx.y;
    if (row >= N) return;
    const bf16 *q = Q + ((size_t)bh * N + row) * D;
    float mx = -INFINITY, sum = 0.f, acc[D];
    for (int d = 0; d < D; d++) acc[d] = 0.f;
    for (int k = 0; k < N; k++) {
        const bf16 *kk = K + ((size_t)bh * N + k) * D, *vv = V + ((size_t)bh * N + k) * D;
        float s = 0.f;
        for (int d = 0; d < D; d++) s += __bfloat162float(q[d]) * __bfloat162float(kk[d]);
        s *= 0.125f;
        const float nm = fmaxf(mx, s), corr = expf(mx - nm), p = expf(s - nm);
        sum = sum * corr + p;
        for (int d = 0; d < D; d++) acc[d] = acc[d] * corr + p * __bfloat162float(vv[d]);
        mx = nm;
    }
    for (int d = 0; d < D; d++) O[((size_t)bh * N + row) * D + d] = acc[d] / sum;
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int B = 2, H = 8, N = 1024;
    const size_t elems = (size_t)B * H * N * D;
    std::vector<bf16> hQ(elems), hK(elems), hV(elems);
    uint32_t seed = 4242u;
    for (auto &x : hQ) x = __float2bfloat16(2.f * lcg_uniform(seed));
    for (auto &x : hK) x = __float2bfloat16(2.f * lcg_uniform(seed));
    for (auto &x : hV) x = __float2bfloat16(lcg_uniform(seed));

    bf16 *dQ, *dK, *dV, *dO; float *dRef;
    CUDA_CHECK(cudaMalloc(&dQ, elems * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dK, elems * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dV, elems * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dO, elems * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dRef, elems * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dQ, hQ.data(), elems * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dK, hK.data(), elems * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dV, hV.data(), elems * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dO, 0, elems * sizeof(bf16)));

    attn_globals g{q_gl{dQ, B, H, N, D}, kv_gl{dK, B, H, N, D}, kv_gl{dV, B, H, N, D},
                   o_gl{dO, B, H, N, D}, N / BKV};
    CUDA_CHECK(cudaFuncSetAttribute(attn_tmem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    attn_tmem_kernel<<<dim3(N / BQ, H, B), NUM_THREADS, SMEM_BYTES>>>(g);
    CUDA_CHECK(cudaGetLastError());
    attn_reference<<<dim3(N / 128, B * H), 128>>>(dQ, dK, dV, dRef, N);
    CUDA_CHECK(cudaDeviceSynchronize());

    std::vector<bf16> hO(elems);
    std::vector<float> hRef(elems);
    CUDA_CHECK(cudaMemcpy(hO.data(), dO, elems * sizeof(bf16), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hRef.data(), dRef, elems * sizeof(float), cudaMemcpyDeviceToHost));
    double max_err = 0.0, max_ref = 0.0;
    for (size_t i = 0; i < elems; i++) {
        double v = __bfloat162float(hO[i]);
        double e = std::isfinite(v) ? fabs(v - hRef[i]) : 1e30;
        if (e > max_err) max_err = e;
        max_ref = fmax(max_ref, fabs(hRef[i]));
    }
    bool ok = max_err <= 0.02;
    printf("attn_tmem B=%d H=%d N=%d D=%d max_abs_err=%.5f (max |ref| %.3f)\n", B, H, N, D, max_err, max_ref);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dQ); cudaFree(dK); cudaFree(dV); cudaFree(dO); cudaFree(dRef);
    return ok ? 0 : 1;
}
