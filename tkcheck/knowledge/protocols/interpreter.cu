// tkcheck's model of the protocol of ThunderKittens' prototype::interpreter template (a persistent
// kernel that runs a stream of instructions, one op per opcode, each op written as lcsf-style
// producer/consumer callbacks), written for tkcheck from the template's documented behaviour.
// Walked, not compiled: `lcft` is bound to ONE op of the launch's pack (`interpreter::kernel<config,
// op1, op2>` gives one model per op, as if every instruction ran that op) and the op's callbacks
// are inlined where `tkcheck_callback` names them, each with an `args` record of named fields.
//
// Protocol (per CTA, 12 warps): warps [0, 8) are consumers, warps [8, 12) producers (the template's
// NUM_CONSUMER_WARPS / NUM_PRODUCER_WARPS are fixed, not flags). Eight stages of each barrier exist
// whatever the op's INPUT_PIPE_STAGES: inputs_arrived[s] and outputs_finished[s] count
// NUM_PRODUCER_WARPS = 4 arrivals, inputs_finished[s], outputs_arrived[s] and finish_finished
// NUM_CONSUMER_WARPS = 8. A 12-warp barrier (named barrier 15) publishes the inits. Each role keeps
// its own phase bitfield (0xFFFF0000 at the start: the finished-bits start at 1) for the whole
// kernel, across tasks, while the rings restart at stage 0 for every op run. Per task, both roles
// run common_setup; a negative num_iters returns from the op (the next task follows). Producers
// wait inputs_finished before load() and outputs_arrived before store(); consumers wait
// outputs_finished, then inputs_arrived, before compute(), then (with a store) every
// outputs_finished stage once more, then finish() between two consumer barriers (named barrier 13);
// producers end the op with a producer barrier (named barrier 14). The first INPUT_PIPE_STAGES
// loads of an op wait the previous task's finish_finished at the stage that would overwrite the
// previous op's finish block ("danger stage", computed from shared-memory offsets: a uniform
// unknown here).
//
// Not modelled: the template's own instruction fetch (instruction_arrived / instruction_finished,
// a raw cp.async.bulk of each instruction, the opcode dispatch and the STOP opcode): it involves no
// user code, and each task here simply runs this op. The template polls its two producer duties
// with test_wait in one loop; the model keeps them as two loops of the same trip count, which has
// the same per-phase arrivals, bytes and parities (as the lcsf model does).
#include "tkcheck_tk_model.cuh"
using namespace kittens;
template<class... A> __device__ int tkcheck_flag(A...);
template<class... A> __device__ void tkcheck_callback(A...);
template<class... A> __device__ int tkcheck_uniform(A...);
template<class... A> __device__ void tkcheck_block_threads(A...);
// the two producer duties run in sequence here, polled in the template: a deadlock of this
// model is not one of the template (the progress exploration says unknown)
template<class... A> __device__ void tkcheck_sequential_duties(A...);
template<class... A> __device__ void tkcheck_group_sync(A...);

