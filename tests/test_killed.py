"""A SIGKILL is no OOM by itself (walk97 F2): a trial killed from outside with no OOM kill on
record is `possibly host_oom`, never "the machine ran out of host memory" stated as fact; one
the kernel's OOM killer killed is `host_oom` with the kernel's own line as evidence. Real
daemon, real tmux, real `kill -9`, a real OOM kill in a memory cgroup where this machine lets
a test make one; the kernel's records read back from recorded text; the weighing as a pure
function. Text alone (`ajetd diagnose`, a pasted log) still reads a bare `Killed` as host_oom:
the corpus's pasted logs are mostly right to."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from ajetd.adapters import oomwatch
from ajetd.core import oomrecord, policy
from ajetd.core.finding import POSSIBLE, RECORDED, Finding
from ajetd.diagnosis import killed
from ajetd.diagnosis.catalogue import BY_NAME
from ajetd.diagnosis.stream import diagnose_text
from conftest import Env, campaign_ledger, wait_for

# The tests that kill a program and read how its end was weighed run one after another (on one
# worker): a real OOM kill in this machine's cgroup, while another of them runs, is one more
# OOM kill ajetd may have to tell from theirs (`diagnosis.killed.verdict`)
ONE_AT_A_TIME = pytest.mark.xdist_group("oomkill")
SLEEPER = (
    'python -c \'import os,time; print("step 1", flush=True); '
    'open("{pidfile}", "w").write(str(os.getpid())); time.sleep(600)\''
)
SELF_KILL = (
    'python -c \'import os,signal; print("step 1", flush=True); '
    "os.kill(os.getpid(), signal.SIGKILL)'"
)


def _no_oom_stated(env: Env, run_id: str, name: str) -> dict:
    status = env.wait_done(run_id)
    assert status["status"] == "failed" and status["exit_code"] == 137, status
    reason = status["reason"]
    assert "exited with code 137 (SIGKILL: killed)" in reason, reason
    assert "possibly host_oom: killed by SIGKILL from outside the program" in reason, reason
    assert "no OOM kill was recorded" in reason, reason
    assert "host_oom: the kernel" not in reason and "trial-1.sh" not in reason, reason
    root = status["diagnosis"][0]
    assert root["kind"] == "host_oom" and root["certainty"] == "possible", root
    assert "ran out of host" not in root["explanation"], root
    result = env.tmp / "results" / name
    flag = json.loads((result / "finish.flag").read_text())
    assert flag["reason"] == reason, flag
    for report in ("trials.md", "results.md"):
        text = (result / report).read_text()
        assert "possibly host_oom" in text, text
        assert "The machine ran out of host (CPU) memory" not in text, text
    assert "possibly host_oom" in env.cli("status", run_id).stdout
    return status


@ONE_AT_A_TIME
def test_a_kill_9_from_another_shell_is_no_oom_stated_as_fact(daemon_env: Env) -> None:
    env = daemon_env
    pidfile = env.tmp / "program.pid"
    command = SLEEPER.format(pidfile=pidfile)
    run_id = env.submit(env.blueprint("kill9", command=command, ajetd="gpus: 0"))
    wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), 30, what="the program")
    os.kill(int(pidfile.read_text()), signal.SIGKILL)  # a person, a preemption, a watchdog
    _no_oom_stated(env, run_id, "kill9")


@ONE_AT_A_TIME
def test_a_program_that_kills_itself_is_no_oom_stated_as_fact(daemon_env: Env) -> None:
    env = daemon_env
    run_id = env.submit(env.blueprint("selfkill", command=SELF_KILL, ajetd="gpus: 0"))
    status = _no_oom_stated(env, run_id, "selfkill")
    evidence = status["diagnosis"][0]["evidence"]
    assert "bash -o pipefail" not in evidence, evidence  # ajetd's own line is no evidence


@ONE_AT_A_TIME
def test_a_kill_its_output_echoes_while_it_runs_is_weighed_too(daemon_env: Env) -> None:
    """A worker killed by SIGKILL while the program goes on (a shell's `Killed` for it): the
    running trial's diagnosis says `possibly host_oom`, and so do the reports of the run
    ajetd then stops (they show what its output showed while it ran)."""
    env = daemon_env
    command = "sleep 1000 & kill -KILL $!; wait $!; echo step 1; sleep 1000"
    run_id = env.submit(env.blueprint("livekill", command=command, ajetd="gpus: 0"))

    def seen() -> list[dict]:
        return [f for f in env.status(run_id)["diagnosis"] if f["kind"] == "host_oom"]

    (live,) = wait_for(seen, 30, what="the echo seen while it runs")
    assert live["certainty"] == "possible", live
    assert env.cli("stop", run_id).returncode == 0
    env.wait_done(run_id)
    trials = (env.tmp / "results" / "livekill" / "trials.md").read_text()
    assert "`possibly host_oom`" in trials and "ran out of host" not in trials, trials
    events = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert "seen while running: possibly host_oom (line" in events, events


@ONE_AT_A_TIME
def test_a_campaigns_crash_row_says_only_possibly_host_oom(daemon_env: Env) -> None:
    """A campaign's experiment killed by SIGKILL: its crash row's why (campaign status, its
    campaign.md) is its run's reason, never "the machine ran out of host memory"."""
    env = daemon_env
    folder = env.tmp / "kc-folder"
    folder.mkdir()
    base = env.blueprint("kc-base", command=SELF_KILL, ajetd="gpus: 0\nmax_trials: 1")
    (folder / "base.md").write_text(base.read_text())
    (folder / "campaign.yaml").write_text(
        "name: kc\nmetric: mean_reward\ndirection: max\nbase: base.md\n"
        f"result_dir: {env.tmp / 'campaigns' / 'kc'}\nstop: {{max_experiments: 1}}\n"
    )
    assert env.cli("campaign", str(folder)).returncode == 0
    wait_for(lambda: campaign_ledger(env, "kc"), timeout=60, what="the crash row")
    (row,) = campaign_ledger(env, "kc")
    assert row["status"] == "crash", row
    listed = json.loads(env.cli("campaign", "list", "--json").stdout)
    data = json.loads(env.cli("campaign", "status", listed[0]["campaign_id"], "--json").stdout)
    (why,) = [r["reason"] for r in data["rows"]]
    assert "(possibly host_oom: killed by SIGKILL from outside the program" in why, why
    report = (env.tmp / "campaigns" / "kc" / "campaign.md").read_text()
    assert "possibly host_oom" in report and "ran out of host" not in report, report


LIMIT = 64 << 20  # the child cgroup's memory: the program asks for eight times as much
HOG = "python -c 'x = bytes(range(256)) * (2 << 20); print(len(x))'"  # each page written


def _memory_limited_child(name: str) -> Path | None:
    """A child of this process's memory cgroup whose memory is LIMIT (and no swap), where this
    machine lets a test make one (root, a writable cgroup v1 memory hierarchy, or a v2 one
    whose parent gives its children the memory controller); None where it does not."""
    member = oomrecord.memory_cgroup(Path("/proc/self/cgroup").read_text())
    mounts = oomrecord.cgroup_mounts(Path("/proc/self/mountinfo").read_text())
    folder = oomrecord.cgroup_folder(member, mounts) if member is not None else None
    if member is None or folder is None:
        return None
    child = Path(folder) / name
    try:
        child.mkdir()
    except OSError:
        return None
    limits = (
        ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes")
        if member.v1
        else ("memory.max", "memory.swap.max")
    )
    try:
        (child / limits[0]).write_text(str(LIMIT))
        if (child / limits[1]).exists():
            (child / limits[1]).write_text(str(LIMIT) if member.v1 else "0")
    except OSError:
        child.rmdir()
        return None
    return child


@ONE_AT_A_TIME
@pytest.mark.parametrize("how", ["exec", "child"])
def test_a_real_oom_kill_is_host_oom_with_the_kernels_line(daemon_env: Env, how: str) -> None:
    """The program moves itself into a memory cgroup of 64 MiB and asks for 512 MiB: the
    kernel's OOM killer kills it (SIGKILL). That is `host_oom` as fact, the kernel's record
    its evidence (its log's line, or the cgroup's counter where the log cannot be read).
    `exec`: the command's shell becomes the program (ajetd's script's `Killed` line names its
    pid); `child`: the program is its shell's child, the shell exits 137 on its own (its own
    `Killed` line names the pid)."""
    env = daemon_env
    child = _memory_limited_child(f"ajetd-test-{os.getpid()}-{time.monotonic_ns()}")
    if child is None:
        pytest.skip("no memory cgroup can be made here (not root, or no writable hierarchy)")
    try:
        run = f"exec {HOG}" if how == "exec" else f"{HOG} && echo never"
        command = f"echo $$ > {child}/cgroup.procs && {run}"
        run_id = env.submit(env.blueprint("oom", command=command, ajetd="gpus: 0"))
        status = env.wait_done(run_id)
    finally:
        wait_for(lambda: not (child / "cgroup.procs").read_text().strip(), 30, what="no task")
        child.rmdir()
    assert status["status"] == "failed" and status["exit_code"] == 137, status
    root = status["diagnosis"][0]
    assert root["kind"] == "host_oom" and root["certainty"] == "recorded", root
    reason = status["reason"]
    assert "possibly" not in reason and "(host_oom: " in reason, reason
    _, unread = oomwatch.kernel_log()
    if not unread:  # the kernel's own line: the victim is the program (its pid)
        assert "OOM killer killed python" in reason and "this trial's process" in reason, reason
        assert "Killed process" in root["evidence"], root
    else:
        assert "OOM kill counter" in reason, reason
    trials = (env.tmp / "results" / "oom" / "trials.md").read_text()
    assert "The machine ran out of host (CPU) memory" in trials and "possibly" not in trials


# -- the kernel's records, as recorded from real machines --------------------------------------

V2_EVENTS = "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n"
V1_OOM_CONTROL = "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n"
V1_HYBRID_CGROUP = (  # a container on a hybrid host (this machine's, 6.18)
    "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/23fd80eb\n3:cpuset:/\n0::/\n"
)
V2_CGROUP = "0::/user.slice/user-1000.slice/session-3.scope\n"
MOUNTINFO = (  # a v1 memory hierarchy, the unified one beside it, and a v2-only host's
    "34 25 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "35 25 0:30 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "36 25 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    "40 1 0:32 /docker/abc /mnt/cg\\040two rw - cgroup2 cgroup2 rw,nsdelegate\n"
)
KMSG_RECORDS = (  # /dev/kmsg's records of one memory cgroup's OOM kill (kernel 6.18)
    "6,500,11843808860,-;Tasks state (memory values in pages):\n",
    "6,501,11843808871,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
    "mems_allowed=0,oom_memcg=/process_api/23fd80eb/probe,task_memcg=/process_api/23fd80eb/"
    "probe,task=python3,pid=2876,uid=0\n",
    "3,502,11843808901,-;Memory cgroup out of memory: Killed process 2876 (python3) "
    "total-vm:211880kB, anon-rss:38784kB, file-rss:6616kB, shmem-rss:0kB, UID:0 "
    "pgtables:136kB oom_score_adj:0\n SUBSYSTEM=memory\n",
)
DMESG_LINES = (  # `dmesg` of a global OOM (an older kernel's words)
    "[ 7012.114210] python invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0",
    "[ 7012.114400] Out of memory: Kill process 9911 (ray::Worker) score 905 or sacrifice child",
    "[ 7012.114500] Killed process 9911 (ray::Worker) total-vm:90123456kB, anon-rss:8123456kB",
)


def test_the_oom_kill_counter_is_read_from_either_cgroup_version() -> None:
    assert oomrecord.oom_kill_count(V2_EVENTS) == 2
    assert oomrecord.oom_kill_count(V1_OOM_CONTROL) == 5
    assert oomrecord.oom_kill_count("oom_kill_disable 0\nunder_oom 0\n") is None  # kernel < 4.13


def test_a_processs_memory_cgroup_and_its_folder_are_found() -> None:
    mounts = oomrecord.cgroup_mounts(MOUNTINFO)
    assert [m.point for m in mounts] == [
        "/sys/fs/cgroup/memory",
        "/sys/fs/cgroup/unified",
        "/mnt/cg two",
    ]
    v1 = oomrecord.memory_cgroup(V1_HYBRID_CGROUP)
    assert v1 == oomrecord.Membership("/process_api/23fd80eb", True)
    assert oomrecord.cgroup_folder(v1, mounts) == "/sys/fs/cgroup/memory/process_api/23fd80eb"
    v2 = oomrecord.memory_cgroup(V2_CGROUP)
    assert v2 is not None and not v2.v1
    assert oomrecord.cgroup_folder(v2, mounts) == (
        "/sys/fs/cgroup/unified/user.slice/user-1000.slice/session-3.scope"
    )
    inside = oomrecord.Membership("/docker/abc/x", False)  # below a mount whose root is deeper
    assert oomrecord.cgroup_folder(inside, mounts[2:]) == "/mnt/cg two/x"
    assert oomrecord.memory_cgroup("0::/../../outside\n") is None  # outside its namespace


def test_the_kernel_logs_oom_kills_are_read_with_their_cgroup_and_time() -> None:
    (kill,) = oomrecord.kernel_kills(KMSG_RECORDS)
    assert (kill.pid, kill.task, kill.memcg) == (2876, "python3", "/process_api/23fd80eb/probe")
    assert kill.at == pytest.approx(11843.808901)
    assert kill.text.startswith("Memory cgroup out of memory: Killed process 2876 (python3)")
    (old,) = oomrecord.kernel_kills(DMESG_LINES)
    assert (old.pid, old.task, old.memcg, old.at) == (9911, "ray::Worker", "", 7012.1145)
    assert oomrecord.kernel_kills(["6,1,2,-;Killed by a signal", "no record"]) == ()


def test_the_adapter_reads_counters_in_real_folders_and_follows_no_link(tmp_path: Path) -> None:
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "memory.events").write_text(V2_EVENTS)
    assert oomwatch.oom_kills(str(v2)) == 2
    v1 = tmp_path / "v1"
    (v1 / "child" / "grandchild").mkdir(parents=True)
    for folder, count in ((v1, 1), (v1 / "child", 2), (v1 / "child" / "grandchild", 4)):
        (folder / "memory.oom_control").write_text(f"oom_kill_disable 0\noom_kill {count}\n")
    assert oomwatch.oom_kills(str(v1)) == 7  # v1 counts each cgroup's own: summed below it
    (tmp_path / "link").symlink_to(v2)
    assert oomwatch.oom_kills(str(tmp_path / "link")) is None  # not where a cgroup's files are
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "memory.events").symlink_to(v2 / "memory.events")
    assert oomwatch.oom_kills(str(tmp_path / "odd")) is None  # a link in its place: not read
    assert oomwatch.oom_kills(str(tmp_path / "none")) is None


