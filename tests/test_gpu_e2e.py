"""GPU placement, attribution and GPU rules end to end, on GPUs described by an
`AJETD_FAKE_GPUS` file that the fake launcher updates as a driver would (its pid and memory
appear on the GPUs it was given, and go when it exits)."""

from __future__ import annotations

import fcntl
import json
import subprocess
from pathlib import Path
from typing import Any

from conftest import Env, wait_for


def _gpus(env: Env, count: int, **extra: Any) -> Path:
    return env.fake_gpus(count, **extra)


def _edit(path: Path, change: Any) -> None:
    """Change the fake GPUs' file as the fake launcher does (`_edit_fake_gpus`): under its lock.
    Without it, the launcher putting its process on the GPU (read, change, write) could read
    the file just before this edit and write it back just after, undoing it: a lost GPU then
    never showed (test_lost_gpu_is_a_finding_and_the_root_cause timed out once in CI)."""
    with open(f"{path}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        doc = json.loads(path.read_text())
        change(doc)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc))
        tmp.replace(path)


def _start(env: Env) -> None:
    env.start_daemon("--gpu-young-period", "0.2", "--gpu-period", "0.2")


def _run(env: Env, name: str, gpus: str, file: Path, **fake: Any) -> str:
    config = env.config(name, fake_gpu={"file": str(file), "memory_mib": 30000}, **fake)
    return env.submit(env.blueprint(name, config=config, ajetd=f"gpus: {gpus}"))


def test_runs_get_disjoint_gpus_and_queue_in_order(env: Env) -> None:
    file = _gpus(env, 2)
    _start(env)
    first = _run(env, "first", "1", file, forever=True)
    go = env.tmp / "second-may-end"  # held until the third waits, however slow the machine
    second = _run(env, "second", "1", file, steps=4, hold_until=str(go))
    third = _run(env, "third", "1", file, steps=4)
    wait_for(
        lambda: "waiting for 1 GPU(s)" in env.record(third).get("reason", ""),
        what="the third run to wait for a GPU",
    )
    assert env.record(second).get("state") == "running"
    go.touch()
    wait_for(lambda: env.record(second).get("state") == "done", what="second run")
    assert env.status(second)["status"] == "succeeded"
    wait_for(lambda: env.record(third).get("state") == "done", what="third run")
    assert env.record(first)["state"] == "running"
    assert env.record(first)["gpu_ids"] == [0]
    assert env.record(second)["gpu_ids"] == [1] and env.record(third)["gpu_ids"] == [1]
    events = (env.home / "runs" / third / "events.jsonl").read_text()
    assert f"waiting for 1 GPU(s): GPU 0 is held by run {first}; GPU 1 is held by run" in events
    log = (env.tmp / "results" / "first" / "logs" / "trial-1.log").read_text()
    assert "launcher" in log
    status = env.status(first)
    assert status["gpus"] == [0]
    wait_for(lambda: env.status(first)["gpu"], what="a GPU sample of the first run")
    [view] = env.status(first)["gpu"]
    assert view["index"] == 0 and view["memory_mib"] == 30000 and view["utilization"] == 90
    table = env.cli("status").stdout
    assert "0:90% 29.3G" in table
    env.cli("stop", first)
    results = (env.tmp / "results" / "first" / "results.md").read_text()
    assert "Placed on GPU(s) 0" in results and "| 0 |" in results and "29.3 GiB |" in results


