// tkcheck stand-in for <string.h>.
#pragma once
#include "cstring"
