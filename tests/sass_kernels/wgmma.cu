// Test kernel for tkcheck's SASS front end: Hopper wgmma with fence/commit/wait.
// Built for sm_90a the tensor-core path is taken (HGMMA); built for sm_90 the
// feature macro is off and the scalar fallback is compiled instead (no HGMMA).
// The output index is read by a volatile asm after the wait so that ptxas cannot
// hoist its address math in front of the HGMMA (which would give the HGMMA that
// line in the line table).
#include <cstdint>

__global__ void __launch_bounds__(128, 1) wgmma_kernel(float *out, uint64_t desc_a, uint64_t desc_b) {
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");  // L:wgmma_fence
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %6, 0;\n"
                 " wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "l"(desc_a), "l"(desc_b), "r"(1));  // L:wgmma_mma
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");  // L:wgmma_commit
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");  // L:wgmma_wait
#else
    d0 = (float)(desc_a & 0xff) * (float)(desc_b & 0xff);  // L:fallback
#endif
    uint32_t tid;
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid) :: "memory");
    reinterpret_cast<float4 *>(out)[tid] = make_float4(d0, d1, d2, d3);
}
