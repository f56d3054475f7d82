// tkcheck stand-in for <string.h>.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "cstring"
