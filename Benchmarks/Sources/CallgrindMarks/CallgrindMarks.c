// The marks are static inline functions of the header; this file makes the target a C library SwiftPM builds.
#include "CallgrindMarks.h"
