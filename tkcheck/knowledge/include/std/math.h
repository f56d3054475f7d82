// tkcheck stand-in for <math.h>.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "cmath"
