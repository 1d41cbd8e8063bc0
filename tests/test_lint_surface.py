"""What `ajetd lint` and a run's warnings tell about mistakes a user really made (a blind walk
through the README): a misspelt key gets the closest known one, and a warning is shown once
however often the run met it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ajetd.adapters.store import Home
from ajetd.daemon import ending
from conftest import Env, Sshd, wait_for


def _lint(env: Env, ajetd: str, **kw: str) -> tuple[int, dict[str, object], str]:
    path = env.blueprint("lint", ajetd=ajetd, **kw)
    out = env.cli("lint", str(path), "--json")
    text = env.cli("lint", str(path))
    return out.returncode, json.loads(out.stdout), text.stdout + text.stderr


@pytest.mark.parametrize(
    ("ajetd", "needle"),
    [
        ("max_trial: 3", "unknown key 'max_trial'; did you mean 'max_trials'?"),
        ("plateu: true", "unknown key 'plateu'; did you mean 'plateau'?"),
        (
            "plateau: {metric: mean_reward, patince: 2}",
            "plateau: unknown key 'patince'; did you mean 'patience'?",
        ),
        ("hang: {windw: 10m}", "hang: unknown key 'windw'; did you mean 'window'?"),
        ("ssh: {hots: h}", "ssh: unknown key 'hots'; did you mean 'host'?"),
        ("allow_fixes: {lr: {mn: 1e-7}}", "allow_fixes.lr: unknown key 'mn'; did you mean 'min'?"),
        ("allow_fixes: {lrr: {min: 1e-7}}", "'lrr' is not a key ajetd can fix; did you mean 'lr'?"),
        # a difference of case only is the closest of all (walk 90, F9)
        ("GPUs: 0", "unknown key 'GPUs'; did you mean 'gpus'?"),
        ("MAX_TRIALS: 2", "unknown key 'MAX_TRIALS'; did you mean 'max_trials'?"),
        ("hang: {Window: 10m}", "hang: unknown key 'Window'; did you mean 'window'?"),
        ("allow_fixes: {LR: {min: 1e-7}}", "'LR' is not a key ajetd can fix; did you mean 'lr'?"),
    ],
)
def test_an_unknown_key_names_the_closest_known_one(env: Env, ajetd: str, needle: str) -> None:
    code, data, text = _lint(env, ajetd)
    assert code == 2 and any(needle in p for p in data["problems"]), data  # type: ignore[attr-defined]
    assert needle in text


def test_an_unknown_key_like_no_known_one_gets_no_guess(env: Env) -> None:
    code, data, _ = _lint(env, "colour: red")
    [problem] = data["problems"]  # type: ignore[misc]
    assert code == 2 and "unknown key 'colour' (known: gpus," in problem
    assert "did you mean" not in problem


def test_a_warning_met_at_every_relaunch_is_shown_once(daemon_env: Env) -> None:
    """`--autokill` is removed at each of the three trials: one warning, in status --json and
    in results.md; a record stored by an older ajetd with it three times shows it once too."""
    env = daemon_env
    config = env.config("thrice", steps=1, hang=True)
    rule = "hang: {window: 1s, action: relaunch}\nmax_trials: 3"
    run_id = env.submit(env.blueprint("thrice", config=config, ajetd=rule))
    status = env.wait_done(run_id, timeout=60)
    assert status["trials"] == 3, status
    removed = "--autokill removed (autokill: protect)"
    assert status["warnings"].count(removed) == 1, status["warnings"]
    results = env.tmp / "results" / "thrice" / "results.md"
    assert results.read_text().count(removed) == 1
    state = env.home / "runs" / run_id / "state.json"
    record = json.loads(state.read_text())
    record["warnings"] = [removed, "a", removed, "a", removed]  # as an older ajetd stored it
    state.write_text(json.dumps(record))
    assert env.status(run_id)["warnings"] == [removed, "a"]
    home = Home(env.home)
    run = home.load_run(run_id)
    scratch = env.tmp / "again"
    scratch.mkdir()
    ending.write_reports(
        home, replace(run, result_dir=str(scratch), result_real=str(scratch.resolve())), ([], "")
    )
    assert (scratch / "results.md").read_text().count(removed) == 1


def _run(conf: str) -> str:
    return f"python -m fakejet.launcher --conf {conf}"


def _walk27(env: Env, ajetd: str = "") -> tuple[object, str]:
    """The walk's blueprint: its --conf repeats the codebase's own folder name, so the path it
    names from exp_codebase_dir does not exist (exp_yaml_path is right)."""
    config = env.config("ok")
    conf = f"{env.codebase.name}/{config}"
    command = f"python -m fakejet.launcher --conf {conf}"
    return env.blueprint("walk", config=config, command=command, ajetd=ajetd), conf


def test_a_conf_that_does_not_exist_where_the_command_runs_is_a_problem(env: Env) -> None:
    bp, conf = _walk27(env)
    out = env.cli("lint", str(bp), "--json")
    data = json.loads(out.stdout)
    wanted = (
        f"exp_launch_command: --conf {conf} names {env.codebase / conf}, which does not exist "
        f"(the command runs in exp_codebase_dir {env.codebase}; exp_yaml_path is configs/ok.yaml)"
    )
    assert out.returncode == 2 and not data["ok"], data
    assert any(p.startswith(wanted) for p in data["problems"]), data["problems"]
    # from where a leading literal `cd` takes the command, the same words name the config
    # (walk93 F2); where ajetd cannot tell which file it is (a `cd` to a variable, a shell
    # variable in the flag), it says nothing
    bp = env.blueprint("moved", config="configs/ok.yaml", command=f"cd .. && {_run(conf)}")
    data = json.loads(env.cli("lint", str(bp), "--json").stdout)
    assert data["ok"], data["problems"]
    bp = env.blueprint("moved2", config="configs/ok.yaml", command=f"cd configs && {_run(conf)}")
    data = json.loads(env.cli("lint", str(bp), "--json").stdout)
    wanted = (
        f"exp_launch_command: --conf {conf} names {env.codebase / 'configs' / conf}, which does "
        f"not exist (the command runs in {env.codebase / 'configs'} (`cd configs` from "
        f"exp_codebase_dir {env.codebase}); exp_yaml_path is configs/ok.yaml)"
    )
    assert any(p.startswith(wanted) for p in data["problems"]), data["problems"]
    for command in (
        f"cd $UP && python -m fakejet.launcher --conf {conf}",
        "python -m fakejet.launcher --conf $CONF",
    ):
        bp = env.blueprint("blind", config="configs/ok.yaml", command=command)
        out = env.cli("lint", str(bp), "--json")
        assert "does not exist" not in out.stdout, out.stdout


def test_a_conf_that_does_not_exist_is_rejected_at_admission(daemon_env: Env) -> None:
    env = daemon_env
    bp, conf = _walk27(env)
    status = env.wait_done(env.submit(bp))
    assert status["status"] == "rejected", status
    assert f"--conf {conf} names {env.codebase / conf}, which does not exist" in status["reason"]
    assert env.launches() == []


def test_a_conf_that_does_not_exist_on_the_ssh_host_is_a_problem(env: Env, sshd: Sshd) -> None:
    bp, conf = _walk27(env, sshd.ajetd_part())
    out = env.cli("lint", str(bp))
    assert out.returncode == 2
    assert (
        f"--conf {conf} names {env.codebase / conf}, which does not exist on {sshd.user}@127.0.0.1"
        in out.stderr
    ), out.stderr


def _warnings(data: dict[str, object]) -> list[str]:
    blueprint = data["blueprint"]
    assert isinstance(blueprint, dict)
    return list(blueprint["warnings"])


def test_a_bare_number_for_a_duration_is_warned_and_the_rules_are_shown(env: Env) -> None:
    """`hang: {window: 30}` on a 10 min run is 30 hours and can never fire; `keep_session:
    600` is 25 days: said, with the value as read and how to write seconds or minutes; and
    lint shows hang, plateau and allow_fixes as read."""
    ajetd = (
        "hang: {window: 30}\nkeep_session: '600'\n"
        "plateau: {metric: mean_reward, after: 1.0}\nallow_fixes: {lr: {min: 1e-7}}"
    )
    code, data, text = _lint(env, ajetd, max_time="10m")
    assert code == 0 and data["ok"], data
    warned = _warnings(data)
    for needle in (
        "keep_session: 600 is a bare number, read as 600 hours (25 days); for seconds or "
        "minutes write `600s` or `600m`",
        "hang.window: 30 is a bare number, read as 30 hours; for seconds or minutes write "
        "`30s` or `30m`",
        "hang.window: 30h is not shorter than exp_max_time (10m): the hang rule can never fire",
        "plateau.after: 1 of exp_max_time leaves no time for the rule to act",
    ):
        assert any(w.startswith(needle) for w in warned), (needle, warned)
        assert needle in text
    options = data["blueprint"]["options"]  # type: ignore[index]
    assert options["hang"] == {"window_s": 108000.0, "action": "attention"}
    assert options["plateau"] == {
        "metric": "mean_reward",
        "patience": 3,
        "min_delta": 0.005,
        "after": 1.0,
        "mode": "auto",
        "metric_named": True,
    }
    assert options["allow_fixes"] == {"lr": {"min": 1e-7, "max": None}}
    assert "  hang: window 30h, action attention\n" in text
    assert "  plateau: metric mean_reward, patience 3, min_delta 0.005, after 1 (10m)" in text
    assert "  allow_fixes: lr min 1e-07, no max\n" in text
    # with units (or zero, the same in any unit), and within the time: nothing said
    ajetd = "hang: {window: 30s, action: stop}\nkeep_session: 0\nplateau: {after: 0.5}"
    code, data, text = _lint(env, ajetd, max_time="10m")
    assert code == 0 and _warnings(data) == [], data
    assert data["blueprint"]["options"]["hang"] == {"window_s": 30.0, "action": "stop"}  # type: ignore[index]
    assert "  hang: window 30s, action stop\n" in text and "after 0.5 (5m)" in text
    assert "  plateau: metric mean_reward (the run's own), patience 3," in text
    # a NeMo-RL run's: its own metric, not the default's name (walk 28, M4)
    command = "uv run examples/run_grpo.py --config {c}"
    config = env.config("lint")
    code, data, text = _lint(env, ajetd, config=config, command=command.format(c=config))
    assert code == 0 and "  plateau: metric accuracy (the run's own), patience 3," in text, text
    assert data["blueprint"]["options"]["plateau"]["metric"] == "accuracy"  # type: ignore[index]


@pytest.mark.parametrize(
    ("command", "metric", "needle"),
    [
        (
            None,
            "mean_rewad",
            "'mean_rewad' is not a validation key AgentJet is known to write; "
            "did you mean 'mean_reward'",
        ),
        (None, "task_pass_rate@16", None),  # any pass@N
        (None, "val-core/gsm8k/reward/mean@4", None),  # verl's families
        (
            "uv run examples/run_grpo.py --config {c}",
            "accuracyy",
            "'accuracyy' is not a validation key NeMo-RL is known to write; did you mean 'accuracy'",
        ),
        (
            "uv run examples/run_grpo.py --config {c}",
            "val:accuracy",
            "its records name NeMo-RL's val:accuracy 'accuracy': write that",
        ),
        ("uv run examples/run_grpo.py --config {c}", "accuracy", None),
        (  # the default's name, named: judged as named, so warned (walk 28, M4)
            "uv run examples/run_grpo.py --config {c}",
            "mean_reward",
            "'mean_reward' is not a validation key NeMo-RL is known to write; without "
            "`metric:` the rule judges the run's own, 'accuracy' (known: accuracy, val_loss, "
            "validation_default_loss)",
        ),
        (None, "mean_reward", None),
    ],
)
def test_a_plateau_metric_the_framework_does_not_write_is_warned(
    env: Env, command: str | None, metric: str, needle: str | None
) -> None:
    config = env.config("lint")
    kw = {"command": command.format(c=config)} if command else {}
    code, data, text = _lint(env, f"plateau: {{metric: '{metric}'}}", config=config, **kw)
    assert code == 0, data
    said = [w for w in _warnings(data) if w.startswith("plateau.metric: ")]
    if needle is None:
        assert said == [], said
    else:
        assert len(said) == 1 and needle in said[0], said
        assert needle in text


def test_a_plateau_metric_no_record_holds_is_a_run_warning(daemon_env: Env) -> None:
    """Once the run has validation records and none holds the rule's metric, status, status
    --json and results.md say so, naming the keys they hold; the admission's warnings (a bare
    number) are there too."""
    env = daemon_env
    config = env.config("typo", forever=True, flat=True, step_time=0.05)
    rule = "plateau: {metric: mean_rewad, patience: 2}\nkeep_session: 2"
    run_id = env.submit(env.blueprint("typo", config=config, max_time="1m", ajetd=rule))
    wanted = "plateau.metric 'mean_rewad': none of the run's "

    def warned() -> list[str]:
        return [w for w in env.record(run_id).get("warnings", []) if w.startswith(wanted)]

    [note] = wait_for(warned, timeout=30, what="the plateau metric's warning")
    assert "did you mean 'mean_reward'" in note
    assert "mean_reward, std_reward" in note.split("(the records hold: ")[1]
    assert "keep_session: 2 is a bare number, read as 2 hours" in " ".join(
        env.status(run_id)["warnings"]
    )
    assert wanted in env.cli("status", run_id).stdout
    env.cli("stop", run_id)
    status = env.wait_done(run_id)
    assert [w for w in status["warnings"] if w.startswith(wanted)] == [note]
    assert note in (env.tmp / "results" / "typo" / "results.md").read_text()


def test_a_plateau_metric_no_final_record_holds_is_warned_in_the_reports(daemon_env: Env) -> None:
    """A run that ends before its val file is read on the way: the final read's records are
    judged too, so results.md says the rule could not act."""
    env = daemon_env
    config = env.config("short", steps=2, step_time=0.01)
    rule = "plateau: {metric: mean_rewad}"
    status = env.wait_done(env.submit(env.blueprint("short", config=config, ajetd=rule)))
    assert status["status"] == "succeeded", status
    [note] = [w for w in status["warnings"] if w.startswith("plateau.metric 'mean_rewad'")]
    assert note in (env.tmp / "results" / "short" / "results.md").read_text()


@pytest.mark.parametrize(
    ("ajetd", "key", "number"),
    [
        ("gpus: 0", "exp_max_time", "90"),
        ("gpus: 0\nkeep_session: 2", "keep_session", "2"),
        ("gpus: 0\nhang: {window: 1}", "hang.window", "1"),
        ("gpus: 0\nswarm: {server_command: x, health_timeout: 3}", "swarm.health_timeout", "3"),
        ("gpus: 0\nswarm: {server_command: x, keep: 4}", "swarm.keep", "4"),
    ],
)
def test_every_duration_given_as_a_bare_number_is_warned(
    env: Env, ajetd: str, key: str, number: str
) -> None:
    """Walk 30, 4: `exp_max_time: 90` was read as 90 hours without a word, though a bare
    number is warned for the options' durations: each duration field says it."""
    code, data, text = _lint(env, ajetd, max_time="90" if key == "exp_max_time" else "2m")
    assert code == 0 and data["ok"], data
    needle = f"{key}: {number} is a bare number, read as {number} hours"
    assert any(w.startswith(needle) for w in _warnings(data)), (needle, _warnings(data))
    assert needle in text


