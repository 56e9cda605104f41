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
