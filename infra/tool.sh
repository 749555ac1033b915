# shellcheck shell=bash
# Sourced by the infra scripts: `tool VAR NAME` prints the program NAME to run, the first of: $VAR if set (a path,
# or a name looked up on PATH); NAME on the PATH of the environment the script runs in (an activated venv or
# conda env, the image's PATH); the repository's .venv (cron and systemd start scripts with a bare PATH).
# Fails (status 2, one line saying where it looked) when there is none.
tool() {
  local var="$1" name="$2" root found
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if [ -n "${!var:-}" ]; then
    found="$(command -v "${!var}" || true)"
  else
    found="$(command -v "$name" || true)"
    [ -n "$found" ] || found="$root/.venv/bin/$name"
  fi
  [ -n "$found" ] && [ -x "$found" ] && { echo "$found"; return 0; }
  if [ -n "${!var:-}" ]; then
    echo "$0: \$$var=${!var} is not a program" >&2
  else
    echo "$0: no $name on PATH nor in $root/.venv: activate its environment, run 'make setup' or set $var=..." >&2
  fi
  return 2
}
