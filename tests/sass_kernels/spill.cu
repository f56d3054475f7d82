// Test kernel for tkcheck's SASS front end: a kernel with a register cap low enough to spill.
__global__ void __launch_bounds__(256, 8) spill_kernel(const float *__restrict__ in, float *__restrict__ out, int n) {
    float acc[96];
#pragma unroll
    for (int i = 0; i < 96; ++i) acc[i] = in[threadIdx.x + i * 256];
    for (int k = 0; k < n; ++k) {
#pragma unroll
        for (int i = 0; i < 96; ++i) acc[i] = acc[i] * acc[(i + k) % 96 == i ? i : (i + 1) % 96] + in[k];  // L:spill_loop
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 96; ++i) s += acc[i] * (float)i;
    out[threadIdx.x] = s;
}
