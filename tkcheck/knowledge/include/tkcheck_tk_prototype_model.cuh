// tkcheck: declaration-only model of ThunderKittens' prototype templates (lcf, lcsf, lcsc,
// interpreter) -- what `#include "prototype.cuh"` maps to when no real TK checkout is given.
//
// A user of these templates writes a layout struct (globals, input_block, optional output_block /
// scratch_block / finish_block / common_state / producer_state / consumer_state) and a template
// struct with common_setup, producer::{setup, load[, store]}, consumer::{setup, compute, finish};
// the template kernel owns the shared memory, the mbarriers and the pipeline rings and calls them
// with the *_args structs below. The args structs are modelled member for member (typed through
// the user's layout) so `args.input.a[i]`, `args.inputs_arrived`, `args.state.accum` type-check.
//
// The protocol the kernels run (barrier counts, initial phases, ring indices) is knowledge that
// tkcheck keeps in tkcheck/knowledge; the kernels are declared here without bodies.
// Written for tkcheck from TK's documented API; no TK source is copied.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#define TKCHECK_TK_PROTOTYPE_MODEL 1
#include "tkcheck_tk_model.cuh"

namespace kittens {
namespace prototype {

struct empty {
    __device__ empty &operator*() { return *this; }
    __device__ const empty &operator*() const { return *this; }
};
// Shared-memory allocation unit of a layout block, padded to ALIGN bytes.
template<typename T, int ALIGN = 1024> struct __align__(ALIGN) padder {
    T val;
    __device__ padder(T _val) : val(_val) {}
    __device__ T &operator*() { return val; }
    __device__ const T &operator*() const { return val; }
};

template<typename T> concept kittens_layout = requires { typename T::globals; typename T::input_block; };
template<typename T> concept store_kittens_layout = kittens_layout<T> && requires { typename T::output_block; };

namespace detail {
// Tunables read from the user's template struct, with TK's defaults.
#define __TKC_FLAG(name, dflt) \
    template<typename T> struct name##_flag { static constexpr int value = (dflt); }; \
    template<typename T> requires requires { T::name; } struct name##_flag<T> { static constexpr int value = T::name; }; \
    template<typename T> constexpr int name##_v = name##_flag<T>::value;
__TKC_FLAG(FORCE_ALIGN, 1024)
__TKC_FLAG(DEBUG, 0)
__TKC_FLAG(NUM_BLOCKS, 1)                  // blocks co-resident per SM
__TKC_FLAG(NUM_CONSUMER_WARPS, 8)
__TKC_FLAG(NUM_PRODUCER_WARPS, 4)
__TKC_FLAG(MAX_SHARED_MEMORY, (kittens::MAX_SHARED_MEMORY / NUM_BLOCKS_v<T>) - 512)
__TKC_FLAG(INPUT_PIPE_STAGES, 1)
__TKC_FLAG(OUTPUT_PIPE_STAGES, 1)
__TKC_FLAG(CONSUMER_BARRIER_ARRIVALS, NUM_CONSUMER_WARPS_v<T>)  // init count of inputs_finished / outputs_arrived / finish_finished
__TKC_FLAG(PRODUCER_BARRIER_ARRIVALS, NUM_PRODUCER_WARPS_v<T>)  // init count of inputs_arrived / outputs_finished
__TKC_FLAG(CLUSTER_BLOCKS, 1)
#undef __TKC_FLAG
template<typename T> constexpr int NUM_WARPS_v = NUM_CONSUMER_WARPS_v<T> + NUM_PRODUCER_WARPS_v<T>;
template<typename T> constexpr int NUM_THREADS_v = NUM_WARPS_v<T> * kittens::WARP_THREADS;
template<typename T> constexpr int NUM_CONSUMER_WARPGROUPS_v = NUM_CONSUMER_WARPS_v<T> / kittens::WARPGROUP_WARPS;

// Optional layout members default to `empty`.
#define __TKC_BLOCK(name) \
    template<typename T> struct name##_getter { using type = empty; }; \
    template<typename T> requires requires { typename T::name; } struct name##_getter<T> { using type = typename T::name; }; \
    template<typename T> using name##_t = typename name##_getter<T>::type;
__TKC_BLOCK(input_block)
__TKC_BLOCK(output_block)
__TKC_BLOCK(scratch_block)
__TKC_BLOCK(finish_block)
__TKC_BLOCK(common_state)
__TKC_BLOCK(producer_state)
__TKC_BLOCK(consumer_state)
#undef __TKC_BLOCK
}  // namespace detail

template<kittens_layout T> struct complete_kittens_layout : T {
    using globals_t = typename T::globals;
    using input_block_t = detail::input_block_t<T>;
    using output_block_t = detail::output_block_t<T>;
    using scratch_block_t = detail::scratch_block_t<T>;
    using finish_block_t = detail::finish_block_t<T>;
    using common_state_t = detail::common_state_t<T>;
    using producer_state_t = detail::producer_state_t<T>;
    using consumer_state_t = detail::consumer_state_t<T>;
    static constexpr int FORCE_ALIGN = detail::FORCE_ALIGN_v<T>;
    using input_alloc_block_t = padder<input_block_t, FORCE_ALIGN>;
    using output_alloc_block_t = padder<output_block_t, FORCE_ALIGN>;
    using scratch_alloc_block_t = padder<scratch_block_t, FORCE_ALIGN>;
};

__device__ static inline int get_task_iter(int ti) { return ti; }

// TMEM allocator handed to Blackwell prototype callbacks.
template<typename T> using prototype_tensor_allocator_t =
    kittens::tensor_allocator<512 / detail::NUM_BLOCKS_v<T>, detail::CLUSTER_BLOCKS_v<T> == 1 ? 1 : 2>;

// ---------------------------------------------------------------------------------------- lcf
// load-compute-finish: producer warps load input blocks into an INPUT_PIPE_STAGES ring
// (signalling inputs_arrived), consumer warps compute on them (signalling inputs_finished), then
// write the finish block (signalling finish_finished).
namespace lcf {
template<kittens_layout T> struct uniform_args {
    using CKL = complete_kittens_layout<T>;
    typename CKL::common_state_t &common;
    int task_iter;
    int &num_iters;  // set to -1 in common_setup to end the task loop
    const typename CKL::globals_t &globals;
    typename CKL::scratch_block_t &scratch;
#ifdef KITTENS_BLACKWELL
    prototype_tensor_allocator_t<T> &tt;
#endif
};
template<kittens_layout T> using common_setup_args = uniform_args<T>;
template<kittens_layout T> struct producer_setup_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::producer_state_t &state;
};
template<kittens_layout T> struct producer_load_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::producer_state_t &state;
    typename CKL::input_block_t &input;
    kittens::semaphore &inputs_arrived;  // init count PRODUCER_BARRIER_ARRIVALS; expects the input block's bytes
    int iter;
};
template<kittens_layout T> struct consumer_setup_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::consumer_state_t &state;
};
template<kittens_layout T> struct consumer_compute_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::consumer_state_t &state;
    typename CKL::input_block_t &input;
    kittens::semaphore &inputs_finished;  // init count CONSUMER_BARRIER_ARRIVALS
    int iter;
};
template<kittens_layout T> struct consumer_finish_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::consumer_state_t &state;
    typename CKL::finish_block_t &finish;
    kittens::semaphore &finish_finished;  // init count CONSUMER_BARRIER_ARRIVALS
};
template<typename lcft> concept kernel_template = requires {
    typename lcft::layout;
    typename lcft::producer;
    typename lcft::consumer;
    lcft::common_setup;
    lcft::producer::setup;
    lcft::producer::load;
    lcft::consumer::setup;
    lcft::consumer::compute;
    lcft::consumer::finish;
} && kittens_layout<typename lcft::layout>;
// Launch with NUM_THREADS_v<lcft> threads and dynamic shared memory (typically MAX_SHARED_MEMORY - 1024).
template<typename lcft>
__global__ __launch_bounds__(detail::NUM_THREADS_v<lcft>, detail::NUM_BLOCKS_v<lcft>)
void kernel(const __grid_constant__ typename lcft::layout::globals globals);
}  // namespace lcf

