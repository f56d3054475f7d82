// tkcheck stand-in for <curand.h> (host API not modelled; kernels use curand_kernel.h).
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "curand_kernel.h"
