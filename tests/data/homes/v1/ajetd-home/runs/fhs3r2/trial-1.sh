#!/usr/bin/env bash
# ajetd: run fhs3r2, trial 1. Generated; the pane's own process.
trap ':' INT TERM
now() { t=${EPOCHREALTIME:-$(date +%s.%N)}; t=${t/,/.}; }
hup_file=@TMP@/ajetd-home/runs/fhs3r2/trial-1.hup
trap 'now; printf "%s\n" "$t" > "$hup_file"; exit 129' HUP
go=@TMP@/ajetd-home/runs/fhs3r2/trial-1.go
exit_file=@TMP@/ajetd-home/runs/fhs3r2/trial-1.exit
exec 3<> @TMP@/ajetd-home/runs/fhs3r2/trial-1.wake
until [ -e "$go" ]; do read -r -t 1 -u 3 _; done
exec 3<&-
export VIRTUAL_ENV=@VENV@
export PATH="$VIRTUAL_ENV/bin:$PATH"
unset PYTHONHOME
export AJETD_RUN_ID=fhs3r2
export AJETD_RESULT_DIR=@TMP@/results/slurm_nemo
export AJETD_TRIAL=1
export PYTHONUNBUFFERED=1
printf '%s\n' '[ajetd] run fhs3r2 trial 1: @VENV@/bin/python -m ajetd.hosts.slurmfollow --argv '"'"'["sbatch", "--parsable", "--output=@TMP@/results/slurm_nemo/logs/trial-1.job.log", "--open-mode=append", "--no-requeue", "--signal=B:INT@30", "--job-name=ajet_fhs3r2_t1", "--nodes=1", "--time=7", "@TMP@/ajetd-home/runs/fhs3r2/trial-1.job.sh"]'"'"' --log @TMP@/results/slurm_nemo/logs/trial-1.job.log --job-file @TMP@/ajetd-home/runs/fhs3r2/trial-1.job.id --exit-file @TMP@/ajetd-home/runs/fhs3r2/trial-1.job.exit --done-file @TMP@/ajetd-home/runs/fhs3r2/trial-1.job.done'
if cd -- @TMP@/codebase; then
  bash -c '@VENV@/bin/python -m ajetd.hosts.slurmfollow --argv '"'"'["sbatch", "--parsable", "--output=@TMP@/results/slurm_nemo/logs/trial-1.job.log", "--open-mode=append", "--no-requeue", "--signal=B:INT@30", "--job-name=ajet_fhs3r2_t1", "--nodes=1", "--time=7", "@TMP@/ajetd-home/runs/fhs3r2/trial-1.job.sh"]'"'"' --log @TMP@/results/slurm_nemo/logs/trial-1.job.log --job-file @TMP@/ajetd-home/runs/fhs3r2/trial-1.job.id --exit-file @TMP@/ajetd-home/runs/fhs3r2/trial-1.job.exit --done-file @TMP@/ajetd-home/runs/fhs3r2/trial-1.job.done'
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
