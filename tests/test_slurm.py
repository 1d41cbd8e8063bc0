"""Runs through a real one-node Slurm: interactive (srun --pty in the pane) and batch (sbatch
and a follower), exact exit codes, a pending job shown as queued with Slurm's reason,
`ajetd stop` reaching the job, and a daemon restart mid-job."""

from __future__ import annotations

import re
import signal
import time
from datetime import datetime
from pathlib import Path

import pytest

from conftest import Env, SlurmCluster, rebuilt_after_a_cut, wait_for

ROOT = Path(__file__).resolve().parent.parent

# One worker runs these (pytest-xdist `--dist loadgroup`): one Slurm cluster for them all, as
# without workers, rather than one per worker on two cores.
pytestmark = pytest.mark.xdist_group("slurm")


@pytest.fixture
def cluster_env(env: Env, slurm_cluster: SlurmCluster) -> Env:
    env.vars["SLURM_CONF"] = str(slurm_cluster.conf)
    env.start_daemon()
    return env


def _submit(env: Env, name: str, slurm: str, **fake: object) -> str:
    config = env.config(name, **fake)
    return env.submit(env.blueprint(name, config=config, ajetd=f"slurm: {slurm}\nmax_trials: 1"))


def test_interactive_run_keeps_a_terminal(cluster_env: Env) -> None:
    env = cluster_env
    run_id = _submit(env, "inter", "{mode: interactive}")
    status = env.wait_done(run_id, timeout=60)
    assert status["status"] == "succeeded" and status["exit_code"] == 0, status
    log = (env.tmp / "results" / "inter" / "logs" / "trial-1.log").read_text()
    assert "tty=True" in log and "Training finished." in log  # srun --pty kept the terminal
    script = (env.home / "runs" / run_id / "trial-1.sh").read_text()
    assert "srun --pty" in script and f"--job-name=ajet_{run_id}_t1" in script


def test_batch_runs_and_a_failing_job_gives_its_code(cluster_env: Env) -> None:
    env = cluster_env
    ok = _submit(env, "batch", "{mode: batch}")
    bad = _submit(env, "batchbad", "{mode: batch}", crash_at=2, exit_code=3)
    status = env.wait_done(ok, timeout=60)
    assert status["status"] == "succeeded" and status["exit_code"] == 0, status
    log = (env.tmp / "results" / "batch" / "logs" / "trial-1.log").read_text()
    assert "submitted batch job" in log and "Training finished." in log
    status = env.wait_done(bad, timeout=60)
    assert status["status"] == "failed" and status["exit_code"] == 3
    assert status["diagnosis"][0]["kind"] == "cuda_oom"


def test_a_pending_job_is_queued_with_slurms_reason(cluster_env: Env) -> None:
    """A job Slurm holds (`sbatch --hold`: only a person releases it) is `queued` with
    Slurm's reason, and flagged at once: no wait will start it (walk87 F10)."""
    env = cluster_env
    held = _submit(env, "held", "{mode: batch, extra: ['--hold']}")
    wait_for(lambda: env.status(held)["state"] == "queued", timeout=30, what="queued in Slurm")
    status = wait_for(
        lambda: (s := env.status(held))["attention"] and s, timeout=30, what="its attention"
    )
    assert "pending in Slurm (JobHeldUser)" in status["reason"], status
    assert status["attention"].startswith("pending in Slurm (JobHeldUser): Slurm will not start")
    small = _submit(env, "small", "{mode: batch}")
    assert env.wait_done(small, timeout=60)["status"] == "succeeded"  # not stuck behind it
    env.cli("stop", held)
    status = env.wait_done(held, timeout=60)
    assert status["status"] == "stopped", status
    # no program ran: no exit code (walk87 F10 gave 1), and the reason says why
    assert status["exit_code"] is None, status
    assert "ended CANCELLED without ever running (pending: JobHeldUser)" in status["reason"]