// ---------------------------------------------------------------------------------------- lcsf
// load-compute-store-finish: lcf plus an OUTPUT_PIPE_STAGES ring written by consumers
// (outputs_arrived) and stored by producers (outputs_finished).
namespace lcsf {
template<kittens_layout T> struct uniform_args {
    using CKL = complete_kittens_layout<T>;
    typename CKL::common_state_t &common;
    int &task_iter;
    int &num_iters;
    const typename CKL::globals_t &globals;
    typename CKL::scratch_block_t &scratch;
#ifdef KITTENS_BLACKWELL
    prototype_tensor_allocator_t<T> &tt;
#endif
};
template<kittens_layout T> using common_setup_args = uniform_args<T>;
template<kittens_layout T> struct producer_setup_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::producer_state_t &state;
};
template<kittens_layout T> struct producer_load_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::producer_state_t &state;
    typename CKL::input_block_t &input;
    kittens::semaphore &inputs_arrived;
    int iter;
};
template<kittens_layout T> struct producer_store_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::producer_state_t &state;
    typename CKL::output_block_t &output;
    kittens::semaphore &outputs_finished;  // init count PRODUCER_BARRIER_ARRIVALS
    int iter;
};
template<kittens_layout T> struct consumer_setup_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::consumer_state_t &state;
};
template<kittens_layout T> struct consumer_compute_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::consumer_state_t &state;
    typename CKL::input_block_t &input;
    typename CKL::output_block_t &output;
    kittens::semaphore &inputs_finished;
    kittens::semaphore &outputs_arrived;  // init count CONSUMER_BARRIER_ARRIVALS
    int iter;
};
template<kittens_layout T> struct consumer_finish_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::consumer_state_t &state;
    typename CKL::finish_block_t &finish;
    kittens::semaphore &finish_finished;
};
template<typename lcsft> concept kernel_template = requires {
    typename lcsft::layout;
    typename lcsft::producer;
    typename lcsft::consumer;
    lcsft::common_setup;
    lcsft::producer::setup;
    lcsft::producer::load;
    lcsft::producer::store;
    lcsft::consumer::setup;
    lcsft::consumer::compute;
    lcsft::consumer::finish;
} && kittens_layout<typename lcsft::layout>;
template<typename lcsft>
__global__ __launch_bounds__(detail::NUM_THREADS_v<lcsft>, detail::NUM_BLOCKS_v<lcsft>)
void kernel(const __grid_constant__ typename lcsft::layout::globals globals);
}  // namespace lcsf