def test_foreign_memory_makes_a_run_wait_until_it_drains(env: Env) -> None:
    file = _gpus(env, 2)
    _edit(
        file,
        lambda d: d["gpus"][1].update(
            memory_used_mib=40000, processes=[{"pid": 1, "memory_mib": 40000}]
        ),
    )
    _start(env)
    run_id = _run(env, "all", "all", file, steps=4)
    wait_for(
        lambda: "GPU 1 has 39.1 GiB" in env.record(run_id).get("reason", ""),
        what="the run to wait for GPU 1",
    )
    assert env.status(run_id)["state"] == "queued"
    assert f"queued {run_id} (1st to launch): waiting for 2 GPU(s)" in env.cli("status").stdout
    cpu = env.submit(env.blueprint("cpu", ajetd="gpus: 0"))  # CPU only never waits
    assert env.wait_done(cpu)["status"] == "succeeded"
    _edit(file, lambda d: d["gpus"][1].update(memory_used_mib=0, processes=[]))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded" and status["gpus"] == [0, 1]


def test_a_run_blocked_by_a_foreign_process_does_not_stall_the_queue(env: Env) -> None:
    """walk87 F7: `gpus: all` waiting for GPU 1, which a program outside ajetd holds, kept
    the free GPU 0 from every later run for as long as that program lived, and nothing said
    so. Now the later `gpus: 1` run takes GPU 0, and the waiting run's reason names the GPU,
    the process (its command line) and that it reserves nothing."""
    file = _gpus(env, 2)
    holder = subprocess.Popen(["sleep", "600"])  # the other user's program on GPU 1
    try:
        _edit(
            file,
            lambda d: d["gpus"][1].update(
                memory_used_mib=40000, processes=[{"pid": holder.pid, "memory_mib": 40000}]
            ),
        )
        _start(env)
        big = _run(env, "big", "all", file, steps=4)
        wait_for(lambda: "GPU 1 has 39.1 GiB" in env.record(big).get("reason", ""), what="wait")
        reason = env.status(big)["reason"]
        assert f"(pids {holder.pid} sleep 600)" in reason, reason
        assert "it reserves no GPU meanwhile" in reason, reason
        small = _run(env, "small", "1", file, steps=4)
        status = env.wait_done(small)
        assert status["status"] == "succeeded" and status["gpus"] == [0], status
        assert env.record(big)["state"] == "queued"
    finally:
        holder.kill()
        holder.wait()
    _edit(file, lambda d: d["gpus"][1].update(memory_used_mib=0, processes=[]))
    status = env.wait_done(big)
    assert status["status"] == "succeeded" and status["gpus"] == [0, 1]


def test_impossible_requests_fail_with_the_reason(env: Env) -> None:
    file = _gpus(env, 2)
    _start(env)
    many = _run(env, "many", "4", file)
    status = env.wait_done(many)
    assert status["status"] == "failed"
    assert "gpus: 4 asks for more GPUs than this machine has (2 visible)" in status["reason"]
    config = env.config("yaml8")
    text = (
        Path(env.codebase / config)
        .read_text()
        .replace("test_freq: 2", "test_freq: 2\n    n_gpus_per_node: 8")
    )
    Path(env.codebase / config).write_text(text)
    mismatch = env.submit(env.blueprint("yaml8", config=config))
    status = env.wait_done(mismatch)
    assert "n_gpus_per_node x nnodes = 8, but the run gets 2" in status["reason"]


def test_gpus_all_is_checked_against_the_yaml_as_overridden(env: Env) -> None:
    """`gpus: all` is checked against the YAML's GPU count when the run is placed: the count
    of the config that runs, its `yaml_overrides` applied (a campaign's overrides for AgentJet
    come this way). It was the count of the user's file before its overrides, so a run whose
    copy asks for the GPUs it gets was refused, and one whose copy asks for more was started."""
    file = _gpus(env, 2)
    _start(env)
    runs = {}
    for name, in_file, overridden in (("fits", 8, 2), ("toomany", 2, 8)):
        config = env.config(name, fake_gpu={"file": str(file), "memory_mib": 30000})
        path = env.codebase / config
        path.write_text(
            path.read_text().replace(
                "test_freq: 2", f"test_freq: 2\n    n_gpus_per_node: {in_file}"
            )
        )
        override = f"ajet.trainer_common.n_gpus_per_node={overridden}"
        runs[name] = env.submit(
            env.blueprint(name, config=config, ajetd=f"yaml_overrides: [{override}]")
        )
    fits = env.wait_done(runs["fits"])
    assert fits["status"] == "succeeded" and fits["gpus"] == [0, 1], fits["reason"]
    refused = env.wait_done(runs["toomany"])
    assert "n_gpus_per_node x nnodes = 8, but the run gets 2" in refused["reason"], refused