def test_the_adapter_finds_this_process_cgroup_or_says_why_not() -> None:
    found = oomwatch.watch(os.getpid())
    if found is not None:  # a machine with a memory controller
        assert found.count >= 0 and found.folder.startswith("/") and found.cgroup != "/"
    lines, unread = oomwatch.kernel_log()
    assert bool(unread) or isinstance(lines, tuple)
    assert unread == "" or unread.startswith("/dev/kmsg: ")
    elsewhere = oomwatch.look("", "", None, "user@gpu1")
    assert elsewhere.elsewhere == "user@gpu1" and not elsewhere.kernel_log


# -- the weighing, a pure function --------------------------------------------------------------

START = 1_800_000_000.0
BOOT_AT = START - 10_000.0  # the kernel's stamps: seconds since this
TRIAL = killed.Trial(START, START + 60)
WRAPPER = (
    "/h/runs/ab12cd/trial-1.sh: line 41:  4166 Killed                  bash -o pipefail -c "
    "'python train.py actor_rollout_ref.rollout.gpu_memory_utilization=0.6'"
)


def _found(*lines: str) -> tuple[Finding, ...]:
    return tuple(diagnose_text("\n".join(lines)))


def _kill(pid: int, memcg: str = "/svc/ajetd", after_start: float = 30.0) -> oomrecord.KernelKill:
    text = f"Out of memory: Killed process {pid} (python) total-vm:9kB"
    return oomrecord.KernelKill(START - BOOT_AT + after_start, pid, "python", memcg, text)


