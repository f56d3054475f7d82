// tkcheck stand-in for <assert.h>.
#include "cassert"
