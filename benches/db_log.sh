#!/usr/bin/env bash
# What the database log costs a job: 2 ranks write 5 checkpoints of SIZE KiB each
# (SCR_FLUSH=1, every checkpoint flushed), logging to a private MariaDB server (created
# with `scr db init`) that is
#   off      SCR_LOG_DB_ENABLE=0 (the text log alone: the baseline)
#   up       answering
#   refusing the password is wrong
#   down     no server on the socket
#   stopped  SIGSTOPped before the job: it takes the connection and never answers
#   midrun   SIGSTOPped once the job's first checkpoint is logged
# For each: the job's wall time and its slowest checkpoint (SCR_Start_checkpoint to
# SCR_Complete_checkpoint, as the application measured it), the best of 3 runs. The log
# writes from a thread of its own, so no checkpoint waits on the server; a server that has
# not answered by the end costs at most one bounded wait (scr_db::TIMEOUT, 2 s) at
# SCR_Finalize, for the records it was handed.
# Run: ./benches/db_log.sh [SIZE_KIB]   (default: 1024; PROFILE=debug uses the debug build)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --no-build   # what it needs, installed when missing (needs root then)
size=${1:-1024}
profile=${PROFILE:-release}
flag=$([ "$profile" = release ] && echo --release || true)
cargo build $flag --quiet -p scr-runtime --lib
cargo build $flag --quiet -p scr-launcher
root=$(pwd)
# where cargo built (CARGO_TARGET_DIR, relative to here when relative, as cargo takes it)
target=${CARGO_TARGET_DIR:-target}; case $target in /*) ;; *) target=$root/$target ;; esac
bin=$target/$profile
work=$(mktemp -d /tmp/scr-dblog.XXXXXX)
server=
cleanup() {
  if [ -n "$server" ]; then kill -CONT "$server" 2>/dev/null || true; kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
ln -s "$bin/libscr_runtime.so" "$work/libscr.so"
mpicc -O2 examples/c/test_api.c -I lib/include -L"$work" -lscr -Wl,-rpath,"$work" -o "$work/test_api"

me=$(id -un)
mariadb-install-db --no-defaults --datadir="$work/data" --user="$me" --auth-root-socket-user="$me" \
  --skip-test-db >"$work/install.log" 2>&1
mariadbd --no-defaults --datadir="$work/data" --socket="$work/sock" --skip-networking \
  --user="$me" --log-error="$work/error.log" --innodb-buffer-pool-size=16M \
  --performance-schema=OFF --skip-log-bin 2>/dev/null &
server=$!
until mariadb --no-defaults --socket="$work/sock" -u "$me" -e 'SELECT 1' >/dev/null 2>&1; do sleep 0.2; done
mariadb --no-defaults --socket="$work/sock" -u "$me" -e \
  "CREATE USER 'logger'@'localhost' IDENTIFIED BY 'pw-log'; GRANT INSERT, SELECT ON scrbench.* TO 'logger'@'localhost'"
printf '[client]\nuser=%s\n' "$me" >"$work/admin.cnf"; chmod 600 "$work/admin.cnf"
SCR_LOG_DB_HOST=$work/sock SCR_LOG_DB_NAME=scrbench "$bin/scr" db init --option-file "$work/admin.cnf" >/dev/null

export SCR_CACHE_BASE=$work/cache SCR_PREFIX=$work/prefix SCR_JOB_ID=dblog
export SCR_SYSTEM_CONF_FILE=$work/scr.conf SCR_COPY_TYPE=SINGLE SCR_FLUSH=1
export SCR_LOG_ENABLE=1 SCR_LOG_SYSLOG_ENABLE=0 SCR_LOG_DB_NAME=scrbench SCR_LOG_DB_USER=logger
export TEST_API_TIMES=1 TEST_API_SLEEP_MS=300
echo "SCR_CNTL_BASE=$work/cntl" >"$work/scr.conf"

# one run; prints "wall_s slowest_checkpoint_s warnings"
run() {
  local case=$1 pass=pw-log host=$work/sock enable=1
  case $case in
    off) enable=0 ;;
    refusing) pass=wrong ;;
    down) host=$work/no-server.sock ;;
  esac
  rm -rf "$work/prefix" "$work/cache" "$work/cntl"; mkdir -p "$work/prefix"
  [ "$case" = stopped ] && kill -STOP "$server"
  local s e
  s=$(date +%s.%N)
  (cd "$work/prefix" && SCR_LOG_DB_ENABLE=$enable SCR_LOG_DB_HOST=$host SCR_LOG_DB_PASS=$pass \
     mpiexec -launcher fork -n 2 "$work/test_api" $((size << 10)) 5 >"$work/out" 2>&1) &
  local job=$!
  if [ "$case" = midrun ]; then
    until grep -q 'event=CHECKPOINT' "$work/prefix/.scr/log" 2>/dev/null; do sleep 0.01; done
    kill -STOP "$server"
  fi
  wait $job || { cat "$work/out"; exit 1; }
  e=$(date +%s.%N)
  case $case in stopped | midrun) kill -CONT "$server" ;; esac
  local slowest
  slowest=$(sed -n 's/^test_api: checkpoint [0-9]* took \([0-9.]*\) s$/\1/p' "$work/out" | sort -g | tail -1)
  echo "$(echo "$e - $s" | bc -l) $slowest $(grep -c 'database log off' "$work/out" || true)"
}

printf '%-9s %10s %22s %9s\n' case wall_s slowest_checkpoint_s warnings
for case in off up refusing down stopped midrun; do
  best_wall=999999 best_ckpt=999999 said=0
  for rep in 1 2 3; do
    read -r wall ckpt warned < <(run "$case")
    best_wall=$(echo "if ($wall < $best_wall) $wall else $best_wall" | bc -l)
    best_ckpt=$(echo "if ($ckpt < $best_ckpt) $ckpt else $best_ckpt" | bc -l)
    said=$warned
  done
  printf '%-9s %10.3f %22.3f %9s\n' "$case" "$best_wall" "$best_ckpt" "$said"
done
rows=$(mariadb --no-defaults --socket="$work/sock" -u "$me" -N -e 'SELECT COUNT(*) FROM scrbench.events')
echo "events in the database: $rows (from the up and midrun cases)"