def test_time_in_slurms_queue_is_not_charged_to_the_time_limit(
    cluster_env: Env, slurm_cluster: SlurmCluster
) -> None:
    """walk87 F10: a job PENDING for longer than exp_max_time was stopped at the limit and
    ended `time_limit` (`wait` exit 0) although its program never ran. The limit counts from
    the job's start: held past its 3 s, then released, it runs to its end and succeeds."""
    env = cluster_env
    config = env.config("qwait", steps=3, step_time=0.2)
    bp = env.blueprint(
        "qwait", config=config, max_time="3s", ajetd="slurm: {mode: batch, extra: ['--hold']}"
    )
    run_id = env.submit(bp)
    job = wait_for(
        lambda: env.record(run_id).get("slurm", {}).get("job_id"), timeout=30, what="its job"
    )
    started = wait_for(lambda: env.record(run_id)["trials"][0].get("started_at"), what="launch")

    def queued_past_its_limit() -> bool:
        status = env.status(run_id)
        assert status["state"] == "queued", status  # never stopped while it waits
        return bool(status["attention"]) and time.time() > started + 4

    wait_for(queued_past_its_limit, timeout=30, what="held past its time limit")
    shown = env.cli("status", run_id).stdout
    assert "used 0s of 3s" in shown and "queue not counted" in shown, shown
    slurm_cluster.run("scontrol", "release", job)
    status = env.wait_done(run_id, timeout=60)
    assert status["status"] == "succeeded" and status["exit_code"] == 0, status
    waited = env.record(run_id)["slurm"].get("waited_s", 0)
    assert waited, env.record(run_id)["slurm"]
    assert waited >= 4 and env.record(run_id)["slurm"]["began_at"] >= started + waited - 0.01


def test_stop_reaches_the_batch_job_gracefully(cluster_env: Env) -> None:
    env = cluster_env
    run_id = _submit(env, "stopme", "{mode: batch}", forever=True)
    log = env.tmp / "results" / "stopme" / "logs" / "trial-1.log"
    wait_for(lambda: log.exists() and "step:2 " in log.read_text(), timeout=60, what="output")
    env.cli("stop", run_id)
    status = env.wait_done(run_id, timeout=60)
    assert status["status"] == "stopped" and status["exit_code"] == 130, status


def test_daemon_restart_mid_job_never_resubmits(cluster_env: Env) -> None:
    env = cluster_env
    run_id = _submit(env, "restart", "{mode: batch}", steps=40, step_time=0.1)
    log = env.tmp / "results" / "restart" / "logs" / "trial-1.log"
    wait_for(lambda: log.exists() and "step:2 " in log.read_text(), timeout=60, what="output")
    env.daemons[0].send_signal(signal.SIGKILL)
    env.daemons[0].wait()
    env.start_daemon()
    status = env.wait_done(run_id, timeout=60)
    assert status["status"] == "succeeded" and status["trials"] == 1
    assert log.read_text().count("submitted batch job") == 1
    assert env.launches() == [f"{run_id} 1"]


def test_the_time_limit_stops_the_job_gracefully(cluster_env: Env) -> None:
    env = cluster_env
    config = env.config("slimit", forever=True)
    bp = env.blueprint("slimit", config=config, max_time="3s", ajetd="slurm: {mode: batch}")
    run_id = env.submit(bp)
    status = env.wait_done(run_id, timeout=60)
    assert status["status"] == "time_limit" and status["exit_code"] == 130, status
    assert "--time=6" in (env.home / "runs" / run_id / "trial-1.sh").read_text()  # 3 s + margin