def _look(
    *kills: oomrecord.KernelKill, rise: int | None = 0, log: bool = True
) -> oomrecord.OomLook:
    unread = "" if log else "/dev/kmsg: Operation not permitted"
    return oomrecord.OomLook("", "/svc/ajetd", rise, log, unread, kills, BOOT_AT)


def test_text_alone_still_reads_a_bare_killed_as_host_oom() -> None:
    """A pasted log (`ajetd diagnose`): the catalogue's reading, unweighed (the corpus)."""
    for line in ("Killed", WRAPPER, "torch ChildFailedError: exitcode: -9"):
        (found,) = _found(line)[:1]
        assert found.kind == "host_oom" and found.certainty == "", line
        assert found.named() == "host_oom"


def test_a_sigkill_with_no_oom_on_record_is_only_possible() -> None:
    (weighed,) = killed.weigh(_found("step 1", WRAPPER), 137, _look(), TRIAL)
    assert weighed.kind == "host_oom" and weighed.certainty == POSSIBLE
    assert weighed.named() == "possibly host_oom"
    assert weighed.evidence.startswith("killed by SIGKILL from outside the program (pid 4166); ")
    assert "no OOM kill was recorded: a person, a scheduler's preemption" in weighed.evidence
    assert "bash -o pipefail" not in weighed.evidence  # ajetd's own line is no evidence
    assert "ran out of host" not in weighed.explanation and "kill -9" in weighed.fix
    said = policy.root_cause(weighed)
    assert said.startswith("possibly host_oom: killed by SIGKILL from outside the program")


