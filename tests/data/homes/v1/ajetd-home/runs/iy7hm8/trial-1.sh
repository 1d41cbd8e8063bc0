#!/usr/bin/env bash
# ajetd: run iy7hm8, trial 1. Generated; the pane's own process.
trap ':' INT TERM
now() { t=${EPOCHREALTIME:-$(date +%s.%N)}; t=${t/,/.}; }
hup_file=@TMP@/ajetd-home/runs/iy7hm8/trial-1.hup
trap 'now; printf "%s\n" "$t" > "$hup_file"; exit 129' HUP
go=@TMP@/ajetd-home/runs/iy7hm8/trial-1.go
exit_file=@TMP@/ajetd-home/runs/iy7hm8/trial-1.exit
exec 3<> @TMP@/ajetd-home/runs/iy7hm8/trial-1.wake
until [ -e "$go" ]; do read -r -t 1 -u 3 _; done
exec 3<&-
export VIRTUAL_ENV=@VENV@
export PATH="$VIRTUAL_ENV/bin:$PATH"
unset PYTHONHOME
export AJETD_RUN_ID=iy7hm8
export AJETD_RESULT_DIR=@TMP@/results/failed
export AJETD_TRIAL=1
export PYTHONUNBUFFERED=1
export CUDA_DEVICE_ORDER=PCI_BUS_ID
export CUDA_VISIBLE_DEVICES=0
printf '%s\n' '[ajetd] run iy7hm8 trial 1: python -m fakejet.launcher --conf configs/failed.yaml'
if cd -- @TMP@/codebase; then
  bash -c 'python -m fakejet.launcher --conf configs/failed.yaml'
  rc=$?
else
  rc=126
fi
printf '[ajetd] trial %s exited with code %s\n' 1 "$rc"
now; ended="$rc $t"
printf '%s\n' "$ended" > "$exit_file.tmp" &&
  mv -f "$exit_file.tmp" "$exit_file" ||
  { rm -f "$exit_file.tmp"; tmux set-option -p -t "$TMUX_PANE" @ajetd_exit "$ended"; } 2>/dev/null
exit "$rc"
