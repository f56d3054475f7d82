// Test kernel for tkcheck's SASS front end: Blackwell tcgen05 (TMEM alloc, MMA, commit, ld).
// Only the sm_100a build issues tcgen05; other targets get an empty body.
#include <cstdint>

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__global__ void __launch_bounds__(128, 1) tcgen05_kernel(uint32_t *out, uint64_t desc_a, uint64_t desc_b, uint32_t idesc) {
#if defined(__CUDA_ARCH_FEAT_SM100_ALL)
    __shared__ uint32_t tmem_slot;
    __shared__ alignas(8) uint64_t bar;
    const uint32_t bar_addr = smem_addr(&bar);
    const int warp = threadIdx.x / 32;
    if (warp == 0) {
        asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 32;"
                     :: "r"(smem_addr(&tmem_slot)));  // L:tc_alloc
        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");  // L:tc_relinquish
    }
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar_addr), "r"(1));  // L:tc_init
    }
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");  // L:tc_fence_after
    const uint32_t tmem = tmem_slot;
    if (threadIdx.x == 0) {
        asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %4, 0;\n"
                     " tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n}"
                     :: "r"(tmem), "l"(desc_a), "l"(desc_b), "r"(idesc), "r"(0));  // L:tc_mma
        asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];"
                     :: "r"(bar_addr) : "memory");  // L:tc_commit
    }
    uint32_t done = 0;
    while (!done) {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(bar_addr), "r"(0) : "memory");  // L:tc_wait
    }
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
    uint32_t v;
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x1.b32 {%0}, [%1];"
                 : "=r"(v) : "r"(tmem + ((uint32_t)(warp * 32) << 16)));  // L:tc_ld
    asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");  // L:tc_wait_ld
    out[threadIdx.x] = v;
    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");  // L:tc_fence_before
    __syncthreads();
    if (warp == 0) {
        asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 32;" :: "r"(tmem));  // L:tc_dealloc
    }
#endif
}
