// tkcheck SASS test (TK406 evidence): warp-specialized setmaxnreg in a kernel with no
// register cap at entry (no __launch_bounds__): ptxas ignores it (C7508, no USETMAXREG).
// -DCAPPED adds __launch_bounds__(256, 1) and ptxas honours it.
#ifdef CAPPED
#define BOUNDS __launch_bounds__(256, 1)
#else
#define BOUNDS
#endif

template <int N> __device__ __forceinline__ void up() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(N));
}
template <int N> __device__ __forceinline__ void down() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(N));
}

__global__ void BOUNDS regs_kernel(float *out) {
    if (threadIdx.x / 128 == 0) {
        down<40>();  // L:down
        out[threadIdx.x] = 1.0f;
    } else {
        up<232>();  // L:up
        out[threadIdx.x] = 2.0f;
    }
}