@pytest.mark.parametrize(
    ("ajetd", "max_time", "key"),
    [
        ("gpus: 0", "0.001s", "exp_max_time"),
        ("gpus: 0\nhang: {window: 0.4s}", "2m", "hang.window"),
        ("gpus: 0\nswarm: {server_command: x, health_timeout: 0.2s}", "2m", "swarm.health_timeout"),
    ],
)
def test_a_duration_less_than_a_second_is_refused_where_zero_means_nothing(
    env: Env, ajetd: str, max_time: str, key: str
) -> None:
    """Walk 30, 4: `exp_max_time: 0.001s` was accepted and shown as `0s`."""
    path = env.blueprint("lint", ajetd=ajetd, max_time=max_time)
    out = env.cli("lint", str(path))
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "is less than a second" in out.stderr, out.stderr
    assert key in out.stderr, out.stderr


def test_a_launch_command_that_backgrounds_its_program_is_refused(env: Env) -> None:
    """Walk 30, 3: `nohup python train.py ... > bg.log 2>&1 &` linted ok; the run 'succeeded'
    at once and its trainer was ended with the leftovers. Warned since; refused since walk 86
    (the outcome is certain: the training is ended as the trial ends)."""
    conf = env.config("bg")
    command = f"nohup python -m fakejet.launcher --conf {conf} > bg.log 2>&1 &"
    out = env.cli("lint", str(env.blueprint("bg", command=command)), "--json")
    assert out.returncode == 2, (out.stdout, out.stderr)
    said = " ".join(json.loads(out.stdout)["problems"])
    assert "puts its program in the background (`&`) and returns at once" in said, said
    for fine in (f"python -m fakejet.launcher --conf {conf} && echo done", "true & wait"):
        data = json.loads(env.cli("lint", str(env.blueprint("bg", command=fine)), "--json").stdout)
        assert "in the background" not in " ".join(data["problems"]), fine


