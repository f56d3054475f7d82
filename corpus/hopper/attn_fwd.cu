// attn_fwd.cu -- FlashAttention-style forward pass (non-causal) on Hopper, hand-written
// warp specialisation with a 2-stage K/V mbarrier ring.
//
// O = softmax(Q K^T / sqrt(D)) V, per (batch, head); Q, K, V, O are (B, H, N, D) bf16,
// D = 64.  One block handles 128 query rows of one (batch, head): 384 threads =
//   warpgroup 0       producer: one thread (warpgroup::laneid() == 0) issues every TMA load
//   warpgroups 1, 2   consumers: consumer c owns Q tile c (64 rows) and its own online
//                     softmax state (row max, row sum) and O accumulator in registers
// Shared memory: q_s[2], k_s[2], v_s[2] st_bf<64,64> (shared_allocator, 1024-aligned).
//   q_s[c] is reused as consumer c's O staging tile for the TMA store epilogue.
// Barriers (static __shared__, initialised by threadIdx.x == 0, then __syncthreads()):
//   q_full         init (0, 1): the producer's tma::expect is the one arrival; tx bytes =
//                  both Q tiles (16384 B).  Completes once: consumers wait parity 0.
//   kv_full[s]     init (0, 1): one expect arrival + K and V tile bytes (16384 B).
//   kv_empty[s]    init (CONSUMER_WARPS = 8, 0): lane 0 of each consumer warp arrives
//                  once per use of slot s, after the P*V mma has been waited on.
// Parity:
//   producer: slot s = kv % 2, waits kv_empty[s] with ((kv / 2) % 2) ^ 1 (fresh-barrier
//             parity-1 idiom: the first two loads do not block)
//   consumers: tic (slot) ^= 1 every iteration; phase ^= 1 each time tic wraps to 0, and
//             kv_full[tic] is waited with parity `phase`.
#include "kittens.cuh"
#include <cstdio>
#include <cmath>
#include <vector>

using namespace kittens;

constexpr int D              = 64;
constexpr int KV_STAGES      = 2;
constexpr int CONSUMER_WGS   = 2;
constexpr int CONSUMER_WARPS = CONSUMER_WGS * 4;
constexpr int NUM_THREADS    = (1 + CONSUMER_WGS) * 128;

using tile_t  = st_bf<64, D>;
using qkv_gl  = gl<bf16, -1, -1, -1, D, tile_t>;
using att_t   = rt_fl<16, 64>;                    // S / P for one 64 x 64 block
using o_t     = rt_fl<16, D>;
using rowv_t  = typename att_t::col_vec;          // one value per query row

struct attn_globals { qkv_gl Q, K, V, O; };

constexpr size_t SMEM_BYTES = 6 * sizeof(tile_t) + 1024;

__global__ __launch_bounds__(NUM_THREADS, 1)
void attn_fwd_kernel(const __grid_constant__ attn_globals g) {
    extern __shared__ alignment_dummy __shm[];
    shared_allocator al((int*)&__shm[0]);
    tile_t (&q_s)[CONSUMER_WGS] = al.allocate<tile_t, CONSUMER_WGS>();
    tile_t (&k_s)[KV_STAGES]    = al.allocate<tile_t, KV_STAGES>();
    tile_t (&v_s)[KV_STAGES]    = al.allocate<tile_t, KV_STAGES>();

    __shared__ semaphore q_full, kv_full[KV_STAGES], kv_empty[KV_STAGES];

    const int wg    = warpgroup::groupid();
    const int batch = blockIdx.z, head = blockIdx.y;
    const int q_blk = blockIdx.x * CONSUMER_WGS;       // first Q tile of this block
    const int n_kv  = g.K.rows() / 64;

    if (threadIdx.x == 0) {
        init_semaphore(q_full, 0, 1);
        for (int s = 0; s < KV_STAGES; s++) {
            init_semaphore(kv_full[s], 0, 1);
            init_semaphore(kv_empty[s], CONSUMER_WARPS, 0);
        }
    }
    __syncthreads();

    if (wg == 0) {
        // ---------------- producer ----------------
        warpgroup::decrease_registers<40>();
        if (warpgroup::laneid() == 0) {
            tma::expect(q_full, q_s[0], q_s[1]);
            tma::load_async(q_s[0], g.Q, {batch, head, q_blk + 0, 0}, q_full);
            tma::load_async(q_s[1], g.Q, {batch, head, q_blk + 1, 0}, q_full);
            for (int kv = 0; kv < n_kv; kv++) {
                int s = kv % KV_STAGES;
                wait(kv_empty[s], ((kv / KV_STAGES) % 2) ^ 1);
                tma::expect(kv_full[s], k_s[s], v_s[s]);
                tma::load_async(k_s[s], g.K, {batch, head, kv, 0}, kv_full[s]);
                tma::load_async(v_s[s], g.V, {batch, head, kv, 0}, kv_full[s]);
            }
        }
    } else {
        // ---------------- consumers ----------------
        warpgroup::increase_registers<232>();
        const int c = wg - 1;
        const float scale_log2 = 0.125f * 1.44269504089f;   // 1/sqrt(D) * log2(e)
        att_t  att;
        rt_bf<16, 64> att_bf;
        o_t    o;
        rowv_t max_vec, max_prev, norm_vec, rescale;
        warp::zero(o);
        warp::zero(norm_vec);
        warp::neg_infty(max_vec);

        wait(q_full, 0);
        int tic = 0, phase = 0;
        for (int kv = 0; kv < n_kv; kv++) {
            wait(kv_full[tic], phase);
            // S = Q K^T
            warpgroup::mm_ABt(att, q_s[c], k_s[tic]);
            warpgroup::mma_async_wait();
            // online softmax, base 2
            warp::mul(att, att, scale_log2);
            warp::copy(max_prev, max_vec);
            warp::row_max(max_vec, att, max_vec);
            warp::sub_row(att, att, max_vec);
            warp::exp2(att, att);
            warp::sub(rescale, max_prev, max_vec);
            warp::exp2(rescale, rescale);
            warp::mul(norm_vec, norm_vec, rescale);
            warp::row_sum(norm_vec, att, norm_vec);
            warp::mul_row(o, o, rescale);
            warp::copy(att_bf, att);
            // O += P V
            warpgroup::mma_AB(o, att_bf, v_s[tic]);
            warpgroup::mma_async_wait();
            if (laneid() == 0) arrive(kv_empty[tic]);
            tic ^= 1;
            if (tic == 0) phase ^= 1;
        }

        // epilogue: normalise, stage through this consumer's (now dead) Q tile, TMA store
        warp::div_row(o, o, norm_vec);
        warpgroup::store(q_s[c], o);
        warpgroup::sync(1 + c);
        if (warpgroup::laneid() == 0) {
            tma::store_async(g.O, q_s[c], {batch, head, q_blk + c, 0});
            tma::store_async_wait();
        }
    }
}

