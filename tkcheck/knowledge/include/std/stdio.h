// tkcheck stand-in for <stdio.h>.
#pragma once
#include "cstdio"