def test_leftovers_a_backgrounding_run_left_are_said_when_ended(daemon_env: Env) -> None:
    """Walk 30, 3: the run ended at once and the program it put in the background was ended
    with its leftovers, and nothing said so. A command whose `&` lint cannot see (inside
    `bash -c`): the run fails saying what it left running (walk 86: it 'succeeded'), and its
    journal says how many leftover processes were ended, and which command lines."""
    env = daemon_env
    # the shell's own end hangs up its pane: nohup has its 0.3 s to ignore that, as a
    # program slower to start (python) has
    command = "bash -c 'nohup sleep 4321 > /dev/null 2>&1 &'; sleep 0.3"
    run_id = env.submit(env.blueprint("bgrun", command=command, ajetd="gpus: 0"))
    status = env.wait_done(run_id)
    assert status["status"] == "failed", status
    assert "the command exited 0 after" in status["reason"], status["reason"]
    assert "but left `sleep 4321`" in status["reason"], status["reason"]
    flag = json.loads((env.tmp / "results" / "bgrun" / "finish.flag").read_text())
    assert flag["status"] == "failed" and "put its program in the background" in flag["reason"]
    journal = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert "ended 1 leftover process(es) its trial left running: sleep 4321" in journal, journal


def test_allow_fixes_bounds_are_judged_against_the_key_and_the_config(env: Env) -> None:
    """walk91 F1: `min: 0` on a micro batch size linted ok and a fix wrote 0; a min above the
    config's value linted ok and could never act. The first is a problem naming the key and
    the bound; the second a warning naming the config's value."""
    code, data, text = _lint(env, "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 0}}")
    assert code == 2 and not data["ok"], data
    said = (
        "allow_fixes.ppo_micro_batch_size_per_gpu.min: 0 is not a valid "
        "ppo_micro_batch_size_per_gpu (a whole number of at least 1)"
    )
    assert any(said in p for p in data["problems"]), data  # type: ignore[union-attr]
    assert said in text
    conf = env.codebase / "configs" / "mb.yaml"
    env.config("mb")
    conf.write_text(
        conf.read_text() + "actor_rollout_ref:\n  actor:\n    ppo_micro_batch_size_per_gpu: 8\n"
    )
    ajetd = "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 16}}"
    code, data, text = _lint(env, ajetd, config="configs/mb.yaml")
    assert code == 0 and data["ok"], data
    warned = (
        "allow_fixes.ppo_micro_batch_size_per_gpu.min 16 is not below the config's "
        "ppo_micro_batch_size_per_gpu (8), so no fix can lower it"
    )
    assert any(w.startswith(warned) for w in _warnings(data)), data
    assert warned in text
    ajetd = "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 2}}"
    code, data, _ = _lint(env, ajetd, config="configs/mb.yaml")
    assert code == 0 and not [w for w in _warnings(data) if "allow_fixes" in w], data


