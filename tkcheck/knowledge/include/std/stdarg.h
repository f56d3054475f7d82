// tkcheck stand-in for <stdarg.h>.
#pragma once
#include "cstdarg"