def test_vllm_memory_relaunch_waits_for_the_gpu_to_drain(env: Env) -> None:
    file = _gpus(env, 1)
    _start(env)
    marker = env.tmp / "grabbed"
    config = env.config(
        "vllm", fake_gpu={"file": str(file), "memory_mib": 20000, "grabbed_once": str(marker)}
    )
    run_id = env.submit(env.blueprint("vllm", config=config, ajetd="gpus: 1"))
    wait_for(
        lambda: "GPU 0 has 58.6 GiB" in env.record(run_id).get("reason", ""),
        what="the relaunch to wait for the foreign memory",
    )
    assert env.record(run_id)["state"] == "restarting" and len(env.launches()) == 1
    _edit(file, lambda d: d["gpus"][0].update(memory_used_mib=0, processes=[]))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded" and status["trials"] == 2
    trials = (env.tmp / "results" / "vllm" / "trials.md").read_text()
    assert "`vllm_memory`" in trials and "waits until that memory drains" in trials


def test_a_count_s_relaunch_takes_a_free_gpu_a_list_s_waits_saying_until_when(
    env: Env,
) -> None:
    """walk92 F6: after vllm_memory, with pid 1 holding 58.6 GiB of GPU 0 and GPU 1 idle, a
    `gpus: 1` run's relaunch goes to GPU 1 at once (the outside process never leaves); a
    `gpus: [0]` run's waits for GPU 0, its reason saying its time limit ends the wait, and a
    stop then names what it waited for."""
    file = _gpus(env, 2)
    _start(env)
    fake = {"file": str(file), "memory_mib": 20000, "grabbed_once": str(env.tmp / "g1")}
    bp = env.blueprint("vcount", config=env.config("vcount", fake_gpu=fake), ajetd="gpus: 1")
    counted = env.submit(bp)
    status = env.wait_done(counted)
    assert (status["status"], status["trials"]) == ("succeeded", 2), status
    events = (env.home / "runs" / counted / "events.jsonl").read_text()
    assert "placed on GPU(s) 0" in events and "placed on GPU(s) 1" in events, events
    assert "waiting for 1 GPU(s)" not in events, events
    doc = json.loads(file.read_text())
    assert [p["pid"] for p in doc["gpus"][0]["processes"]] == [1]  # still held outside
    trials = (env.tmp / "results" / "vcount" / "trials.md").read_text()
    assert "the relaunch goes to other free GPUs (gpus: a count)" in trials, trials

    fake = {"file": str(file), "memory_mib": 20000, "grabbed_once": str(env.tmp / "g2")}
    _edit(file, lambda d: d["gpus"][0].update(memory_used_mib=0, processes=[]))
    listed = env.submit(
        env.blueprint("vlist", config=env.config("vlist", fake_gpu=fake), ajetd="gpus: [0]")
    )
    wait_for(
        lambda: "GPU 0 has 58.6 GiB" in env.record(listed).get("reason", ""),
        what="the list's relaunch to wait for its GPU",
    )
    record = env.record(listed)
    assert record["state"] == "restarting", record
    assert "it waits at most until its time limit (exp_max_time 2m) falls at" in record["reason"]
    assert record["reason"].endswith("then ends time_limit"), record["reason"]
    stop = env.cli("stop", listed, "--timeout", "20")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    reason = env.wait_done(listed)["reason"]
    assert "while it waited to relaunch (waiting for 1 GPU(s): GPU 0 has 58.6 GiB" in reason
    assert "ends time_limit" not in reason, reason


