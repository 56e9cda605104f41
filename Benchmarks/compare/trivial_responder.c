/* The pipe's own ceiling for the co-process comparison: answers every request line with one constant decision
 * line and parses nothing. Same I/O shape as `policy decide --jsonl`: read(2) in 64 KiB blocks, one write(2)
 * per block. Built by coprocess.py with `cc -O2`. */
#include <string.h>
#include <unistd.h>

static const char answer[] = "{\"decision\":\"allow\",\"reason\":\"allowed\"}\n";

int main(void) {
    static char in[1 << 16];
    static char out[(1 << 16) * sizeof answer];
    ssize_t n;
    while ((n = read(0, in, sizeof in)) > 0) {
        size_t lines = 0, used = 0;
        for (ssize_t i = 0; i < n; i++) lines += in[i] == '\n';
        for (size_t i = 0; i < lines; i++) {
            memcpy(out + used, answer, sizeof answer - 1);
            used += sizeof answer - 1;
        }
        for (size_t done = 0; done < used;) {
            ssize_t w = write(1, out + done, used - done);
            if (w <= 0) return 1;
            done += (size_t)w;
        }
    }
    return 0;
}
