// tkcheck stand-in for <time.h>.
#pragma once
#include "ctime"
