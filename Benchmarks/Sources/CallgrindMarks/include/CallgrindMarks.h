#ifndef GATEHOUSE_CALLGRIND_MARKS_H
#define GATEHOUSE_CALLGRIND_MARKS_H

// Callgrind's client requests as functions Swift can call. Outside valgrind they are a few no-op instructions; without
// valgrind's headers they are empty.
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
/// Zeroes every thread's counters: what follows is counted from nothing.
static inline void callgrind_marks_zero(void) { CALLGRIND_ZERO_STATS; }
/// Writes a dump of every thread's counters since the last zero or dump, labelled `label`, and zeroes them.
static inline void callgrind_marks_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
/// Whether the process runs under valgrind.
static inline int callgrind_marks_running(void) { return (int)RUNNING_ON_VALGRIND; }
#else
static inline void callgrind_marks_zero(void) {}
static inline void callgrind_marks_dump(const char *label) { (void)label; }
static inline int callgrind_marks_running(void) { return 0; }
#endif

#endif
