#!/usr/bin/env bash
# ajetd: run fhs3r2, trial 1. Generated; the pane's own process.
trap ':' INT TERM
now() { t=${EPOCHREALTIME:-$(date +%s.%N)}; t=${t/,/.}; }
hup_file=@TMP@/ajetd-home/runs/fhs3r2/trial-1.hup
trap 'now; printf "%s\n" "$t" > "$hup_file"; exit 129' HUP
go=@TMP@/ajetd-home/runs/fhs3r2/trial-1.job.go
exit_file=@TMP@/ajetd-home/runs/fhs3r2/trial-1.job.exit
n=0
until [ -e "$go" ]; do
  if [ "$n" -lt 600 ]; then sleep 0.02; else sleep 1; fi; n=$((n + 1))
done
export VIRTUAL_ENV=@VENV@
export PATH="$VIRTUAL_ENV/bin:$PATH"
unset PYTHONHOME
export AJETD_RUN_ID=fhs3r2
export AJETD_RESULT_DIR=@TMP@/results/slurm_nemo
export AJETD_TRIAL=1
export PYTHONUNBUFFERED=1
export CUDA_DEVICE_ORDER=PCI_BUS_ID
export CUDA_VISIBLE_DEVICES=0,1
printf '%s\n' '[ajetd] run fhs3r2 trial 1: python examples/run_grpo.py --config examples/configs/grpo_fake.yaml grpo.max_num_steps=6 grpo.val_period=2 ++logger.log_dir=@TMP@/results/slurm_nemo/nemo_rl/logs ++checkpointing.checkpoint_dir=@TMP@/results/slurm_nemo/nemo_rl/checkpoints ++logger.wandb_enabled=False'
if cd -- @TMP@/codebase; then
  set -m
  bash -c 'python examples/run_grpo.py --config examples/configs/grpo_fake.yaml grpo.max_num_steps=6 grpo.val_period=2 ++logger.log_dir=@TMP@/results/slurm_nemo/nemo_rl/logs ++checkpointing.checkpoint_dir=@TMP@/results/slurm_nemo/nemo_rl/checkpoints ++logger.wandb_enabled=False' &
  child=$!
  trap 'date +%s > "$exit_file.sigint"; kill -INT -- "-$child" 2>/dev/null' INT
  trap 'kill -TERM -- "-$child" 2>/dev/null' TERM
  rc=
  while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done
  wait "$child"; w=$?
  if [ -z "$rc" ] || { [ "$w" -ge 0 ] && [ "$w" -le 255 ]; }; then rc=$w; fi
else
  rc=126
fi
printf '[ajetd] trial %s exited with code %s\n' 1 "$rc"
now; ended="$rc $t"
printf '%s\n' "$ended" > "$exit_file.tmp" &&
  mv -f "$exit_file.tmp" "$exit_file" ||
  { rm -f "$exit_file.tmp"; tmux set-option -p -t "$TMUX_PANE" @ajetd_exit "$ended"; } 2>/dev/null
exit "$rc"