def test_the_kernels_kill_of_the_programs_pid_makes_it_a_fact() -> None:
    look = _look(_kill(4166, memcg="/elsewhere"))
    (weighed,) = killed.weigh(_found(WRAPPER), 137, look, TRIAL)
    assert weighed.certainty == RECORDED and weighed.named() == "host_oom"
    assert weighed.evidence.startswith("the kernel's OOM killer killed python (pid 4166), this")
    assert "Out of memory: Killed process 4166" in weighed.evidence
    assert weighed.explanation == BY_NAME["host_oom"].explanation


def test_another_process_killed_in_a_shared_cgroup_is_said_not_taken_for_it() -> None:
    """The program's pid is known (ajetd's script echoed its kill) and the kernel log was
    read: an OOM kill of another process of the same cgroup meanwhile is not its."""
    look = _look(_kill(777, memcg="/svc/ajetd/other"), rise=1)
    (weighed,) = killed.weigh(_found(WRAPPER), 137, look, TRIAL)
    assert weighed.certainty == POSSIBLE
    assert "killed python (pid 777), not known to be this trial's" in weighed.evidence
    assert "OOM kill counter counted 1 while it ran" in weighed.evidence


def test_a_kill_of_a_pid_another_echo_names_is_the_trials() -> None:
    """torchrun's `exitcode: -9 ... (pid: N)`, a shell's job line for the program it ran: the
    kernel's kill of that pid is the trial's; a kill of another in its cgroup is not."""
    echo = "torch.distributed.elastic: failed (exitcode: -9) local_rank: 0 (pid: 5150) of binary"
    (weighed,) = killed.weigh(_found(echo), 1, _look(_kill(5150, memcg="/x")), TRIAL)
    assert weighed.certainty == RECORDED and "(pid 5150), this trial's process" in weighed.evidence
    assert 'its output says "torch.distributed.elastic' in weighed.evidence
    job = "bash: line 1:  6160 Killed                  python train.py"
    (other,) = killed.weigh(_found(job), 137, _look(_kill(6161, memcg="/svc/ajetd/y")), TRIAL)
    assert other.certainty == POSSIBLE and "(pid 6161), not known to be" in other.evidence