def test_gpus_names_the_run_a_free_gpu_is_reserved_for(env: Env) -> None:
    """Walk 91, F11: a GPU kept free for a waiting run showed HELD BY `-` in `ajetd gpus`,
    and a later run's reason said only "reserved for an earlier run in the queue"."""
    file = _gpus(env, 2)
    _start(env)
    first = _run(env, "first", "[1]", file, forever=True)
    wait_for(lambda: env.record(first).get("state") == "running", what="the first run")
    big = _run(env, "big", "2", file, steps=1)
    later = _run(env, "later", "1", file, steps=1)
    wait_for(
        lambda: (
            f"GPU 0 is reserved for run {big}, earlier in the queue"
            in env.record(later).get("reason", "")
        ),
        what="the later run to wait behind the reservation",
    )

    def reserved() -> str | None:
        out = env.cli("gpus").stdout
        return out if f"reserved for run {big}" in out else None

    shown = wait_for(reserved, what="the reservation in `ajetd gpus`")
    [row] = [line for line in shown.splitlines() if line.startswith("0 ")]
    assert row.endswith(f"reserved for run {big} (queued)"), shown
    [gpu0] = [g for g in json.loads(env.cli("gpus", "--json").stdout)["local"] if g["index"] == 0]
    assert f"reserved for run {big} (queued)" in gpu0["held_by"], gpu0
    env.cli("stop", first)
    for run_id in (big, later):
        assert env.wait_done(run_id, timeout=60)["status"] == "succeeded"
    wait_for(lambda: "reserved for" not in env.cli("gpus").stdout, what="no reservation left")


def test_lost_gpu_is_a_finding_and_the_root_cause(env: Env) -> None:
    """Also walk 91, F6: the finding changed nothing visible (attention null, `ajetd wait` ran
    to its timeout). A lost GPU is fatal: the run is flagged at once, `wait` exits 2 and
    on_attention runs; the user decides (the program may go on, or hang on the dead GPU)."""
    file = _gpus(env, 1)
    _start(env)
    sink = env.tmp / "hook-out"
    config = env.config(
        "lost", fake_gpu={"file": str(file), "memory_mib": 30000}, forever=True, step_time=0.2
    )
    ajetd = f"gpus: 1\non_attention: 'cat > {sink}'"
    run_id = env.submit(env.blueprint("lost", config=config, ajetd=ajetd))
    wait_for(lambda: env.record(run_id).get("gpu_stats"), what="a first GPU sample")
    _edit(file, lambda d: (d["gpus"][0].update(lost=True), d.update(xid=[{"index": 0, "xid": 79}])))
    wait_for(
        lambda: any(f["kind"] == "gpu_lost" for f in env.status(run_id)["diagnosis"]),
        what="the gpu_lost finding",
    )
    [finding] = [f for f in env.status(run_id)["diagnosis"] if f["kind"] == "gpu_lost"]
    assert "GPU 0 (H100 GPU-fake-0) fell off the bus; Xid 79" in finding["evidence"]
    attention = wait_for(lambda: env.record(run_id).get("attention"), what="attention")
    assert attention.startswith("a GPU of the run is lost: GPU 0 (H100 GPU-fake-0) fell off")
    waited = env.cli("wait", run_id, "--timeout", "30")
    assert waited.returncode == 2, (waited.stdout, waited.stderr)
    hook = wait_for(lambda: sink.exists() and sink.read_text(), what="on_attention")
    assert json.loads(hook)["attention"] == attention
    env.cli("stop", run_id)
    assert env.wait_done(run_id, timeout=60)["status"] == "stopped"


