// Test kernels for tkcheck's SASS front end: setmaxnreg with and without a register cap.
#include <cstdint>

template <int N> __device__ __forceinline__ void inc_regs() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(N));
}
template <int N> __device__ __forceinline__ void dec_regs() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(N));
}

// Register cap at entry: setmaxnreg is honoured.
__global__ void __launch_bounds__(384, 1) capped_kernel(float *out) {
    const int wg = threadIdx.x / 128;
    if (wg == 0) {
        dec_regs<40>();  // L:capped_dec
        out[threadIdx.x] = 1.0f;
    } else {
        inc_regs<232>();  // L:capped_inc
        out[threadIdx.x] = 2.0f;
    }
}

// No register cap: ptxas ignores setmaxnreg and warns.
__global__ void uncapped_kernel(float *out) {
    const int wg = threadIdx.x / 128;
    if (wg == 0) {
        dec_regs<40>();  // L:uncapped_dec
        out[threadIdx.x] = 1.0f;
    } else {
        inc_regs<232>();  // L:uncapped_inc
        out[threadIdx.x] = 2.0f;
    }
}
