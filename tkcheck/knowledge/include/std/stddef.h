// tkcheck stand-in for <stddef.h>.
#pragma once
#include "cstddef"
