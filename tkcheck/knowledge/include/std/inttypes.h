// tkcheck stand-in for <inttypes.h>.
#pragma once
#include "cstdint"
#define PRId64 "ld"
#define PRIu64 "lu"
#define PRIx64 "lx"
#define PRId32 "d"
#define PRIu32 "u"
