// tkcheck stand-in for <stdlib.h>.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "cstdlib"
