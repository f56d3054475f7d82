// tkcheck SASS rule test (TK603): a proxy fence and an mbarrier arrive placed, by
// mistake, behind the sm_90a feature guard while the bulk store and the wait are not.
// Built for sm_90a the binary matches the source; built for sm_90 it has a bulk store
// with no fence.proxy.async and no arrive (the source analysis saw both).
#include <cstdint>

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void proxy_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(bar)) : "memory");
#endif
}

__global__ void __launch_bounds__(128, 1) sync_kernel(float *out) {
    __shared__ alignas(128) float buf[1024];
    __shared__ alignas(8) uint64_t bar;
    if (threadIdx.x == 0)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(&bar)), "r"(128) : "memory");
    __syncthreads();
    for (int i = threadIdx.x; i < 1024; i += 128) buf[i] = (float)i;
    proxy_fence();  // L:fence
    mbar_arrive(&bar);  // L:arrive
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n @!p bra W;\n}"
                 :: "r"(smem_addr(&bar)) : "memory");
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 4096;"
                     :: "l"(out), "r"(smem_addr(buf)) : "memory");  // L:store
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
