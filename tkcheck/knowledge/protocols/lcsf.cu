// tkcheck's model of the protocol of ThunderKittens' prototype::lcsf template
// (load-compute-store-finish), written for tkcheck from the template's
// documented behaviour. Walked, not compiled: `lcft` is bound to the user's
// template struct and the user's callbacks are inlined where
// `tkcheck_callback` names them, each with an `args` record of named fields.
//
// Protocol (per CTA): warps [0, NUM_CONSUMER_WARPS) are consumers, the next
// NUM_PRODUCER_WARPS warps producers. Thread 0 initialises inputs_arrived[s]
// and outputs_finished[s] for PRODUCER_BARRIER_ARRIVALS arrivals,
// inputs_finished[s], outputs_arrived[s] and finish_finished for
// CONSUMER_BARRIER_ARRIVALS. Producers wait inputs_finished (finished-bits of
// the phase bitfield start at 1) before load(), and outputs_arrived (bits
// start at 0) before store(); consumers wait outputs_finished, then
// inputs_arrived, before compute(); then finish().
//
// The template polls its two producer duties with test_wait in one loop; the
// model keeps the two duties as two loops of the same trip count, which has
// the same per-phase arrivals, bytes and parities.
#include "tkcheck_tk_model.cuh"
using namespace kittens;
template<class... A> __device__ int tkcheck_flag(A...);
template<class... A> __device__ void tkcheck_callback(A...);
// a field named "&x" is handed by reference (TK's `int &num_iters`): the callback's assignment
// to it is the variable's value afterwards
template<class... A> __device__ int tkcheck_uniform(A...);
template<class... A> __device__ void tkcheck_block_threads(A...);
// the two producer duties run in sequence here, polled in the template: a deadlock of this
// model is not one of the template (the progress exploration says unknown)
template<class... A> __device__ void tkcheck_sequential_duties(A...);
// group<N>::sync(id) with N one of the flags above (clang cannot take them as template arguments)
template<class... A> __device__ void tkcheck_group_sync(A...);

