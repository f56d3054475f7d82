// tkcheck's model of the protocol of ThunderKittens' prototype::lcf template
// (load-compute-finish), written for tkcheck from the template's documented
// behaviour. It is not compiled: tkcheck's front end walks it with `lcft`
// bound to the user's template struct, and inlines the user's callbacks where
// `tkcheck_callback` names them, each with an `args` record of named fields.
//
// Protocol (per CTA): warps [0, NUM_CONSUMER_WARPS) are consumers, the next
// NUM_PRODUCER_WARPS warps are producers. inputs_arrived[s] is initialised for
// PRODUCER_BARRIER_ARRIVALS arrivals, inputs_finished[s] and finish_finished
// for CONSUMER_BARRIER_ARRIVALS. Producers wait inputs_finished[ring] with the
// finished-bits of the phase bitfield (starting at 1: fresh barriers pass),
// then call load(); consumers wait inputs_arrived[ring] (bits starting at 0),
// then call compute(); after the work loop consumers call finish().
#include "tkcheck_tk_model.cuh"
using namespace kittens;
template<class... A> __device__ int tkcheck_flag(A...);
template<class... A> __device__ void tkcheck_callback(A...);
// a field named "&x" is handed by reference (TK's `int &num_iters`): the callback's assignment
// to it is the variable's value afterwards
template<class... A> __device__ int tkcheck_uniform(A...);
template<class... A> __device__ void tkcheck_block_threads(A...);
// group<N>::sync(id) with N one of the flags above (clang cannot take them as template arguments)
template<class... A> __device__ void tkcheck_group_sync(A...);

template<typename lcft>
__global__ void tkcheck_lcf_protocol(const typename lcft::layout::globals globals) {
    constexpr int NUM_CONSUMER_WARPS = tkcheck_flag(lcft, NUM_CONSUMER_WARPS, 8);
    constexpr int NUM_PRODUCER_WARPS = tkcheck_flag(lcft, NUM_PRODUCER_WARPS, 4);
    constexpr int INPUT_PIPE_STAGES = tkcheck_flag(lcft, INPUT_PIPE_STAGES, 1);
    constexpr int PRODUCER_BARRIER_ARRIVALS = tkcheck_flag(lcft, PRODUCER_BARRIER_ARRIVALS, NUM_PRODUCER_WARPS);
    constexpr int CONSUMER_BARRIER_ARRIVALS = tkcheck_flag(lcft, CONSUMER_BARRIER_ARRIVALS, NUM_CONSUMER_WARPS);
    tkcheck_block_threads((NUM_CONSUMER_WARPS + NUM_PRODUCER_WARPS) * 32);
    extern __shared__ int __shm[];
    shared_allocator alloc(&__shm[0]);
    typename lcft::layout::scratch_block (&scratch_smem) = alloc.allocate<typename lcft::layout::scratch_block>();
    typename lcft::layout::input_block (&input_smem)[INPUT_PIPE_STAGES] = alloc.allocate<typename lcft::layout::input_block, INPUT_PIPE_STAGES>();
    typename lcft::layout::finish_block (&finish_smem) = alloc.allocate<typename lcft::layout::finish_block>();
    __shared__ kittens::semaphore inputs_arrived[INPUT_PIPE_STAGES], inputs_finished[INPUT_PIPE_STAGES];
    __shared__ kittens::semaphore finish_finished;
    uint32_t semaphore_bitfield = 0xFFFF0000;
    typename lcft::layout::common_state common;
    typename lcft::layout::producer_state p_state;
    typename lcft::layout::consumer_state c_state;

    if (warpid() >= NUM_CONSUMER_WARPS) {
        if (threadIdx.x == NUM_CONSUMER_WARPS * 32) {
            for (int i = 0; i < INPUT_PIPE_STAGES; i++) {
                init_semaphore(inputs_arrived[i], PRODUCER_BARRIER_ARRIVALS, 0);
                init_semaphore(inputs_finished[i], CONSUMER_BARRIER_ARRIVALS, 0);
            }
            init_semaphore(finish_finished, CONSUMER_BARRIER_ARRIVALS, 0);
        }
        everyone::sync(15);
        tkcheck_callback(lcft::producer::setup, "state", p_state, "globals", globals, "common", common,
                         "scratch", scratch_smem, "task_iter", 0);
        for (int task_iter = 0; true; task_iter++) {
            int num_iters = tkcheck_uniform(num_iters);
            tkcheck_callback(lcft::common_setup, "common", common, "task_iter", task_iter, "&num_iters", num_iters,
                             "globals", globals, "scratch", scratch_smem);
            if (num_iters < 0) break;
            int input_ring = 0;
            for (int load_iter = 0; load_iter < num_iters; load_iter++) {
                wait(inputs_finished[input_ring], get_phasebit<1>(semaphore_bitfield, input_ring));
                update_phasebit<1>(semaphore_bitfield, input_ring);
                tkcheck_callback(lcft::producer::load, "state", p_state, "input", input_smem[input_ring],
                                 "inputs_arrived", inputs_arrived[input_ring], "iter", load_iter,
                                 "globals", globals, "common", common, "scratch", scratch_smem,
                                 "task_iter", task_iter, "num_iters", num_iters);
                input_ring = ring_advance<INPUT_PIPE_STAGES>(input_ring);
            }
            // the finish block is reused by the next task: wait until the consumers released it
            wait(finish_finished, (task_iter % 2) ^ 1);
            tkcheck_group_sync(NUM_PRODUCER_WARPS, 13);   // group<NUM_PRODUCER_WARPS>::sync(13)
        }
    } else {
        everyone::sync(15);
        tkcheck_callback(lcft::consumer::setup, "state", c_state, "globals", globals, "common", common,
                         "scratch", scratch_smem, "task_iter", 0);
        for (int task_iter = 0; true; task_iter++) {
            int num_iters = tkcheck_uniform(num_iters);
            tkcheck_callback(lcft::common_setup, "common", common, "task_iter", task_iter, "&num_iters", num_iters,
                             "globals", globals, "scratch", scratch_smem);
            if (num_iters < 0) break;
            int input_ring = 0;
            for (int it = 0; it < num_iters; it++) {
                wait(inputs_arrived[input_ring], get_phasebit<0>(semaphore_bitfield, input_ring));
                update_phasebit<0>(semaphore_bitfield, input_ring);
                tkcheck_callback(lcft::consumer::compute, "state", c_state, "input", input_smem[input_ring],
                                 "inputs_finished", inputs_finished[input_ring], "iter", it,
                                 "globals", globals, "common", common, "scratch", scratch_smem,
                                 "task_iter", task_iter, "num_iters", num_iters);
                input_ring = ring_advance<INPUT_PIPE_STAGES>(input_ring);
            }
            tkcheck_group_sync(NUM_CONSUMER_WARPS, 14);   // group<NUM_CONSUMER_WARPS>::sync(14)
            tkcheck_callback(lcft::consumer::finish, "state", c_state, "finish", finish_smem,
                             "finish_finished", finish_finished, "globals", globals, "common", common,
                             "scratch", scratch_smem, "task_iter", task_iter, "num_iters", num_iters);
            tkcheck_group_sync(NUM_CONSUMER_WARPS, 14);   // group<NUM_CONSUMER_WARPS>::sync(14)
        }
    }
}
