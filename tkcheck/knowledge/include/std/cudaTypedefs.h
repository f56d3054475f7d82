// tkcheck stand-in for <cudaTypedefs.h>: the driver API's function-pointer types (PFN_*), as
// host code fetches them with cudaGetDriverEntryPoint. Host code only.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include <cuda.h>
typedef CUresult (*PFN_cuTensorMapEncodeTiled_v12000)(CUtensorMap *, CUtensorMapDataType, uint32_t, void *,
                                                      const uint64_t *, const uint64_t *, const uint32_t *,
                                                      const uint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                                      CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
typedef PFN_cuTensorMapEncodeTiled_v12000 PFN_cuTensorMapEncodeTiled;