def test_gpu_aware_hang(env: Env) -> None:
    file = _gpus(env, 1)
    _start(env)
    config = env.config("hang", hang=True, fake_gpu={"file": str(file), "memory_mib": 1000})
    run_id = env.submit(env.blueprint("hang", config=config, ajetd="gpus: 1\nhang: {window: 2s}"))
    wait_for(lambda: env.record(run_id).get("gpu_stats"), what="a first GPU sample")
    # silent, but its GPU works (90 %): not a hang however long it lasts
    busy_since = env.record(run_id)["trials"][0]["started_at"]
    wait_for(
        lambda: env.record(run_id)["gpu_stats"]["0"]["last_at"] > busy_since + 4,
        what="4 s of busy GPU samples",
    )
    assert env.record(run_id)["attention"] is None
    _edit(file, lambda d: d["gpus"][0].update(utilization=0))
    wait_for(lambda: env.record(run_id).get("attention"), what="hang attention")
    assert "GPUs idle" in env.record(run_id)["attention"]


def test_silent_with_busy_gpus_holds_the_hang_rule_back_then_stops_it(env: Env) -> None:
    """A collective deadlock: silent, its GPU at 90 %. The user's `action: stop` is said to be
    held back (status's attention), then acts at 3 windows of silence."""
    file = _gpus(env, 1)
    _start(env)
    config = env.config("spin", hang=True, fake_gpu={"file": str(file), "memory_mib": 1000})
    ajetd = "gpus: 1\nhang: {window: 2s, action: stop}"
    run_id = env.submit(env.blueprint("spin", config=config, ajetd=ajetd))
    wait_for(
        lambda: "held back while the GPUs work" in (env.record(run_id).get("attention") or ""),
        what="the hang rule said held back",
    )
    attention = env.record(run_id)["attention"]
    assert "with its GPUs busy (possible collective deadlock" in attention, attention
    status = env.wait_done(run_id)
    assert status["status"] == "failed", status
    reason = status["reason"]
    assert reason.startswith("stopped by the hang rule: silent for "), reason
    assert "with its GPUs busy" in reason and "stopped at 3 times it" in reason, reason


def test_gpus_command_shows_who_holds_what(env: Env) -> None:
    file = _gpus(env, 2, temperature_c=55, power_w=300)
    _edit(
        file,
        lambda d: d["gpus"][1].update(
            memory_used_mib=5000, processes=[{"pid": 1, "memory_mib": 5000}]
        ),
    )
    _start(env)
    run_id = _run(env, "held", "1", file, forever=True)
    wait_for(lambda: env.record(run_id).get("gpu_stats"), what="the run on its GPU")
    table = env.cli("gpus").stdout
    assert "2 fake GPU(s)" in table and "55C" in table and "300W" in table
    assert f"run {run_id} (placed)" in table and "pid 1 (not ajetd's, 5000 MiB)" in table
    rows = json.loads(env.cli("gpus", "--json").stdout)["local"]
    assert [g["index"] for g in rows] == [0, 1]
    assert any(f"run {run_id}" in h and "30000 MiB" in h for h in rows[0]["held_by"])
    # the same, for a program: run ids as values, not words to parse out of `held_by`
    assert [g["run_ids"] for g in rows] == [[run_id], []]
    assert {p["run_id"] for p in rows[0]["processes"]} == {run_id}
    assert rows[1]["processes"] == [{"pid": 1, "memory_mib": 5000.0, "run_id": None}]
    env.cli("stop", run_id)


def test_a_bad_fake_gpu_file_stops_the_daemon_with_the_reason(env: Env) -> None:
    path = env.tmp / "gpus.json"
    path.write_text('{"gpus": [{"name": "no index"}]}')
    env.vars["AJETD_FAKE_GPUS"] = str(path)
    proc = env.start_daemon()
    assert proc.wait(timeout=20) == 1
    assert "needs an integer `index`" in env.daemon_log()
    assert "AJETD_FAKE_GPUS" in env.cli("gpus").stderr


