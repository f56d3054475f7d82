// tkcheck stand-in for <math.h>.
#pragma once
#include "cmath"
using std::abs;
