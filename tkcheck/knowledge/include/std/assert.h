// tkcheck stand-in for <assert.h>.
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "cassert"
