// tkcheck stand-in for <cuda_runtime.h>: declarations of the CUDA runtime API that kernel test
// harnesses use (allocation, copies, launch configuration, events, streams, attributes).
// Declaration-only; written for tkcheck from the CUDA runtime API reference.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "cuda_runtime_api.h"