def test_the_cgroups_counter_or_a_kill_in_it_is_a_fact_where_no_pid_is_known() -> None:
    """A worker killed by the OOM killer, the program exiting 137 on its own (a shell's exit
    with its child's status): no pid echoed, the trial's cgroup is the evidence."""
    unread = _look(rise=2, log=False)
    first, *rest = killed.weigh(
        _found("Traceback (most recent call last):", "KeyError: 'x'"), 137, unread, TRIAL
    )
    assert first.kind == "host_oom" and first.certainty == RECORDED and first.line == 0
    assert "memory cgroup /svc/ajetd's OOM kill counter counted 2 OOM kill(s)" in first.evidence
    assert [f.kind for f in rest] == ["unknown_traceback"]
    inside = _look(_kill(999, memcg="/svc/ajetd/ray"))
    (weighed,) = killed.weigh(_found("subprocess exited with exit code 137"), 1, inside, TRIAL)
    assert (
        weighed.certainty == RECORDED
        and "in this trial's memory cgroup /svc/ajetd" in weighed.evidence
    )


def test_a_kill_outside_the_trials_time_or_the_root_cgroup_is_not_its() -> None:
    before = _kill(4166 + 1, memcg="/svc/ajetd/x", after_start=-30.0)  # the trial before's
    root = oomrecord.OomLook("", "/", None, True, "", (_kill(5, memcg="/other"),), BOOT_AT)
    for look in (_look(before), root):
        (weighed,) = killed.weigh(_found("Killed"), 1, look, TRIAL)
        assert weighed.certainty == POSSIBLE, look
        assert weighed.evidence.startswith('"Killed": a process killed by SIGKILL; ')