def test_node_failure_is_found_and_resubmitted_without_that_node(
    cluster_env: Env, slurm_cluster: SlurmCluster
) -> None:
    env = cluster_env
    config = env.config("nodefail", forever=True)
    bp = env.blueprint("nodefail", config=config, ajetd="slurm: {mode: batch}\nmax_trials: 2")
    run_id = env.submit(bp)
    log = env.tmp / "results" / "nodefail" / "logs" / "trial-1.log"
    wait_for(lambda: log.exists() and "step:2 " in log.read_text(), timeout=60, what="output")
    node = slurm_cluster.node
    try:
        slurm_cluster.run("scontrol", "update", f"nodename={node}", "state=down", "reason=test")
        wait_for(
            lambda: len(env.record(run_id).get("trials", [])) == 2,
            timeout=60,
            what="the resubmission",
        )
        first = env.record(run_id)["trials"][0]
        assert first["findings"][0]["kind"] == "node_failure", first["findings"]
        script = env.home / "runs" / run_id / "trial-2.sh"
        wait_for(script.exists, what="trial 2's script")  # written just after its record
        assert f"--exclude={node}" in script.read_text()
    finally:
        slurm_cluster.run("scontrol", "update", f"nodename={node}", "state=resume")
    # on a one-node cluster no other node is left: Slurm refuses the resubmission, and says so
    status = env.wait_done(run_id, timeout=60)
    assert status["status"] == "failed" and status["trials"] == 2
    second = (env.tmp / "results" / "nodefail" / "logs" / "trial-2.log").read_text()
    assert "Requested node configuration is not available" in second


def test_lint_checks_the_request_against_the_cluster(env: Env, slurm_cluster: SlurmCluster) -> None:
    env.vars["SLURM_CONF"] = str(slurm_cluster.conf)
    cases = {
        "slurm: {partition: gpu-h100}": "unknown partition 'gpu-h100' (the cluster has debug)",
        "slurm: {gpus_per_node: 8}": "8 asked, partition debug has 0 per node",
        "slurm: {time: '2:00:00'}": "above partition debug's MaxTime of 60 min",
        "slurm: {nodes: 4}": "slurm.nodes: 4 asked, partition debug has 1",
        # no node holds it: Slurm would keep it PENDING (PartitionConfig) for ever (walk87 F10)
        "slurm: {cpus_per_task: 512}": "slurm.cpus_per_task: 512 asked, partition debug's "
        "largest node has",
        "slurm: {mem: 64G}": "slurm.mem: 64G asked, partition debug's largest node has 1000M",
    }
    for ajetd, needle in cases.items():
        out = env.cli("lint", str(env.blueprint("slint", ajetd=ajetd)))
        assert out.returncode == 2 and needle in out.stderr, (ajetd, out.stderr)
    assert env.cli("lint", str(env.blueprint("sok", ajetd="slurm: {mode: batch}"))).returncode == 0
    env.start_daemon()  # admission refuses it as lint does
    big = env.submit(env.blueprint("sbig", ajetd="slurm: {mode: batch, cpus_per_task: 512}"))
    status = env.wait_done(big, timeout=30)
    assert status["status"] == "rejected" and "largest node has" in status["reason"], status


def test_slurm_times() -> None:
    from ajetd.hosts.slurm import partition_minutes

    assert [
        partition_minutes(t)
        for t in ("60", "30:00", "01:00:00", "2-00:00:00", "1-12", "UNLIMITED", "", "garbage")
    ] == [60, 30, 60, 2880, 2160, None, None, None]


def test_time_10m_reaches_slurm_as_minutes(cluster_env: Env) -> None:
    """Issue 16: `time: 10m` (ajetd's grammar) and `mem: 500M` pass lint and reach Slurm as
    `--time=10` and `--mem=500M`; the job itself sees a 10-minute limit."""
    env = cluster_env
    slurm = "{partition: debug, nodes: 1, cpus_per_task: 1, time: 10m, mem: 500M}"
    probe = 'squeue -h -j "$SLURM_JOB_ID" -o "limit=%l mem=%m"'
    config = env.config("tenmin")
    command = f"{probe}; python -m fakejet.launcher --conf {config}"
    bp = env.blueprint("tenmin", config=config, command=command, ajetd=f"slurm: {slurm}")
    lint = env.cli("lint", str(bp))
    assert lint.returncode == 0, lint.stderr
    assert "Traceback" not in lint.stderr
    run_id = env.submit(bp)
    status = env.wait_done(run_id, timeout=60)
    assert status["status"] == "succeeded", status
    script = (env.home / "runs" / run_id / "trial-1.sh").read_text()
    assert "--time=10 " in script and "--mem=500M" in script, script
    log = (env.tmp / "results" / "tenmin" / "logs" / "trial-1.log").read_text()
    assert "limit=10:00 mem=500M" in log, log


