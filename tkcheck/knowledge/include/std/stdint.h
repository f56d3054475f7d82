// tkcheck stand-in for <stdint.h>.
#pragma once
#include "cstdint"
