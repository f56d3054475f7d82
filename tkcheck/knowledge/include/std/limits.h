// tkcheck stand-in for <limits.h>.
#pragma once
#include "climits"