def test_lint_refuses_a_bad_slurm_time_by_name(env: Env) -> None:
    out = env.cli("lint", str(env.blueprint("sbad", ajetd="slurm: {time: 10 parsecs}")))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "[ajetd]: slurm.time: no duration found in '10 parsecs'" in out.stderr, out.stderr
    assert "MM:SS, HH:MM:SS, D-HH" in out.stderr


def test_nemo_rl_through_ray_sub_makes_the_driver_log_the_runs_log(cluster_env: Env) -> None:
    """The documented ray.sub pattern (blueprints/examples/slurm_nemo_rl_ray_sub.md), with a
    one-node stand-in for ray.sub: the driver's output, read from ray-driver.log, is the run's
    log, so NeMo-RL's metrics and normal end are read from it."""
    env = cluster_env
    example = (ROOT / "blueprints" / "examples" / "slurm_nemo_rl_ray_sub.md").read_text()
    command = re.search(r"```bash\n(.*?)\n```", example, re.DOTALL)
    assert command is not None
    run_grpo = (
        "python examples/run_grpo.py --config examples/configs/grpo_fake.yaml "
        "grpo.max_num_steps=4 grpo.val_period=2"
    )
    line = re.sub(r'COMMAND="[^"]*"', f'COMMAND="{run_grpo}"', command.group(1))
    line = line.replace("/lustre/containers/nemo-rl.sqsh", "none").replace(
        "/lustre:/lustre", "none"
    )
    bp = env.blueprint(
        "raysub",
        config="examples/configs/grpo_fake.yaml",
        command=line,
        ajetd="slurm: {mode: batch}\ngpus: all",
    )
    run_id = env.submit(bp)
    status = env.wait_done(run_id, timeout=90)
    assert status["status"] == "succeeded", status
    assert status["metrics"]["accuracy"] == 0.38  # read from the driver's log
    log = (env.tmp / "results" / "raysub" / "logs" / "trial-1.log").read_text()
    assert "[ray.sub] Ray head started" in log and "Max number of steps has been reached" in log
    assert any("compound shell line" in w for w in status["warnings"])


def test_agentjet_with_ray_cluster_gets_the_head_node(
    cluster_env: Env, slurm_cluster: SlurmCluster
) -> None:
    env = cluster_env
    example = (ROOT / "blueprints" / "examples" / "slurm_agentjet_ray_cluster.md").read_text()
    command = re.search(r"```bash\n(.*?)\n```", example, re.DOTALL)
    assert command is not None
    config = env.config("raycl")
    line = (
        command.group(1)
        .replace("ajet.launcher", "fakejet.launcher")
        .replace("./tutorial/example_math_agent/math_agent.yaml", config)
    )
    run_id = env.submit(
        env.blueprint("raycl", config=config, command=line, ajetd="slurm: {mode: batch}")
    )
    assert env.wait_done(run_id, timeout=60)["status"] == "succeeded"
    log = (env.tmp / "results" / "raycl" / "logs" / "trial-1.log").read_text()
    assert f"ray_cluster=True master={slurm_cluster.node}" in log


