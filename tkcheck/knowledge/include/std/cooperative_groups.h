// tkcheck stand-in for <cooperative_groups.h>: the groups raw kernels use for block, cluster and
// grid synchronisation and distributed shared memory. Declaration-only, written for tkcheck.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "../tkcheck_cuda_builtins.h"
namespace cooperative_groups {
class thread_group {
public:
    __device__ void sync() const;
    __device__ unsigned long long size() const;
    __device__ unsigned long long num_threads() const;
    __device__ unsigned long long thread_rank() const;
    __device__ bool is_valid() const;
};
class thread_block : public thread_group {
public:
    __device__ dim3 group_index() const;
    __device__ dim3 thread_index() const;
    __device__ dim3 group_dim() const;
    __device__ dim3 dim_threads() const;
};
class grid_group : public thread_group {
public:
    __device__ dim3 group_dim() const;
    __device__ dim3 dim_blocks() const;
    __device__ dim3 block_index() const;
    __device__ unsigned long long block_rank() const;
    __device__ unsigned long long num_blocks() const;
};
class cluster_group : public thread_group {
public:
    __device__ void barrier_arrive() const;
    __device__ void barrier_wait() const;
    __device__ unsigned int block_rank() const;
    __device__ unsigned int num_blocks() const;
    __device__ dim3 block_index() const;
    __device__ dim3 dim_blocks() const;
    template<typename T> __device__ T *map_shared_rank(T *addr, int rank) const;
    template<typename T> __device__ unsigned int query_shared_rank(T *addr) const;
};
class coalesced_group : public thread_group {
public:
    __device__ unsigned long long meta_group_rank() const;
    template<typename T> __device__ T shfl(T var, int src_rank) const;
    __device__ unsigned int ballot(int predicate) const;
};
template<unsigned int Size, typename Parent = void> class thread_block_tile;
// a tile of a known parent converts to the tile of no parent (`thread_block_tile<32> w =
// tiled_partition<32>(block);`)
template<unsigned int Size, typename Parent> class thread_block_tile : public thread_block_tile<Size, void> {};
template<unsigned int Size> class thread_block_tile<Size, void> : public thread_group {
public:
    static constexpr unsigned int __size = Size;
    __device__ unsigned long long meta_group_rank() const;
    __device__ unsigned long long meta_group_size() const;
    template<typename T> __device__ T shfl(T var, int src_rank) const;
    template<typename T> __device__ T shfl_down(T var, unsigned int delta) const;
    template<typename T> __device__ T shfl_up(T var, unsigned int delta) const;
    template<typename T> __device__ T shfl_xor(T var, unsigned int mask) const;
    __device__ int any(int predicate) const;
    __device__ int all(int predicate) const;
    __device__ unsigned int ballot(int predicate) const;
};
__device__ thread_block this_thread_block();
__device__ grid_group this_grid();
__device__ cluster_group this_cluster();
__device__ coalesced_group coalesced_threads();
template<unsigned int Size, typename P> __device__ thread_block_tile<Size, P> tiled_partition(const P &parent);
__device__ thread_group tiled_partition(const thread_group &parent, unsigned int tile_size);
template<typename G> __device__ void sync(const G &g);
// invoke_one(g, fn, args...): one thread of g calls fn(args...) (round 17). Which thread is the
// implementation's choice (an election over a warp-sized tile); the model takes rank 0, as it
// takes lane 0 for TK's and PTX's elections (walk_calls, walk_asm._elected_lane). The body is
// walked: the call is a branch of that one thread.
template<typename G, typename Fn, typename... Args> __device__ void invoke_one(const G &g, Fn &&fn, Args &&...args) {
    if (g.thread_rank() == 0) fn(args...);
}
namespace details {}
}
