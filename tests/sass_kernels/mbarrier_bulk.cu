// Test kernel for tkcheck's SASS front end: mbarrier + bulk copy + named barrier.
// Each marked line is checked by tests/test_sass.py: keep the "// L:" tags on the
// line that issues the instruction.
#include <cstdint>

struct alignas(64) TensorMapBytes { unsigned char bytes[128]; };

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__global__ void mbarrier_bulk_kernel(const float *__restrict__ src, float *__restrict__ dst,
                                     const __grid_constant__ TensorMapBytes tmap, int n) {
    __shared__ alignas(128) float tile[1024];
    __shared__ alignas(8) uint64_t bar;
    const uint32_t bar_addr = smem_addr(&bar);
    const uint32_t tile_addr = smem_addr(tile);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar_addr), "r"(1));  // L:init
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // L:fence_init
    }
    __syncthreads();  // L:syncthreads
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(bar_addr), "r"(4096) : "memory");  // L:expect_tx
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(tile_addr), "l"(src), "r"(2048), "r"(bar_addr) : "memory");  // L:bulk_load
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(tile_addr + 2048), "l"(&tmap), "r"(0), "r"(blockIdx.x), "r"(bar_addr) : "memory");  // L:tma_load
    }
    uint32_t done = 0;
    while (!done) {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(bar_addr), "r"(0) : "memory");  // L:try_wait
    }
    tile[threadIdx.x] *= 2.0f;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // L:fence_proxy
    asm volatile("bar.sync 1, 128;" ::: "memory");  // L:bar_sync
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                     :: "l"(&tmap), "r"(0), "r"(blockIdx.x), "r"(tile_addr) : "memory");  // L:tma_store
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                     :: "l"(dst), "r"(tile_addr), "r"(1024) : "memory");  // L:bulk_store
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");  // L:commit
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // L:wait_group
    }
    asm volatile("bar.arrive 2, 256;" ::: "memory");  // L:bar_arrive
    if (n > 0) dst[blockIdx.x * 128 + threadIdx.x] = tile[threadIdx.x];
}
