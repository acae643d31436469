#!/usr/bin/env bash
# `npm test`: every step of the suite, each reported on its own. A step that fails does not hide the
# ones after it (the Node 24 step runs and reports even when the main suite failed); the steps that
# need the compiled code are skipped, and say so, when the build failed. The summary at the end lists
# every step with its outcome and time; the exit status is non-zero when any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."

summary=()
failed=0

# step NAME COMMAND...: runs the command and records its outcome.
step() {
  local name=$1
  shift
  local started=$SECONDS status
  echo "== $name: $*"
  "$@"
  status=$?
  local took=$((SECONDS - started))
  if ((status == 0)); then
    summary+=("$(printf '  %-14s ok      %4d s' "$name" "$took")")
  else
    summary+=("$(printf '  %-14s FAILED  %4d s  (exit %d)' "$name" "$took" "$status")")
    failed=1
  fi
  return "$status"
}

skip() {
  summary+=("$(printf '  %-14s skipped         (%s)' "$1" "$2")")
}

if step build npm run build; then built=1; else built=0; fi
step lint npm run lint
step format npm run format:check
step services bash test/services/ensure.sh
if ((built)); then
  step tests node dist/test/run-tests.js
  step node-24 bash test/node-24.sh
else
  skip tests 'the build failed'
  skip node-24 'the build failed'
fi

echo
echo "npm test: every step"
printf '%s\n' "${summary[@]}"
if ((failed)); then
  echo "npm test: FAILED (the steps above marked FAILED; each step's own output is above)"
  exit 1
fi
echo "npm test: ok"
