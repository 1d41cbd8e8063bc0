"""The names ajetd itself writes into a run's result dir: the one list that the writers
(`ending.write_reports`, admission's provenance, the pictures, each trial's log) take their
names from, and that admission and `ajetd lint` check a new run's result dir against, so that
nothing found there is ever overwritten or appended to (README: "nothing is ever overwritten").
"""

from __future__ import annotations

import re

RESULTS = "results.md"
TRIALS = "trials.md"
RUN_RECORD = "run.json"
CONFIG_USED = "config-used.yaml"
FINISH_FLAG = "finish.flag"
# what `ending.write_reports` writes, finish.flag last; a rejection's report is these too
REPORTS = (RESULTS, TRIALS, RUN_RECORD, CONFIG_USED, FINISH_FLAG)
# an ended run's attention while its result dir refuses its reports: this, the folder, why
# (`ending.publish_reports`); `views.records.reports_left_line` reads it back
REPORTS_HELD = "results.md, trials.md and finish.flag not written: cannot write to"
HELD_TAIL = "; written as soon as it can be"
PROVENANCE_DIFF = "provenance.diff"  # admission: the codebase's uncommitted changes
PICTURES = ("curves.png", "gpus.png")  # `pictures.runcurves`
LOGS = "logs"  # each trial's output, `logs/trial-N.log` (tmux pipe-pane appends to it)
VAL_FILE = "val_results.md"  # the val file ajetd gives a run where it chooses one
VAL_COPY = "val_records.md"  # a run's part of a val file elsewhere, copied at its end
NEMO_RL = "nemo_rl"  # a NeMo-RL run's log and checkpoint dirs, where ajetd points them
# every file ajetd writes at the top of a new run's result dir, whatever the run
STAGES = "stages"  # a pipeline's stage outputs copied at its end (`core.stageresult`)
WRITTEN = (*REPORTS, VAL_COPY, PROVENANCE_DIFF, *PICTURES, STAGES)
# what a campaign writes at the top of its own result_dir (`daemon.campaigns`); each
# experiment gets a new run's result dir below it, `NN-<name>`, checked as any run's
LEDGER = "ledger.tsv"
CAMPAIGN_REPORT = "campaign.md"
PROGRESS = "progress.png"
CAMPAIGN_WRITTEN = (LEDGER, CAMPAIGN_REPORT, PROGRESS)
_TRIAL_LOG = re.compile(r"trial-[0-9]+\.log\Z")


def trial_log(number: int) -> str:
    """The name of trial `number`'s log in `logs/`."""
    return f"trial-{number}.log"


def is_trial_log(name: str) -> bool:
    """Whether `name` (in `logs/`) is a name `trial_log` gives: another run's output there
    would be appended to, and read by `ajetd logs`, as this run's."""
    return bool(_TRIAL_LOG.match(name))