// ---------------------------------------------------------------------------------------- lcsc
// load-compute-store-communicate: SMs split into compute workers (loader, storer, consumers)
// and communicator workers; the user's lcsct supplies comp_/comm_ setup, loader, storer,
// consumer, communicator and their smem/sem/regs types.
namespace lcsc {
template<typename config> concept has_min_blocks_per_sm = requires { config::MIN_BLOCKS_PER_SM; };
template<typename config> __host__ __device__ consteval int min_blocks_per_sm() {
    if constexpr (has_min_blocks_per_sm<config>) return config::MIN_BLOCKS_PER_SM;
    else return 1;
}
template<typename config> concept static_grid = requires { config::NUM_BLOCKS; };
template<typename config> concept static_block = requires { config::NUM_THREADS; };
template<typename config> concept static_dynamic_shared_memory = requires { config::DYNAMIC_SHARED_MEMORY; };
template<typename config, typename globals, typename lcsct>
__launch_bounds__(config::NUM_THREADS, min_blocks_per_sm<config>())
__global__ void main_kernel(const __grid_constant__ globals G);
template<typename config, typename globals, typename lcsct>
__host__ static inline void launch_kernel(const globals &G, cudaStream_t stream = 0) {}
}  // namespace lcsc

// ---------------------------------------------------------------------------------------- interpreter
// A persistent kernel that runs a stream of instructions (one op per opcode) through lcsf-style
// producer/consumer callbacks.
namespace interpreter {
static constexpr int NUM_PRODUCER_WARPS = 4;
static constexpr int NUM_CONSUMER_WARPS = 8;
static constexpr int NUM_WARPS = NUM_PRODUCER_WARPS + NUM_CONSUMER_WARPS;
static constexpr int NUM_BLOCKS = 1;
struct persistent_state {
    int task_iter;
    int *shmem;
    int max_finish_offset;
    kittens::semaphore *inputs_arrived, *outputs_arrived, *inputs_finished, *outputs_finished, *finish_finished;
    uint32_t semaphore_bitfield;
#ifdef KITTENS_BLACKWELL
    tensor_allocator<1, 1> &tensor_alloc;
#endif
#ifdef KITTENS_TIMINGS
    uint64_t *timings;
#endif
    int *instruction;
};
template<kittens_layout T> struct uniform_args {
    using CKL = complete_kittens_layout<T>;
    typename CKL::common_state_t &common;
    int &task_iter;
    int &num_iters;
    const typename CKL::globals_t &globals;
    typename CKL::scratch_block_t &scratch;
#ifdef KITTENS_BLACKWELL
    tensor_allocator<1, 1> &tensor_alloc;
#endif
#ifdef KITTENS_TIMINGS
    uint64_t *timings;
#endif
    int *instruction;
};
template<kittens_layout T> using common_setup_args = uniform_args<T>;
template<kittens_layout T> struct producer_setup_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::producer_state_t &state;
};
template<kittens_layout T> struct producer_load_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::producer_state_t &state;
    typename CKL::input_block_t &input;
    kittens::semaphore &inputs_arrived;
    int iter;
};
template<store_kittens_layout T> struct producer_store_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::producer_state_t &state;
    typename CKL::output_block_t &output;
    kittens::semaphore &outputs_finished;
    int iter;
};
template<kittens_layout T> struct consumer_setup_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::consumer_state_t &state;
};
template<kittens_layout T> struct consumer_compute_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::consumer_state_t &state;
    typename CKL::input_block_t &input;
    kittens::semaphore &inputs_finished;
    int iter;
};
template<store_kittens_layout T> struct consumer_compute_args<T> : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::consumer_state_t &state;
    typename CKL::input_block_t &input;
    typename CKL::output_block_t &output;
    kittens::semaphore &inputs_finished;
    kittens::semaphore &outputs_arrived;
    int iter;
};
template<kittens_layout T> struct consumer_finish_args : uniform_args<T> {
    using CKL = complete_kittens_layout<T>;
    typename CKL::consumer_state_t &state;
    typename CKL::finish_block_t &finish;
    kittens::semaphore &finish_finished;
};
template<typename T> concept kernel_template = requires {
    typename T::layout;
    typename T::producer;
    typename T::consumer;
    T::common_setup;
    T::producer::setup;
    T::producer::load;
    T::consumer::setup;
    T::consumer::compute;
    T::consumer::finish;
} && kittens_layout<typename T::layout>;
template<typename T> concept has_store = requires { T::producer::store; };
template<typename Op> __device__ inline void run_op_producer(const typename Op::config::globals &globals, persistent_state &ps) {}
template<typename Op> __device__ inline void run_op_consumer(const typename Op::config::globals &globals, persistent_state &ps) {}
template<typename config> __device__ inline void load_instructions(int *instructions, int task_iter, const typename config::globals &globals, kittens::semaphore &bar) {}
template<typename config, typename... ops>
__launch_bounds__((NUM_CONSUMER_WARPS + NUM_PRODUCER_WARPS) * WARP_THREADS, 1)
__cluster_dims__(detail::CLUSTER_BLOCKS_v<config>)
__global__ void kernel(const __grid_constant__ typename config::globals globals);
// the host launcher: runs kernel<config, ops...>
template<typename config, typename... ops>
__host__ void run(typename config::globals &globals);
}  // namespace interpreter
// TK's first prototype template (2024), not modelled by tkcheck: declared so that its launches
// (`prototype::pc<S><<<...>>>(g)`) are seen and the struct named "not analysed"
template<typename pct, typename... Args>
__global__ void pc(Args... args);

}  // namespace prototype
}  // namespace kittens
