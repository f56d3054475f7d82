// tkcheck stand-in for <unistd.h>. Declaration-only.
#pragma once
#ifndef TKCHECK_MODEL_SELFTEST
#pragma clang system_header
#endif
#include "../tkcheck_cuda_builtins.h"
typedef int pid_t;
typedef unsigned int useconds_t;
extern "C" {
unsigned int sleep(unsigned int seconds);
int usleep(useconds_t usec);
pid_t getpid(void);
int close(int fd);
ssize_t read(int fd, void *buf, size_t count);
ssize_t write(int fd, const void *buf, size_t count);
int gethostname(char *name, size_t len);
long sysconf(int name);
}
