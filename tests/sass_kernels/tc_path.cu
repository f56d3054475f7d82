// tkcheck SASS rule test (TK601): a wgmma behind the sm_90a feature guard.
// Built for sm_90a the HGMMA is there; built for plain sm_90 the guard is off and the
// binary has no tensor-core instruction although the source (as analysed) issues one.
#include <cstdint>

__device__ __forceinline__ void mma_64x8x16(float (&d)[4], uint64_t da, uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %6, 0;\n"
                 " wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "l"(da), "l"(db), "r"(1));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
}

__global__ void __launch_bounds__(128, 1) tc_kernel(float *out, uint64_t da, uint64_t db) {
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    mma_64x8x16(d, da, db);  // L:mma
    reinterpret_cast<float4 *>(out)[threadIdx.x] = make_float4(d[0], d[1], d[2], d[3]);
}
