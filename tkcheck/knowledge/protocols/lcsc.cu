// tkcheck's model of the protocol of ThunderKittens' prototype::lcsc template
// (load-compute-store-communicate), written for tkcheck from the template's documented
// behaviour. Walked, not compiled: `lcft` is bound to the user's template struct (`lcsct`),
// `lcsc_config` and `lcsc_globals` to the config and globals types of the launch
// (`lcsc::launch_kernel<config, globals, lcsct>`); the user's static callbacks are called
// where the template calls them and inlined by the walker.
//
// Protocol (per CTA): the last G.num_comm_sms blocks are communication workers, the others
// compute workers. The template owns no semaphores: the user's `comp_sem` / `comm_sem` struct
// is one `__shared__` object that the user's setup initialises. A compute worker runs
// `comp_setup` on every thread; in the last warpgroup (NUM_WARPGROUPS - 1, registers
// decreased to PRODUCER_REGISTERS) lane 0 of warp 0 runs `loader` and lane 0 of warp 1
// runs `storer`, once per task; the other warpgroups (registers increased to
// CONSUMER_REGISTERS) run `consumer` per task. Tasks: regs.task_id from regs.task_offset
// to regs.num_tasks by regs.task_stride, as the setup sets them. The record `regs` is each
// role's own, carried across its tasks (a ring index kept in it goes on from task to task).
#include "tkcheck_tk_model.cuh"
using namespace kittens;
template<class... A> __device__ void tkcheck_block_threads(A...);

template<typename lcsc_config, typename lcsc_globals, typename lcft>
__global__ void tkcheck_lcsc_protocol(const __grid_constant__ lcsc_globals G) {
    tkcheck_block_threads(lcsc_config::NUM_THREADS);
    extern __shared__ int __shm[];
    tma_swizzle_allocator allocator((int*)&__shm[0]);
    const int num_comm_sms = G.num_comm_sms;
    const int num_comp_sms = gridDim.x - num_comm_sms;
    if (blockIdx.x >= num_comp_sms) {
        typename lcft::comm_regs regs;
        regs.worker_id = blockIdx.x - num_comp_sms;
        regs.comm_workers = num_comm_sms;
        regs.comp_workers = num_comp_sms;
        typename lcft::comm_smem (&smem) = allocator.allocate<typename lcft::comm_smem>();
        __shared__ typename lcft::comm_sem sem;
        lcft::comm_setup(G, sem, smem, regs);
        for (regs.task_id = regs.task_offset; regs.task_id < regs.num_tasks; regs.task_id += regs.task_stride)
            lcft::communicator(G, sem, smem, regs);
    } else {
        typename lcft::comp_regs regs;
        regs.worker_id = blockIdx.x;
        regs.comm_workers = num_comm_sms;
        regs.comp_workers = num_comp_sms;
        typename lcft::comp_smem (&smem) = allocator.allocate<typename lcft::comp_smem>();
        __shared__ typename lcft::comp_sem sem;
        int warpgroup_id = warpgroup::groupid();
        int warp_id = warpgroup::warpid();
        int lane_id = warp::laneid();
        lcft::comp_setup(G, sem, smem, regs);
        if (warpgroup_id == lcsc_config::NUM_WARPGROUPS - 1) {
            warpgroup::decrease_registers<lcsc_config::PRODUCER_REGISTERS>();
            if (warp_id == 0 && lane_id == 0) {
                for (regs.task_id = regs.task_offset; regs.task_id < regs.num_tasks; regs.task_id += regs.task_stride)
                    lcft::loader(G, sem, smem, regs);
            } else if (warp_id == 1 && lane_id == 0) {
                for (regs.task_id = regs.task_offset; regs.task_id < regs.num_tasks; regs.task_id += regs.task_stride)
                    lcft::storer(G, sem, smem, regs);
            }
        } else {
            warpgroup::increase_registers<lcsc_config::CONSUMER_REGISTERS>();
            for (regs.task_id = regs.task_offset; regs.task_id < regs.num_tasks; regs.task_id += regs.task_stride)
                lcft::consumer(G, sem, smem, regs);
        }
    }
}
