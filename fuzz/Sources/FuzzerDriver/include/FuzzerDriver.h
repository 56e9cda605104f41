#ifndef GATEHOUSE_FUZZER_DRIVER_H
#define GATEHOUSE_FUZZER_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's entry for programs that have their own main (SwiftPM renames every executable's main).
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
