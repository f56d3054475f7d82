// tkcheck stand-in for <cuda_pipeline_primitives.h>.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "cuda_pipeline.h"