def test_slurms_own_time_limit_signal_is_a_time_limit(cluster_env: Env) -> None:
    """With slurm.time below exp_max_time Slurm's `--signal=B:INT@...` warning comes first:
    the program gets SIGINT as from ajetd, and the run ends `time_limit` with its data."""
    env = cluster_env
    config = env.config("slurmlimit", forever=True)
    ajetd = "slurm: {mode: batch, time: '1', extra: ['--signal=B:INT@58']}"
    run_id = env.submit(env.blueprint("slurmlimit", config=config, max_time="10m", ajetd=ajetd))
    status = env.wait_done(run_id, timeout=90)
    assert status["status"] == "time_limit" and status["exit_code"] == 130, status
    assert "Slurm's time limit" in status["reason"]
    assert "step:1 " in (env.tmp / "results" / "slurmlimit" / "logs" / "trial-1.log").read_text()


def test_sacct_and_scontrol_answers_as_jobs() -> None:
    """Recorded answers of both sources; the sacct path runs where accounting is on (the test
    cluster has none, as the issue's test plan asks)."""
    from ajetd.hosts.slurm import parse_sacct, parse_scontrol

    sacct = (
        "101|COMPLETED|0:0|0:0|gpu-3|2026-12-02T09:28:05|2026-12-02T09:20:00|None\n"
        "102|CANCELLED by 1000|0:15|0:0|gpu-4|Unknown|None|None\n"
        "103|NODE_FAIL|0:0|1:0|gpu-5|2026-12-02T09:30:00|Unknown|a reason | with the separator\n"
        "104|RUNNING|0:0|0:0|gpu-6|Unknown|Unknown|None\n"
        "999|FAILED|1:0|0:0|gpu-7|2026-12-02T09:28:05|Unknown|None\n"
    )
    jobs = parse_sacct(sacct, {"101", "102", "103", "104"})
    assert [(j.job_id, j.state, j.exit_code, j.nodes) for j in jobs.values()] == [
        ("101", "COMPLETED", 0, "gpu-3"),
        ("102", "CANCELLED", 143, "gpu-4"),
        ("103", "NODE_FAIL", 1, "gpu-5"),
    ]
    at = datetime(2026, 12, 2, 9, 28, 5).timestamp()  # Slurm prints local time
    assert [j.ended_at for j in jobs.values()] == [at, None, at + 115]
    assert [j.started_at for j in jobs.values()] == [at - 485, None, None]
    assert jobs["103"].reason == "a reason | with the separator"
    scontrol = (
        "JobId=7 JobName=ajet_x_t1 JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15 NodeList=n1 "
        "StartTime=2026-12-02T09:20:00 EndTime=2026-12-02T09:28:05\n"
        "JobId=8 JobName=ajet_y_t1 JobState=PENDING Reason=Resources ExitCode=0:0 NodeList= "
        "EndTime=Unknown\n"
    )
    [job] = parse_scontrol(scontrol, {"7", "8"}).values()
    assert (job.state, job.reason, job.exit_code, job.nodes) == ("TIMEOUT", "TimeLimit", 143, "n1")
    assert job.ended_at == at and job.started_at == at - 485


def test_a_job_that_ended_while_the_daemon_was_away_is_finished(cluster_env: Env) -> None:
    env = cluster_env
    run_id = _submit(env, "away", "{mode: batch}", steps=6, step_time=0.2)
    job_exit = env.home / "runs" / run_id / "trial-1.job.exit"
    job_id = env.home / "runs" / run_id / "trial-1.job.id"
    wait_for(job_id.exists, timeout=60, what="the job submitted")
    env.daemons[0].send_signal(signal.SIGKILL)
    env.daemons[0].wait()
    wait_for(job_exit.exists, timeout=60, what="the job to end while no daemon runs")
    env.start_daemon()
    status = env.wait_done(run_id, timeout=60)
    assert status["status"] == "succeeded" and status["trials"] == 1
    assert (env.tmp / "results" / "away" / "finish.flag").exists()