// an op with producer::store (the template's `has_store<Op>`)
template<typename lcft>
__global__ void tkcheck_interpreter_protocol(const typename lcft::layout::globals globals) {
    constexpr int NUM_CONSUMER_WARPS = 8;
    constexpr int NUM_PRODUCER_WARPS = 4;
    constexpr int INPUT_PIPE_STAGES = tkcheck_flag(lcft, INPUT_PIPE_STAGES, 1);
    constexpr int OUTPUT_PIPE_STAGES = tkcheck_flag(lcft, OUTPUT_PIPE_STAGES, 1);
    tkcheck_block_threads((NUM_CONSUMER_WARPS + NUM_PRODUCER_WARPS) * 32);
    tkcheck_sequential_duties();
    extern __shared__ int __shm[];
    shared_allocator alloc(&__shm[0]);
    typename lcft::layout::input_block (&input_smem)[INPUT_PIPE_STAGES] = alloc.allocate<typename lcft::layout::input_block, INPUT_PIPE_STAGES>();
    typename lcft::layout::output_block (&output_smem)[OUTPUT_PIPE_STAGES] = alloc.allocate<typename lcft::layout::output_block, OUTPUT_PIPE_STAGES>();
    typename lcft::layout::finish_block (&finish_smem) = alloc.allocate<typename lcft::layout::finish_block>();
    typename lcft::layout::scratch_block (&scratch_smem) = alloc.allocate<typename lcft::layout::scratch_block>();
    __shared__ kittens::semaphore inputs_arrived[8], inputs_finished[8], outputs_arrived[8], outputs_finished[8];
    __shared__ kittens::semaphore finish_finished;
    uint32_t semaphore_bitfield = 0xFFFF0000;
    int instruction = tkcheck_uniform(instruction);
    int num_tasks = tkcheck_uniform(num_tasks);       // the instructions of this block
    typename lcft::layout::common_state common;
    typename lcft::layout::producer_state p_state;
    typename lcft::layout::consumer_state c_state;

    if (threadIdx.x == 0) {
        for (int i = 0; i < 8; i++) {
            init_semaphore(inputs_arrived[i], NUM_PRODUCER_WARPS, 0);
            init_semaphore(inputs_finished[i], NUM_CONSUMER_WARPS, 0);
            init_semaphore(outputs_arrived[i], NUM_CONSUMER_WARPS, 0);
            init_semaphore(outputs_finished[i], NUM_PRODUCER_WARPS, 0);
        }
        init_semaphore(finish_finished, NUM_CONSUMER_WARPS, 0);
    }
    everyone::sync(15);
    if (warpid() < NUM_CONSUMER_WARPS) {
        for (int task_iter = 0; task_iter < num_tasks; task_iter++) {
            int num_iters = tkcheck_uniform(num_iters);
            tkcheck_callback(lcft::common_setup, "common", common, "task_iter", task_iter, "num_iters", num_iters,
                             "globals", globals, "scratch", scratch_smem, "instruction", instruction);
            if (num_iters < 0) continue;
            int input_ring = 0;
            int output_ring = 0;
            tkcheck_callback(lcft::consumer::setup, "state", c_state, "globals", globals, "common", common,
                             "scratch", scratch_smem, "task_iter", task_iter, "num_iters", num_iters,
                             "instruction", instruction);
            for (int it = 0; it < num_iters; it++) {
                wait(outputs_finished[output_ring], get_phasebit<1>(semaphore_bitfield, output_ring));
                update_phasebit<1>(semaphore_bitfield, output_ring);
                wait(inputs_arrived[input_ring], get_phasebit<0>(semaphore_bitfield, input_ring));
                update_phasebit<0>(semaphore_bitfield, input_ring);
                tkcheck_callback(lcft::consumer::compute, "state", c_state, "input", input_smem[input_ring],
                                 "output", output_smem[output_ring], "inputs_finished", inputs_finished[input_ring],
                                 "outputs_arrived", outputs_arrived[output_ring], "iter", it,
                                 "globals", globals, "common", common, "scratch", scratch_smem,
                                 "task_iter", task_iter, "num_iters", num_iters, "instruction", instruction);
                input_ring = ring_advance<INPUT_PIPE_STAGES>(input_ring);
                output_ring = ring_advance<OUTPUT_PIPE_STAGES>(output_ring);
            }
            for (int i = 0; i < OUTPUT_PIPE_STAGES; i++)      // every output written before the finish
                wait(outputs_finished[i], get_phasebit<1>(semaphore_bitfield, i));
            tkcheck_group_sync(NUM_CONSUMER_WARPS, 13);   // group<NUM_CONSUMER_WARPS>::sync(13)
            tkcheck_callback(lcft::consumer::finish, "state", c_state, "finish", finish_smem,
                             "finish_finished", finish_finished, "globals", globals, "common", common,
                             "scratch", scratch_smem, "task_iter", task_iter, "num_iters", num_iters,
                             "instruction", instruction);
            tkcheck_group_sync(NUM_CONSUMER_WARPS, 13);
        }
    } else {
        for (int task_iter = 0; task_iter < num_tasks; task_iter++) {
            int num_iters = tkcheck_uniform(num_iters);
            tkcheck_callback(lcft::common_setup, "common", common, "task_iter", task_iter, "num_iters", num_iters,
                             "globals", globals, "scratch", scratch_smem, "instruction", instruction);
            if (num_iters < 0) continue;
            int danger_stage = tkcheck_uniform(danger_stage);
            int input_ring = 0;
            int output_ring = 0;
            tkcheck_callback(lcft::producer::setup, "state", p_state, "globals", globals, "common", common,
                             "scratch", scratch_smem, "task_iter", task_iter, "num_iters", num_iters,
                             "instruction", instruction);
            for (int load_iter = 0; load_iter < num_iters; load_iter++) {
                wait(inputs_finished[input_ring], get_phasebit<1>(semaphore_bitfield, input_ring));
                if (load_iter < INPUT_PIPE_STAGES && load_iter == danger_stage)
                    wait(finish_finished, (task_iter % 2) ^ 1);
                update_phasebit<1>(semaphore_bitfield, input_ring);
                tkcheck_callback(lcft::producer::load, "state", p_state, "input", input_smem[input_ring],
                                 "inputs_arrived", inputs_arrived[input_ring], "iter", load_iter,
                                 "globals", globals, "common", common, "scratch", scratch_smem,
                                 "task_iter", task_iter, "num_iters", num_iters, "instruction", instruction);
                input_ring = ring_advance<INPUT_PIPE_STAGES>(input_ring);
            }
            for (int store_iter = 0; store_iter < num_iters; store_iter++) {
                wait(outputs_arrived[output_ring], get_phasebit<0>(semaphore_bitfield, output_ring));
                update_phasebit<0>(semaphore_bitfield, output_ring);
                tkcheck_callback(lcft::producer::store, "state", p_state, "output", output_smem[output_ring],
                                 "outputs_finished", outputs_finished[output_ring], "iter", store_iter,
                                 "globals", globals, "common", common, "scratch", scratch_smem,
                                 "task_iter", task_iter, "num_iters", num_iters, "instruction", instruction);
                output_ring = ring_advance<OUTPUT_PIPE_STAGES>(output_ring);
            }
            tkcheck_group_sync(NUM_PRODUCER_WARPS, 14);   // group<NUM_PRODUCER_WARPS>::sync(14)
        }
    }
    everyone::sync(15);                               // group<NUM_WARPS>::sync(15) at the kernel's end
}

