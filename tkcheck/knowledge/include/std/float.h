// tkcheck stand-in for <float.h>.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "cfloat"
