// tkcheck stand-in for <stdlib.h>.
#pragma once
#include "cstdlib"
