// tkcheck SASS rule test (TK602): a warp-specialized kernel (producer / consumer
// warpgroups with setmaxnreg) whose consumer keeps more values live than the register
// cap of __launch_bounds__(384, 1) allows (168), so ptxas spills to local memory.
// -DSMALL keeps the consumer's working set small (no spill).
#include <cstdint>

#ifndef WORK
#ifdef SMALL
#define WORK 16
#else
#define WORK 224
#endif
#endif

template <int N> __device__ __forceinline__ void grow() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(N));
}
template <int N> __device__ __forceinline__ void shrink() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(N));
}

__global__ void __launch_bounds__(384, 1) ws_kernel(const float *__restrict__ in, float *__restrict__ out, int n) {
    const int wg = threadIdx.x / 128;
    if (wg == 0) {
        shrink<40>();  // L:producer
        if (threadIdx.x == 0) out[0] = in[0];
    } else {
        grow<232>();  // L:consumer
        float acc[WORK];
#pragma unroll
        for (int i = 0; i < WORK; ++i) acc[i] = in[threadIdx.x + i * 384];
        for (int k = 0; k < n; ++k) {
#pragma unroll
            for (int i = 0; i < WORK; ++i) acc[i] = acc[i] * acc[(i + 7) % WORK] + in[k * WORK + i];  // L:work
        }
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < WORK; ++i) s += acc[i] * (float)(i + 1);
        out[threadIdx.x] = s;
    }
}