template<typename lcft>
__global__ void tkcheck_lcsf_protocol(const typename lcft::layout::globals globals) {
    constexpr int NUM_CONSUMER_WARPS = tkcheck_flag(lcft, NUM_CONSUMER_WARPS, 8);
    constexpr int NUM_PRODUCER_WARPS = tkcheck_flag(lcft, NUM_PRODUCER_WARPS, 4);
    constexpr int INPUT_PIPE_STAGES = tkcheck_flag(lcft, INPUT_PIPE_STAGES, 1);
    constexpr int OUTPUT_PIPE_STAGES = tkcheck_flag(lcft, OUTPUT_PIPE_STAGES, 1);
    constexpr int PRODUCER_BARRIER_ARRIVALS = tkcheck_flag(lcft, PRODUCER_BARRIER_ARRIVALS, NUM_PRODUCER_WARPS);
    constexpr int CONSUMER_BARRIER_ARRIVALS = tkcheck_flag(lcft, CONSUMER_BARRIER_ARRIVALS, NUM_CONSUMER_WARPS);
    tkcheck_block_threads((NUM_CONSUMER_WARPS + NUM_PRODUCER_WARPS) * 32);
    tkcheck_sequential_duties();
    extern __shared__ int __shm[];
    shared_allocator alloc(&__shm[0]);
    typename lcft::layout::scratch_block (&scratch_smem) = alloc.allocate<typename lcft::layout::scratch_block>();
    typename lcft::layout::input_block (&input_smem)[INPUT_PIPE_STAGES] = alloc.allocate<typename lcft::layout::input_block, INPUT_PIPE_STAGES>();
    typename lcft::layout::output_block (&output_smem)[OUTPUT_PIPE_STAGES] = alloc.allocate<typename lcft::layout::output_block, OUTPUT_PIPE_STAGES>();
    typename lcft::layout::finish_block (&finish_smem) = alloc.allocate<typename lcft::layout::finish_block>();
    __shared__ kittens::semaphore inputs_arrived[INPUT_PIPE_STAGES], inputs_finished[INPUT_PIPE_STAGES];
    __shared__ kittens::semaphore outputs_arrived[OUTPUT_PIPE_STAGES], outputs_finished[OUTPUT_PIPE_STAGES];
    __shared__ kittens::semaphore finish_finished;
    uint32_t semaphore_bitfield = 0xFFFF0000;
    typename lcft::layout::common_state common;
    typename lcft::layout::producer_state p_state;
    typename lcft::layout::consumer_state c_state;

    if (threadIdx.x == 0) {
        for (int i = 0; i < INPUT_PIPE_STAGES; i++) {
            init_semaphore(inputs_arrived[i], PRODUCER_BARRIER_ARRIVALS, 0);
            init_semaphore(inputs_finished[i], CONSUMER_BARRIER_ARRIVALS, 0);
        }
        for (int i = 0; i < OUTPUT_PIPE_STAGES; i++) {
            init_semaphore(outputs_arrived[i], CONSUMER_BARRIER_ARRIVALS, 0);
            init_semaphore(outputs_finished[i], PRODUCER_BARRIER_ARRIVALS, 0);
        }
        init_semaphore(finish_finished, CONSUMER_BARRIER_ARRIVALS, 0);
    }
    everyone::sync(15);
    if (warpid() >= NUM_CONSUMER_WARPS) {
        for (int task_iter = 0; true; task_iter++) {
            int num_iters = tkcheck_uniform(num_iters);
            tkcheck_callback(lcft::common_setup, "common", common, "task_iter", task_iter, "&num_iters", num_iters,
                             "globals", globals, "scratch", scratch_smem);
            if (num_iters < 0) break;
            int input_ring = 0;
            int output_ring = 0;
            tkcheck_callback(lcft::producer::setup, "state", p_state, "globals", globals, "common", common,
                             "scratch", scratch_smem, "task_iter", task_iter, "num_iters", num_iters);
            for (int load_iter = 0; load_iter < num_iters; load_iter++) {
                wait(inputs_finished[input_ring], get_phasebit<1>(semaphore_bitfield, input_ring));
                update_phasebit<1>(semaphore_bitfield, input_ring);
                tkcheck_callback(lcft::producer::load, "state", p_state, "input", input_smem[input_ring],
                                 "inputs_arrived", inputs_arrived[input_ring], "iter", load_iter,
                                 "globals", globals, "common", common, "scratch", scratch_smem,
                                 "task_iter", task_iter, "num_iters", num_iters);
                input_ring = ring_advance<INPUT_PIPE_STAGES>(input_ring);
            }
            for (int store_iter = 0; store_iter < num_iters; store_iter++) {
                wait(outputs_arrived[output_ring], get_phasebit<0>(semaphore_bitfield, output_ring));
                update_phasebit<0>(semaphore_bitfield, output_ring);
                tkcheck_callback(lcft::producer::store, "state", p_state, "output", output_smem[output_ring],
                                 "outputs_finished", outputs_finished[output_ring], "iter", store_iter,
                                 "globals", globals, "common", common, "scratch", scratch_smem,
                                 "task_iter", task_iter, "num_iters", num_iters);
                output_ring = ring_advance<OUTPUT_PIPE_STAGES>(output_ring);
            }
            wait(finish_finished, (task_iter % 2) ^ 1);
            tkcheck_group_sync(NUM_PRODUCER_WARPS, 13);   // group<NUM_PRODUCER_WARPS>::sync(13)
        }
    } else {
        for (int task_iter = 0; true; task_iter++) {
            int num_iters = tkcheck_uniform(num_iters);
            tkcheck_callback(lcft::common_setup, "common", common, "task_iter", task_iter, "&num_iters", num_iters,
                             "globals", globals, "scratch", scratch_smem);
            if (num_iters < 0) break;
            int input_ring = 0;
            int output_ring = 0;
            tkcheck_callback(lcft::consumer::setup, "state", c_state, "globals", globals, "common", common,
                             "scratch", scratch_smem, "task_iter", task_iter, "num_iters", num_iters);
            for (int it = 0; it < num_iters; it++) {
                wait(outputs_finished[output_ring], get_phasebit<1>(semaphore_bitfield, output_ring));
                update_phasebit<1>(semaphore_bitfield, output_ring);
                wait(inputs_arrived[input_ring], get_phasebit<0>(semaphore_bitfield, input_ring));
                update_phasebit<0>(semaphore_bitfield, input_ring);
                tkcheck_callback(lcft::consumer::compute, "state", c_state, "input", input_smem[input_ring],
                                 "output", output_smem[output_ring], "inputs_finished", inputs_finished[input_ring],
                                 "outputs_arrived", outputs_arrived[output_ring], "iter", it,
                                 "globals", globals, "common", common, "scratch", scratch_smem,
                                 "task_iter", task_iter, "num_iters", num_iters);
                input_ring = ring_advance<INPUT_PIPE_STAGES>(input_ring);
                output_ring = ring_advance<OUTPUT_PIPE_STAGES>(output_ring);
            }
            tkcheck_group_sync(NUM_CONSUMER_WARPS, 14);   // group<NUM_CONSUMER_WARPS>::sync(14)
            tkcheck_callback(lcft::consumer::finish, "state", c_state, "finish", finish_smem,
                             "finish_finished", finish_finished, "globals", globals, "common", common,
                             "scratch", scratch_smem, "task_iter", task_iter, "num_iters", num_iters);
            tkcheck_group_sync(NUM_CONSUMER_WARPS, 14);   // group<NUM_CONSUMER_WARPS>::sync(14)
        }
    }
}
