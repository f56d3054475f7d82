// cuda_pipeline_stages.cu -- a producer/consumer ring written with libcu++'s partitioned
// `cuda::pipeline<cuda::thread_scope_block>` (`cuda::make_pipeline(block, &state, role)`) and
// `cuda::memcpy_async` into a 3-stage shared ring.
//
// y[t][j] = x[t][j] * x[t][1023 - j] + 1 over NT tiles of 1024 floats; persistent grid-stride
// over tiles; 192 threads: warps 0-1 producers (each thread copies 4 x 16 bytes of a tile),
// warps 2-5 consumers (each thread computes 8 elements, reading what other producer threads
// copied).
// Ring: buf_s[STAGES][1024]; the pipeline's shared state has STAGES stages, so its own head/tail
// and the ring index s (advanced by every thread once a tile) name the same stage.
// Producers: producer_acquire (waits until the consumers released the stage), the copies with
// the pipeline as their completion object, producer_commit. Consumers: consumer_wait (the
// stage's copies complete), the reads, consumer_release. Every thread runs the same number of
// tiles, so no stage is left acquired or unreleased at exit.
#include <cooperative_groups.h>
#include <cuda/pipeline>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

namespace cg = cooperative_groups;

constexpr int STAGES = 3, TILE = 1024, PRODUCERS = 64, CONSUMERS = 128;

__global__ __launch_bounds__(PRODUCERS + CONSUMERS)
void pipe_kernel(const float *X, float *Y, int nt) {
    __shared__ alignas(128) float buf_s[STAGES][TILE];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, STAGES> state;
    auto block = cg::this_thread_block();
    const bool producer = threadIdx.x < PRODUCERS;
    auto pipe = cuda::make_pipeline(block, &state, producer ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer);
    int s = 0;
    for (int t = blockIdx.x; t < nt; t += gridDim.x) {
        if (producer) {
            pipe.producer_acquire();
            for (int q = 0; q < 4; q++) {
                const int e = (q * PRODUCERS + threadIdx.x) * 4;
                cuda::memcpy_async(&buf_s[s][e], &X[(size_t)t * TILE + e], cuda::aligned_size_t<16>(16), pipe);
            }
            pipe.producer_commit();
        } else {
            const int c = threadIdx.x - PRODUCERS;
            pipe.consumer_wait();
            for (int q = 0; q < 8; q++) {
                const int j = q * CONSUMERS + c;
                Y[(size_t)t * TILE + j] = buf_s[s][j] * buf_s[s][TILE - 1 - j] + 1.0f;
            }
            pipe.consumer_release();
        }
        if (++s == STAGES) s = 0;
    }
}

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); printf("FAIL\n"); return 2; } } while (0)

static float lcg_uniform(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / 16777216.0f - 0.5f;
}

int main() {
    const int NT = 8192;
    std::vector<float> hX((size_t)NT * TILE);
    uint32_t seed = 4303u;
    for (auto &v : hX) v = 4.0f * lcg_uniform(seed);
    float *dX, *dY;
    CUDA_CHECK(cudaMalloc(&dX, hX.size() * 4));
    CUDA_CHECK(cudaMalloc(&dY, hX.size() * 4));
    CUDA_CHECK(cudaMemcpy(dX, hX.data(), hX.size() * 4, cudaMemcpyHostToDevice));
    std::vector<float> hY(hX.size());
    double max_err = 0.0;
    const int reps = getenv("ONE_REP") ? 1 : 5;
    for (int rep = 0; rep < reps; rep++) {
        CUDA_CHECK(cudaMemset(dY, 0xff, hX.size() * 4));  // NaN poison
        pipe_kernel<<<132, PRODUCERS + CONSUMERS>>>(dX, dY, NT);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(hY.data(), dY, hY.size() * 4, cudaMemcpyDeviceToHost));
        for (size_t t = 0; t < (size_t)NT; t++)
            for (int j = 0; j < TILE; j++) {
                const double ref = (double)hX[t * TILE + j] * hX[t * TILE + TILE - 1 - j] + 1.0;
                const double y = hY[t * TILE + j];
                const double e = std::isfinite(y) ? fabs(y - ref) : 1e30;
                if (e > max_err) max_err = e;
            }
    }
    const bool ok = max_err <= 1e-4;
    printf("cuda_pipeline_stages NT=%d max_abs_err=%.6f\n", NT, max_err);
    printf("%s\n", ok ? "PASS" : "FAIL");
    cudaFree(dX); cudaFree(dY);
    return ok ? 0 : 1;
}
