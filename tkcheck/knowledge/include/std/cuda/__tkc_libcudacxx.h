// tkcheck stand-in for the parts of libcu++ (<cuda/barrier>, <cuda/pipeline>, <cuda/semaphore>,
// <cuda/latch>, <cuda/atomic>) that asynchronous kernels use: cuda::barrier (an mbarrier in shared memory),
// memcpy_async, the TMA/bulk-copy helpers in cuda::device::experimental, cuda::pipeline.
// Declaration-only, written for tkcheck from the libcu++ documentation.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "../../tkcheck_cuda_builtins.h"
#include "../cuda.h"
#include "../cstddef"
#include "../cstdint"
#include "../type_traits"
#include "../chrono"
#include "../utility"
#include "../atomic"
namespace cuda {
namespace std = ::std;
enum thread_scope { thread_scope_system = 0, thread_scope_device = 1, thread_scope_block = 2, thread_scope_thread = 3 };
struct __tkc_empty_completion { __host__ __device__ void operator()() noexcept {} };

template<thread_scope Scope, typename CompletionFunction = __tkc_empty_completion>
class barrier {
    unsigned long long __state;
public:
    class arrival_token { unsigned long long __t; };
    barrier() = default;
    barrier(const barrier &) = delete;
    __host__ __device__ barrier(::ptrdiff_t expected, CompletionFunction completion = CompletionFunction());
    [[nodiscard]] __host__ __device__ arrival_token arrive(::ptrdiff_t update = 1);
    __host__ __device__ void wait(arrival_token &&token) const;
    __host__ __device__ bool try_wait(arrival_token &&token) const;
    __host__ __device__ void wait_parity(bool phase) const;
    __host__ __device__ bool try_wait_parity(bool phase) const;
    __host__ __device__ void arrive_and_wait();
    __host__ __device__ void arrive_and_drop();
    __host__ __device__ static constexpr ::ptrdiff_t max() noexcept { return 0x7fffffff; }
    template<thread_scope S, typename C> friend __host__ __device__ void init(barrier<S, C> *b, ::ptrdiff_t expected, C completion);
};
template<thread_scope S, typename C = __tkc_empty_completion>
__host__ __device__ void init(barrier<S, C> *b, ::ptrdiff_t expected, C completion = C());

template<::size_t Alignment> struct aligned_size_t {
    ::size_t value;
    __host__ __device__ explicit constexpr aligned_size_t(::size_t size) : value(size) {}
    __host__ __device__ constexpr operator ::size_t() const { return value; }
};

template<thread_scope Scope> class pipeline {
public:
    pipeline(const pipeline &) = delete;
    __host__ __device__ ~pipeline();
    __host__ __device__ void producer_acquire();
    __host__ __device__ void producer_commit();
    __host__ __device__ void consumer_wait();
    __host__ __device__ void consumer_release();
    template<class Rep, class Period> __host__ __device__ bool consumer_wait_for(const ::std::chrono::duration<Rep, Period> &d);
    __host__ __device__ bool quit();
};
template<thread_scope Scope, unsigned char StagesCount> class pipeline_shared_state {
public:
    pipeline_shared_state() = default;
    pipeline_shared_state(const pipeline_shared_state &) = delete;
};
enum class pipeline_role { producer, consumer };
__host__ __device__ pipeline<thread_scope_thread> make_pipeline();
template<typename Group, thread_scope Scope, unsigned char N>
__host__ __device__ pipeline<Scope> make_pipeline(const Group &group, pipeline_shared_state<Scope, N> *state);
template<typename Group, thread_scope Scope, unsigned char N>
__host__ __device__ pipeline<Scope> make_pipeline(const Group &group, pipeline_shared_state<Scope, N> *state, ::size_t producer_count);
template<typename Group, thread_scope Scope, unsigned char N>
__host__ __device__ pipeline<Scope> make_pipeline(const Group &group, pipeline_shared_state<Scope, N> *state, pipeline_role role);
template<unsigned char Prior> __host__ __device__ void pipeline_consumer_wait_prior(pipeline<thread_scope_thread> &pipe);
template<thread_scope Scope> __host__ __device__ void pipeline_producer_commit(pipeline<thread_scope_thread> &pipe, barrier<Scope> &bar);

// memcpy_async: completion through a barrier or a pipeline (size may be an aligned_size_t).
template<typename Shape, thread_scope Scope, typename C>
__host__ __device__ void memcpy_async(void *dst, const void *src, Shape size, barrier<Scope, C> &bar);
template<typename Group, typename Shape, thread_scope Scope, typename C>
__host__ __device__ void memcpy_async(const Group &group, void *dst, const void *src, Shape size, barrier<Scope, C> &bar);
template<typename Shape, thread_scope Scope>
__host__ __device__ void memcpy_async(void *dst, const void *src, Shape size, pipeline<Scope> &pipe);
template<typename Group, typename Shape, thread_scope Scope>
__host__ __device__ void memcpy_async(const Group &group, void *dst, const void *src, Shape size, pipeline<Scope> &pipe);

namespace device {
__device__ ::uint64_t *barrier_native_handle(barrier<thread_scope_block> &b);
[[nodiscard]] __device__ barrier<thread_scope_block>::arrival_token barrier_arrive_tx(barrier<thread_scope_block> &b, ::ptrdiff_t arrive_count_update, ::ptrdiff_t transaction_count_update);
__device__ void barrier_expect_tx(barrier<thread_scope_block> &b, ::ptrdiff_t transaction_count_update);
template<typename T, ::size_t Alignment>
__device__ void memcpy_async_tx(T *dst, const T *src, aligned_size_t<Alignment> size, barrier<thread_scope_block> &b);
namespace experimental {
__device__ void cp_async_bulk_global_to_shared(void *dst, const void *src, int size, barrier<thread_scope_block> &bar);
__device__ void cp_async_bulk_shared_to_global(void *dst, const void *src, int size);
__device__ void cp_async_bulk_tensor_1d_global_to_shared(void *dst, const CUtensorMap *map, int c0, barrier<thread_scope_block> &bar);
__device__ void cp_async_bulk_tensor_2d_global_to_shared(void *dst, const CUtensorMap *map, int c0, int c1, barrier<thread_scope_block> &bar);
__device__ void cp_async_bulk_tensor_3d_global_to_shared(void *dst, const CUtensorMap *map, int c0, int c1, int c2, barrier<thread_scope_block> &bar);
__device__ void cp_async_bulk_tensor_4d_global_to_shared(void *dst, const CUtensorMap *map, int c0, int c1, int c2, int c3, barrier<thread_scope_block> &bar);
__device__ void cp_async_bulk_tensor_5d_global_to_shared(void *dst, const CUtensorMap *map, int c0, int c1, int c2, int c3, int c4, barrier<thread_scope_block> &bar);
__device__ void cp_async_bulk_tensor_1d_shared_to_global(const CUtensorMap *map, int c0, const void *src);
__device__ void cp_async_bulk_tensor_2d_shared_to_global(const CUtensorMap *map, int c0, int c1, const void *src);
__device__ void cp_async_bulk_tensor_3d_shared_to_global(const CUtensorMap *map, int c0, int c1, int c2, const void *src);
__device__ void cp_async_bulk_tensor_4d_shared_to_global(const CUtensorMap *map, int c0, int c1, int c2, int c3, const void *src);
__device__ void cp_async_bulk_tensor_5d_shared_to_global(const CUtensorMap *map, int c0, int c1, int c2, int c3, int c4, const void *src);
__device__ void fence_proxy_async_shared_cta();
__device__ void cp_async_bulk_commit_group();
template<int N> __device__ void cp_async_bulk_wait_group_read();
template<int N> __device__ void cp_async_bulk_wait_group();
}  // namespace experimental
}  // namespace device

template<thread_scope Scope, ::ptrdiff_t LeastMaxValue = 0x7fffffff> class counting_semaphore {
public:
    __host__ __device__ constexpr explicit counting_semaphore(::ptrdiff_t desired) : __c(desired) {}
    __host__ __device__ void release(::ptrdiff_t update = 1);
    __host__ __device__ void acquire();
    __host__ __device__ bool try_acquire() noexcept;
    static constexpr ::ptrdiff_t max() noexcept { return LeastMaxValue; }
private:
    ::ptrdiff_t __c;
};
template<thread_scope Scope> using binary_semaphore = counting_semaphore<Scope, 1>;

// cuda::latch: a one-shot count-down (libcu++ <cuda/latch>; constructed in place, no default
// constructor, so a `__shared__` one is raw storage plus placement new)
template<thread_scope Scope> class latch {
public:
    __host__ __device__ constexpr explicit latch(::ptrdiff_t expected) : __c(expected) {}
    latch(const latch &) = delete;
    __host__ __device__ void count_down(::ptrdiff_t update = 1);
    __host__ __device__ bool try_wait() const noexcept;
    __host__ __device__ void wait() const;
    __host__ __device__ void arrive_and_wait(::ptrdiff_t update = 1);
    static constexpr ::ptrdiff_t max() noexcept { return 0x7fffffff; }
private:
    ::ptrdiff_t __c;
};

// `cuda::memory_order` is `cuda::std::memory_order` (one type, as in libcu++)
using ::std::memory_order;
using ::std::memory_order_relaxed;
using ::std::memory_order_consume;
using ::std::memory_order_acquire;
using ::std::memory_order_release;
using ::std::memory_order_acq_rel;
using ::std::memory_order_seq_cst;
template<typename T, thread_scope Scope = thread_scope_system> struct atomic {
    T __v;
    atomic() = default;
    __host__ __device__ constexpr atomic(T v) noexcept : __v(v) {}
    __host__ __device__ T load(memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ void store(T v, memory_order o = memory_order_seq_cst) noexcept;
    __host__ __device__ T exchange(T v, memory_order o = memory_order_seq_cst) noexcept;
    __host__ __device__ bool compare_exchange_strong(T &expected, T desired, memory_order o = memory_order_seq_cst) noexcept;
    __host__ __device__ bool compare_exchange_weak(T &expected, T desired, memory_order o = memory_order_seq_cst) noexcept;
    __host__ __device__ T fetch_add(T v, memory_order o = memory_order_seq_cst) noexcept;
    __host__ __device__ T fetch_sub(T v, memory_order o = memory_order_seq_cst) noexcept;
    __host__ __device__ T fetch_or(T v, memory_order o = memory_order_seq_cst) noexcept;
    __host__ __device__ T fetch_and(T v, memory_order o = memory_order_seq_cst) noexcept;
    __host__ __device__ T fetch_xor(T v, memory_order o = memory_order_seq_cst) noexcept;
    __host__ __device__ T fetch_max(T v, memory_order o = memory_order_seq_cst) noexcept;
    __host__ __device__ T fetch_min(T v, memory_order o = memory_order_seq_cst) noexcept;
    __host__ __device__ void wait(T old, memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ void notify_one() noexcept;
    __host__ __device__ void notify_all() noexcept;
    __host__ __device__ operator T() const noexcept;
};
template<typename T, thread_scope Scope = thread_scope_system> struct atomic_ref {
    T *__p;
    __host__ __device__ explicit atomic_ref(T &r) : __p(&r) {}
    __host__ __device__ T load(memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ void store(T v, memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ T exchange(T v, memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ bool compare_exchange_strong(T &expected, T desired, memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ bool compare_exchange_weak(T &expected, T desired, memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ T fetch_add(T v, memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ T fetch_sub(T v, memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ T fetch_or(T v, memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ T fetch_and(T v, memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ T fetch_xor(T v, memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ T fetch_max(T v, memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ T fetch_min(T v, memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ void wait(T old, memory_order o = memory_order_seq_cst) const noexcept;
    __host__ __device__ void notify_one() const noexcept;
    __host__ __device__ void notify_all() const noexcept;
    __host__ __device__ operator T() const noexcept;
};
__host__ __device__ void atomic_thread_fence(memory_order order, thread_scope scope = thread_scope_system) noexcept;
}  // namespace cuda