// an op without producer::store: no output ring
template<typename lcft>
__global__ void tkcheck_interpreter_load_only_protocol(const typename lcft::layout::globals globals) {
    constexpr int NUM_CONSUMER_WARPS = 8;
    constexpr int NUM_PRODUCER_WARPS = 4;
    constexpr int INPUT_PIPE_STAGES = tkcheck_flag(lcft, INPUT_PIPE_STAGES, 1);
    tkcheck_block_threads((NUM_CONSUMER_WARPS + NUM_PRODUCER_WARPS) * 32);
    extern __shared__ int __shm[];
    shared_allocator alloc(&__shm[0]);
    typename lcft::layout::input_block (&input_smem)[INPUT_PIPE_STAGES] = alloc.allocate<typename lcft::layout::input_block, INPUT_PIPE_STAGES>();
    typename lcft::layout::finish_block (&finish_smem) = alloc.allocate<typename lcft::layout::finish_block>();
    typename lcft::layout::scratch_block (&scratch_smem) = alloc.allocate<typename lcft::layout::scratch_block>();
    __shared__ kittens::semaphore inputs_arrived[8], inputs_finished[8];
    __shared__ kittens::semaphore finish_finished;
    uint32_t semaphore_bitfield = 0xFFFF0000;
    int instruction = tkcheck_uniform(instruction);
    int num_tasks = tkcheck_uniform(num_tasks);       // the instructions of this block
    typename lcft::layout::common_state common;
    typename lcft::layout::producer_state p_state;
    typename lcft::layout::consumer_state c_state;

    if (threadIdx.x == 0) {
        for (int i = 0; i < 8; i++) {
            init_semaphore(inputs_arrived[i], NUM_PRODUCER_WARPS, 0);
            init_semaphore(inputs_finished[i], NUM_CONSUMER_WARPS, 0);
        }
        init_semaphore(finish_finished, NUM_CONSUMER_WARPS, 0);
    }
    everyone::sync(15);
    if (warpid() < NUM_CONSUMER_WARPS) {
        for (int task_iter = 0; task_iter < num_tasks; task_iter++) {
            int num_iters = tkcheck_uniform(num_iters);
            tkcheck_callback(lcft::common_setup, "common", common, "task_iter", task_iter, "num_iters", num_iters,
                             "globals", globals, "scratch", scratch_smem, "instruction", instruction);
            if (num_iters < 0) continue;
            int input_ring = 0;
            tkcheck_callback(lcft::consumer::setup, "state", c_state, "globals", globals, "common", common,
                             "scratch", scratch_smem, "task_iter", task_iter, "num_iters", num_iters,
                             "instruction", instruction);
            for (int it = 0; it < num_iters; it++) {
                wait(inputs_arrived[input_ring], get_phasebit<0>(semaphore_bitfield, input_ring));
                update_phasebit<0>(semaphore_bitfield, input_ring);
                tkcheck_callback(lcft::consumer::compute, "state", c_state, "input", input_smem[input_ring],
                                 "inputs_finished", inputs_finished[input_ring], "iter", it,
                                 "globals", globals, "common", common, "scratch", scratch_smem,
                                 "task_iter", task_iter, "num_iters", num_iters, "instruction", instruction);
                input_ring = ring_advance<INPUT_PIPE_STAGES>(input_ring);
            }
            tkcheck_group_sync(NUM_CONSUMER_WARPS, 13);   // group<NUM_CONSUMER_WARPS>::sync(13)
            tkcheck_callback(lcft::consumer::finish, "state", c_state, "finish", finish_smem,
                             "finish_finished", finish_finished, "globals", globals, "common", common,
                             "scratch", scratch_smem, "task_iter", task_iter, "num_iters", num_iters,
                             "instruction", instruction);
            tkcheck_group_sync(NUM_CONSUMER_WARPS, 13);
        }
    } else {
        for (int task_iter = 0; task_iter < num_tasks; task_iter++) {
            int num_iters = tkcheck_uniform(num_iters);
            tkcheck_callback(lcft::common_setup, "common", common, "task_iter", task_iter, "num_iters", num_iters,
                             "globals", globals, "scratch", scratch_smem, "instruction", instruction);
            if (num_iters < 0) continue;
            int danger_stage = tkcheck_uniform(danger_stage);
            int input_ring = 0;
            tkcheck_callback(lcft::producer::setup, "state", p_state, "globals", globals, "common", common,
                             "scratch", scratch_smem, "task_iter", task_iter, "num_iters", num_iters,
                             "instruction", instruction);
            for (int load_iter = 0; load_iter < num_iters; load_iter++) {
                wait(inputs_finished[input_ring], get_phasebit<1>(semaphore_bitfield, input_ring));
                if (load_iter < INPUT_PIPE_STAGES && load_iter == danger_stage)
                    wait(finish_finished, (task_iter % 2) ^ 1);
                update_phasebit<1>(semaphore_bitfield, input_ring);
                tkcheck_callback(lcft::producer::load, "state", p_state, "input", input_smem[input_ring],
                                 "inputs_arrived", inputs_arrived[input_ring], "iter", load_iter,
                                 "globals", globals, "common", common, "scratch", scratch_smem,
                                 "task_iter", task_iter, "num_iters", num_iters, "instruction", instruction);
                input_ring = ring_advance<INPUT_PIPE_STAGES>(input_ring);
            }
            tkcheck_group_sync(NUM_PRODUCER_WARPS, 14);   // group<NUM_PRODUCER_WARPS>::sync(14)
        }
    }
    everyone::sync(15);                               // group<NUM_WARPS>::sync(15) at the kernel's end
}
