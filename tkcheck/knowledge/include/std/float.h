// tkcheck stand-in for <float.h>.
#pragma once
#include "cfloat"
