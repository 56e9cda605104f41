# Sourced by the load scripts: CPU time read from /proc.

# Clock ticks (user + system) the processes named have spent so far; a process that is gone counts nothing.
cpu_of() {  # pids...
  local ticks=0 pid
  for pid in "$@"; do
    [ -r "/proc/$pid/stat" ] || continue
    ticks=$((ticks + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}')))
  done
  echo "$ticks"
}

# As cpu_of, plus what each process's children that ended and were waited for had spent (cutime + cstime): for a
# PostgreSQL cluster, whose postmaster reaps the backends, so a backend that exits between two reads does not take its
# CPU out of the sum (cpu_of alone then went down: "+-1.5 µs" in decision-log-load.sh).
cpu_with_reaped_of() {  # pids...
  local ticks=0 pid
  for pid in "$@"; do
    [ -r "/proc/$pid/stat" ] || continue
    ticks=$((ticks + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{print $12 + $13 + $14 + $15}')))
  done
  echo "$ticks"
}