def test_the_text_summary_shows_every_rule_and_gpus_as_used(env: Env) -> None:
    """README: hang, plateau and allow_fixes are "also shown in the text summary": plateau
    and allow_fixes were left out where not given (walk 90, F11). `gpus: 0` was shown as the
    text '0' beside 'all' (F12): it is the count of GPUs used, as YAML gives it."""
    code, data, text = _lint(env, "gpus: 0")
    assert code == 0, data
    assert "  plateau: none (no stop on a flat metric)\n" in text
    assert "  allow_fixes: none (no science fix changes a hyperparameter)" in text
    assert "'gpus': 0," in text
    assert data["blueprint"]["options"]["gpus"] == 0  # type: ignore[index]
    code, data, text = _lint(env, "max_trials: 2")
    assert code == 0 and "'gpus': 'all'," in text, text
    # a list, as the status object lists a run's GPUs (no such GPU here: a problem, but the
    # JSON still shows what was read)
    code, data, text = _lint(env, "gpus: [1, 0]")
    assert data["blueprint"]["options"]["gpus"] == [1, 0]  # type: ignore[index]


def test_the_hooks_are_shown_read_in_the_text_and_the_json(env: Env) -> None:
    """walk92 F9: `lint` did not show `on_finish`, so an agent could not check that its hook
    was read. Both hooks are shown as read, `none` / null where not given."""
    hook = 'notify-send "ajetd $AJETD_RUN_ID $AJETD_STATUS"'
    code, data, text = _lint(env, f"gpus: 0\non_finish: '{hook}'")
    assert code == 0, data
    options = data["blueprint"]["options"]  # type: ignore[index]
    assert options["on_finish"] == hook and options["on_attention"] is None, options
    assert f"  on_finish: {hook}\n" in text and "  on_attention: none" in text, text