def test_a_run_waiting_for_gpus_does_not_stop_the_running_runs_samples(env: Env) -> None:
    """Walk 82, H1: while a run waited for GPUs, each pass's placement sample put the running
    runs' timed sample off, so they got none: no GPU figures in status, a silent run with a
    busy GPU flagged hung, results.md saying no sample was taken. The placement's sample now
    serves the timer (no second one), counted from the last one folded into the runs."""
    file = _gpus(env, 1, utilization=97)
    _start(env)
    running = _run(env, "holds", "1", file, forever=True, step_time=0.1)
    wait_for(lambda: env.record(running).get("gpu_stats"), what="a first GPU sample")
    waiting = _run(env, "waits", "1", file)
    wait_for(
        lambda: "waiting for 1 GPU(s)" in env.record(waiting).get("reason", ""),
        what="the second run to wait for the GPU",
    )
    since = env.record(running)["gpu_stats"]["0"]["last_at"]
    wait_for(
        lambda: env.record(running)["gpu_stats"]["0"]["last_at"] > since + 2,
        what="2 s more of samples while the other run waits",
    )
    assert env.status(waiting)["state"] == "queued"
    assert env.status(running)["gpu"], env.status(running)


def _waiting_to_relaunch(env: Env, record: Any, until: Any = wait_for) -> None:
    """Until the run's relaunch waits for the foreign memory its trial left (`until`:
    `wait_for`, or a `Loop`'s that drives its passes)."""
    until(
        lambda: "GPU 0 has 58.6 GiB" in record().get("reason", ""),
        what="the relaunch to wait for the foreign memory",
    )
    assert record()["state"] == "restarting" and len(env.launches()) == 1


def test_a_run_waiting_to_relaunch_is_stopped_at_once(env: Env) -> None:
    """walk87 F9: `ajetd stop` of a run between trials (its relaunch waits for GPU memory
    held by another process to drain) ends it at once, `stopped`, no trial launched after;
    it was never taken while the memory stayed."""
    file = _gpus(env, 1)
    _start(env)
    hook = env.tmp / "hook.log"
    config = env.config(
        "vm", fake_gpu={"file": str(file), "memory_mib": 20000, "grabbed_once": str(env.tmp / "g")}
    )
    bp = env.blueprint(
        "vm", config=config, ajetd=f"gpus: 1\non_finish: 'echo $AJETD_STATUS > {hook}'"
    )
    run_id = env.submit(bp)
    _waiting_to_relaunch(env, lambda: env.record(run_id))
    stop = env.cli("stop", run_id, "--timeout", "20")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    status = env.wait_done(run_id)
    assert (status["status"], status["trials"]) == ("stopped", 1), status
    assert (
        "while it waited to relaunch (waiting for 1 GPU(s): GPU 0 has 58.6 GiB" in status["reason"]
    )
    assert not (env.home / "control" / f"{run_id}.stop").exists()
    wait_for(lambda: hook.exists() and hook.read_text() == "stopped\n", what="on_finish")
    _edit(file, lambda d: d["gpus"][0].update(memory_used_mib=0, processes=[]))
    flag = json.loads((env.tmp / "results" / "vm" / "finish.flag").read_text())
    assert flag["status"] == "stopped" and len(env.launches()) == 1


def test_a_time_limit_falling_while_a_run_waits_to_relaunch_ends_it(
    env: Env, monkeypatch: Any
) -> None:
    """walk87 F9: the time limit of a run between trials is enforced when it falls (the
    daemon wakes for it), and no trial is launched past it."""
    from ajetd.adapters.nvml import open_probe
    from loopkit import Loop

    file = _gpus(env, 1)
    monkeypatch.setenv("AJETD_FAKE_GPUS", str(file))
    loop = Loop(env, gpu_period_s=0.2, gpu_young_period_s=0.2)
    loop.daemon.gpus.probe = open_probe()  # as `serve` does
    try:
        config = env.config(
            "vt",
            fake_gpu={"file": str(file), "memory_mib": 20000, "grabbed_once": str(env.tmp / "g")},
        )
        run_id = loop.submit(env.blueprint("vt", config=config, max_time="2m", ajetd="gpus: 1"))
        loop.started(run_id)
        _waiting_to_relaunch(env, lambda: loop.run(run_id).to_json(), loop.until)
        deadline = loop.run(run_id).deadline
        assert deadline is not None
        loop.reach(deadline)
        assert loop.on_time(run_id, "run ended: time_limit", deadline), loop.events(run_id)
        _edit(file, lambda d: d["gpus"][0].update(memory_used_mib=0, processes=[]))
        loop.run_for(5)
        assert len(env.launches()) == 1 and len(loop.run(run_id).trials) == 1
        assert "while it waited to relaunch" in loop.run(run_id).reason
    finally:
        loop.close()


