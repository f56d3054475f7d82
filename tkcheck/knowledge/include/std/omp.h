// tkcheck stand-in for <omp.h> (OpenMP runtime calls; `#pragma omp` is ignored without -fopenmp).
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
extern "C" {
int omp_get_thread_num(void);
int omp_get_num_threads(void);
int omp_get_max_threads(void);
void omp_set_num_threads(int n);
int omp_get_num_procs(void);
double omp_get_wtime(void);
int omp_in_parallel(void);
}
