// tkcheck's model of a MegaKittens / Megakernels worker loop, written for tkcheck. Megakernels
// generates each worker's main loop with the MAKE_WORKER macro (include/util.cuh), and a macro
// body has no source text tkcheck can walk; this is what that loop does, walked in its place
// with the user's `state` (its await_instruction / next_instruction / instruction members are
// the user's own code) and the role's op dispatch (`tkcheck_dispatch` runs `op::ROLE::run(g, s)`
// for the op of the model being built).
//
//   for (i = 0, slot = 0; i < num_iters; next_instruction()) {   // __syncwarp; lane 0 arrives
//       await_instruction();                                      // instruction_finished[slot]
//       dispatch the op's ROLE::run(g, mks);                      // wait instruction_arrived[slot]
//   }                                                             //   with parity (i / 2) & 1
//   __syncwarp();
#include "tkcheck_tk_model.cuh"
template<class... A> __device__ void tkcheck_dispatch(A...);

template<typename globals, typename state_t>
__device__ void tkcheck_mk_worker(const globals &g, state_t &mks) {
    int num_iters = g.instructions.rows();
    for (mks.instruction_index = 0, mks.instruction_ring = 0; mks.instruction_index < num_iters;
         mks.next_instruction()) {
        mks.await_instruction();
        tkcheck_dispatch(mks.instruction()[0], g, mks);
    }
    __syncwarp();
}
