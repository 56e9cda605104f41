"""What the callgrind scripts here share."""
import os, subprocess


def stripped_copy(tmp, bench):
    """valgrind 3.19 cannot read the DWARF 5 that swiftc emits: profile copies of `bench` and the shared libraries
    beside it, with the symbols but no debug info, in `tmp`; returns the copy of `bench`."""
    folder = os.path.dirname(os.path.realpath(bench))
    for name in os.listdir(folder):
        if name == os.path.basename(bench) or name.endswith(".so"):
            subprocess.run(["objcopy", "--strip-debug", os.path.join(folder, name), os.path.join(tmp, name)], check=True)
    return os.path.join(tmp, os.path.basename(bench))