def test_every_option_read_is_in_lints_options() -> None:
    """Every `[ajetd]` option the parser reads has its place in lint's `options` (the class
    of on_finish's omission): each field of `Options` given a value (but `notes`, the
    warnings) is shown under its key, or under the rule key `_rules` gives it."""
    import dataclasses

    from ajetd.core.hostspecs import SlurmSpec, SshSpec, SwarmSpec
    from ajetd.core.options import Options, Stage
    from ajetd.core.userkinds import UserKind
    from ajetd.views.records import lint_options

    given = Options(
        gpus="2",
        env={"A": "1"},
        on_finish="echo done",
        on_attention="echo look",
        swarm=SwarmSpec(),
        ssh=SshSpec("gpu-box"),
        pull=("ckpt",),
        stages=(Stage("a"),),
        slurm=SlurmSpec(partition="gpu"),
        kinds=(UserKind("mine", "fatal", "why", "fix", ("boom",)),),
        yaml_overrides=("a.b=1",),
    )
    rules = {"hang": {}, "plateau": None, "allow_fixes": {}}  # `_rules`'s keys, as read
    shown = lint_options(given, rules)
    under = {"hang_window_s": "hang", "hang_action": "hang", "keep_session_s": "keep_session_s"}
    missing = [
        f.name
        for f in dataclasses.fields(Options)
        if f.name != "notes" and under.get(f.name, f.name) not in shown
    ]
    assert not missing, missing
    assert json.loads(json.dumps(shown)) == json.loads(json.dumps(shown, default=str))