def test_an_exit_by_sigkill_with_no_output_finding_gets_a_possible_one() -> None:
    (weighed,) = killed.weigh((), 137, _look(log=False, rise=None), TRIAL)
    assert weighed.certainty == POSSIBLE and weighed.line == 0
    assert (
        "ajetd could read no OOM record here: not the kernel log (/dev/kmsg: " in weighed.evidence
    )
    away = oomrecord.OomLook(elsewhere="user@gpu1")
    (there,) = killed.weigh((), 137, away, TRIAL)
    assert "ajetd cannot see the OOM killer of user@gpu1" in there.evidence


def test_the_programs_own_words_of_memory_are_left_as_they_are() -> None:
    """Ray's OOM message, a MemoryError, the command's `gpu_memory_utilization` in a job line
    aside: evidence of memory itself (or no echo at all) is not weighed."""
    ray = _found(
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory."
    )
    assert killed.weigh(ray, 1, _look(), TRIAL) == ray
    assert not killed.needs_look(ray, 1)
    assert killed.echoes_kill_only(_found(WRAPPER)[0])  # its command's words are no message
    named = _found(WRAPPER.replace("train.py", "train.py --pid 5 --oom_ratio 2"))
    look = _look(_kill(5, memcg="/svc/ajetd/z"))
    (weighed,) = killed.weigh(named, 137, look, TRIAL)  # nor its pids
    assert weighed.certainty == POSSIBLE and "(pid 5), not known" in weighed.evidence
    cuda = _found("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert killed.weigh(cuda, 1, _look(), TRIAL) == cuda