def test_a_placed_gpu_the_driver_no_longer_lists_is_lost(env: Env) -> None:
    """walk87 F13: the run's GPU is gone from NVML's list (fallen off the bus and the driver
    reloaded; a container's view cut): it showed its last sample as live for ever, no
    finding. Now it is lost: the finding gpu_lost, and the GPU column says LOST."""
    file = _gpus(env, 2)
    _start(env)
    run_id = _run(env, "gone", "[1]", file, forever=True, step_time=0.2)
    wait_for(lambda: env.record(run_id).get("gpu_stats"), what="a first GPU sample")
    _edit(file, lambda d: d.update(gpus=d["gpus"][:1]))
    wait_for(
        lambda: any(f["kind"] == "gpu_lost" for f in env.status(run_id)["diagnosis"]),
        what="the gpu_lost finding",
    )
    [finding] = [f for f in env.status(run_id)["diagnosis"] if f["kind"] == "gpu_lost"]
    assert "GPU 1 is no longer listed by the driver (it lists GPU(s) 0)" in finding["evidence"]
    wait_for(lambda: "1:LOST" in env.cli("status").stdout, what="the GPU column to say LOST")
    env.cli("stop", run_id)


def test_dropping_autokill_keeps_agentjets_machine_wide_gpu_check_off(env: Env) -> None:
    """Walk 89, F3: without `--autokill` AgentJet's launcher requires every GPU of the machine
    95 % free (check_avail_gpu; nvidia-smi ignores CUDA_VISIBLE_DEVICES), so ajetd removing
    the switch made a run fail at start beside any other run, as `unknown_traceback`. ajetd
    now puts the launcher's `--skip-check-avail-gpu` in its place (its placement gives the
    run GPUs of its own); a command that never had the switch still gets the check, which
    fails as `gpus_not_free`, saying what to do."""
    file = _gpus(env, 2)
    _start(env)
    first = _run(env, "first", "1", file, forever=True)
    wait_for(lambda: env.status(first)["gpu"], what="the first run on its GPU")
    launcher = "python -m ajet.launcher --conf configs/{}.yaml"
    runs = {}
    for name, tail in (("dropped", " --autokill"), ("never", "")):
        config = env.config(name, steps=2, fake_gpu={"file": str(file), "memory_mib": 1000})
        command = launcher.format(name) + tail
        bp = env.blueprint(name, config=config, command=command, ajetd="gpus: 1")
        runs[name] = env.submit(bp)
        done = env.wait_done(runs[name])
        if name == "dropped":
            assert done["status"] == "succeeded", done
            trials = (env.tmp / "results" / name / "trials.md").read_text()
            assert "--conf configs/dropped.yaml --skip-check-avail-gpu" in trials, trials
            assert any("--skip-check-avail-gpu added" in w for w in done["warnings"]), done
    never = env.status(runs["never"])
    assert never["status"] == "failed", never
    assert never["diagnosis"][0]["kind"] == "gpus_not_free", never["diagnosis"]
    assert "--skip-check-avail-gpu" in never["reason"], never["reason"]
    assert env.status(first)["state"] == "running"  # another program: given no such flag
    assert "--skip-check-avail-gpu" not in env.record(first)["trials"][0]["command"]
    env.cli("stop", first)
