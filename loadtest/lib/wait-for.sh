# Sourced by the loadtest scripts. wait_for FILE PATTERN SECONDS PID: returns once FILE has a line matching
# PATTERN; exits 2, with FILE printed, when SECONDS pass first or the process PID ends.
wait_for() {
  local i
  for i in $(seq $(($3 * 10))); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    kill -0 "$4" 2>/dev/null || break
    sleep 0.1
  done
  echo "$(basename "$0"): no '$2' in $1 within $3 s:" >&2
  cat "$1" >&2
  exit 2
}
