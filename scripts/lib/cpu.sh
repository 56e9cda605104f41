# Sourced by the load scripts: CPU time read from /proc.

# Clock ticks (user + system) the processes named have spent so far; a process that is gone counts nothing.
# REAPED=1 adds what each one's ended children that it waited for had spent (cutime + cstime): for a PostgreSQL
# cluster, whose postmaster reaps the backends, so a backend that exits between two reads does not take its CPU out of
# the sum (without it the sum went down: "+-1.5 µs" in decision-log-load.sh).
cpu_of() {  # pids...
  local ticks=0 pid fields='$12 + $13'
  [ "${REAPED:-}" = 1 ] && fields='$12 + $13 + $14 + $15'
  for pid in "$@"; do
    [ -r "/proc/$pid/stat" ] || continue
    ticks=$((ticks + $(sed 's/.*) //' "/proc/$pid/stat" | awk "{print $fields}")))
  done
  echo "$ticks"
}

# cpu_of with the reaped children counted.
cpu_with_reaped_of() { REAPED=1 cpu_of "$@"; }