def test_slurm_end_states_become_findings_and_fixes() -> None:
    """How each final Slurm state reads, and what ajetd does about it (preemption cannot be
    staged on the one-node test cluster: its path is checked here, without a cluster)."""
    from ajetd.core.model import Run, State, Trial
    from ajetd.core.remedy import Relaunch, choose
    from ajetd.hosts.slurm import Job, finding

    run = Run("r1", "b.md", 0.0, state=State.RUNNING, trials=(Trial(1, "x", "s", 1.0),))
    expected = {
        "PREEMPTED": ("preempted", Relaunch),
        "NODE_FAIL": ("node_failure", Relaunch),
        "BOOT_FAIL": ("node_failure", Relaunch),
        "OUT_OF_MEMORY": ("host_oom", None),
        "TIMEOUT": ("slurm_timeout", None),
        "DEADLINE": ("slurm_timeout", None),
    }
    for state, (kind, remedy) in expected.items():
        found = finding(Job("7", state, "x", 0, "n1"))
        assert found is not None and found.kind == kind, state
        choice = choose(run, [found], 3, None, 10.0)
        assert isinstance(choice, Relaunch) == (remedy is Relaunch), (state, choice)
    for state in ("COMPLETED", "FAILED", "CANCELLED"):
        assert finding(Job("7", state, "", 1, "n1")) is None


@pytest.mark.parametrize("mode", ["batch", "interactive"])
def test_a_job_with_a_damaged_record_is_rebuilt_never_resubmitted(
    cluster_env: Env, mode: str
) -> None:
    """Its record cut while the daemon was down: the program's facts come from the job's own
    script (`trial-1.job.sh`), the job from its name and (batch) the id the follower wrote
    (`trial-1.job.id`), as after any restart; the run is supervised again, `ajetd stop`
    reaches the job, and it is never submitted twice."""
    env = cluster_env
    run_id = _submit(env, "sdmg", f"{{mode: {mode}}}", forever=True, step_time=0.1)
    log = env.tmp / "results" / "sdmg" / "logs" / "trial-1.log"
    wait_for(lambda: log.exists() and "step:2 " in log.read_text(), timeout=60, what="output")
    job = wait_for(
        lambda: env.record(run_id).get("slurm", {}).get("job_id"), timeout=30, what="its job id"
    )
    rebuilt_after_a_cut(env, run_id, ("session", "codebase_dir", "venv_dir", "result_dir"))
    if mode == "batch":  # what the follower wrote, never in the record alone
        assert (env.home / "runs" / run_id / "trial-1.job.id").read_text().strip() == job
    wait_for(
        lambda: env.record(run_id).get("slurm", {}).get("job_id") == job,
        timeout=30,
        what="the job found again in squeue, by its name",
    )
    env.cli("stop", run_id)
    status = env.wait_done(run_id, timeout=60)
    assert status["status"] == "stopped" and status["exit_code"] == 130, status
    assert "rebuilt" in status["reason"]
    if mode == "batch":
        assert log.read_text().count("submitted batch job") == 1
    assert env.launches() == [f"{run_id} 1"]


def test_a_job_slurm_ended_is_recorded_at_slurms_end_time_not_when_noticed(
    tmp_path: Path,
) -> None:
    """A job Slurm ended without its script's exit file (a node that died, a time limit): its
    end time was the moment the poll noticed it, up to a minute later (the poll backs off).
    It is now Slurm's End/EndTime, where that lies within the trial; else still the notice."""
    from ajetd.adapters.store import Home
    from ajetd.core.model import Run, Trial
    from ajetd.hosts import slurm
    from ajetd.hosts.slurmjob import SlurmPoller

    home = Home(tmp_path / "home")
    home.ensure()
    began = 1_000_000.0
    run = Run("abc123", "b.md", began, trials=(Trial(1, "train", "s", started_at=began),))
    home.run_dir(run.run_id).mkdir()
    done = home.trial_file(run.run_id, 1, "job.done")
    poller = SlurmPoller(home, 5.0)
    for said, recorded in ((began + 40, began + 40), (began - 5, began + 70), (None, began + 70)):
        job = slurm.Job("7", "NODE_FAIL", "", 1, "n1", said)
        poller.ended(run, job, began + 70)
        assert done.read_text() == f"1 {recorded}\n", said
