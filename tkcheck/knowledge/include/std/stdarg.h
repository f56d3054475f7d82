// tkcheck stand-in for <stdarg.h>.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "cstdarg"