// ---------------------------------------------------------------------------------------
// host harness: naive GPU reference (one thread per query row, two-pass softmax)
// ---------------------------------------------------------------------------------------
__global__ void attn_reference(const bf16 *Q, const bf16 *K, const bf16 *V, float *O, int rows, int N) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;     // global row over B*H*N
    if (r >= rows) return;
    const bf16 *q = Q + (size_t)r * D;
    size_t base = (size_t)(r / N) * N * D;             // start of this (batch, head)
    float m = -INFINITY, l = 0.f, acc[D];
    for (int d = 0; d < D; d++) acc[d] = 0.f;
    for (int j = 0; j < N; j++) {
        float s = 0.f;
        for (int d = 0; d < D; d++) s += __bfloat162float(q[d]) * __bfloat162float(K[base + (size_t)j * D + d]);
        m = fmaxf(m, s * 0.125f);
    }
    for (int j = 0; j < N; j++) {
        float s = 0.f;
        for (int d = 0; d < D; d++) s += __bfloat162float(q[d]) * __bfloat162float(K[base + (size_t)j * D + d]);
        float p = expf(s * 0.125f - m);
        l += p;
        for (int d = 0; d < D; d++) acc[d] += p * __bfloat162float(V[base + (size_t)j * D + d]);
    }
    for (int d = 0; d < D; d++) O[(size_t)r * D + d] = acc[d] / l;
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
    for (auto &x : hQ) x = __float2bfloat16(16.f * lcg_uniform(seed));  // peaky softmax: stale K/V shows
    for (auto &x : hK) x = __float2bfloat16(lcg_uniform(seed));
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

    attn_globals g{qkv_gl{dQ, B, H, N, nullptr}, qkv_gl{dK, B, H, N, nullptr},
                   qkv_gl{dV, B, H, N, nullptr}, qkv_gl{dO, B, H, N, nullptr}};
    CUDA_CHECK(cudaFuncSetAttribute(attn_fwd_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    attn_fwd_kernel<<<dim3(N / 128, H, B), NUM_THREADS, SMEM_BYTES>>>(g);
    CUDA_CHECK(cudaGetLastError());
    attn_reference<<<(B * H * N + 127) / 128, 128>>>(dQ, dK, dV, dRef, B * H * N, N);
    CUDA_CHECK(cudaDeviceSynchronize());

    std::vector<bf16> hO(elems);
    std::vector<float> hRef(elems);
    CUDA_CHECK(cudaMemcpy(hO.data(), dO, elems * sizeof(bf16), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hRef.data(), dRef, elems * sizeof(float), cudaMemcpyDeviceToHost));
    double max_err = 0.0;
    for (size_t i = 0; i < elems; i++) {
        double v = __bfloat162float(hO[i]);
        double e = std::isfinite(v) ? fabs(v - hRef[i]) : 1e30;
        if (e > max_err) max_err = e;
    }
    bool ok = max_err <= 4e-3;
    printf("attn_fwd B=%d H=%d N=%d D=%d max_abs_err=%.5f\n", B, H, N, D, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dQ); cudaFree(dK); cudaFree(dV); cudaFree(dO); cudaFree(dRef);
    return ok ? 0 : 1;
}
