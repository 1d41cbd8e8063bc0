"""Which file a launch command's config flag names, beside the run's config: the one answer
preflight, yaml_overrides and the fixed copies share (`hosts.fs.config_named`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ajetd.hosts.configcopy import repoint
from ajetd.hosts.fs import LOCAL, Names, config_named


@pytest.fixture
def code(tmp_path: Path) -> Path:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "run.yaml").write_text("ajet: {}\n")
    (tmp_path / "configs" / "other.yaml").write_text("ajet: {}\n")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "configs" / "run.yaml")
    return tmp_path


@pytest.mark.parametrize(
    ("command", "names"),
    [
        ("python -m ajet.launcher", Names.NOTHING),
        ("python -m ajet.launcher --conf configs/run.yaml", Names.SAME),
        ("python -m ajet.launcher --conf=./configs/../configs/run.yaml", Names.SAME),
        ("python -m ajet.launcher --conf ./link.yaml", Names.SAME),  # the same file
        ("python -m ajet.launcher --conf configs/other.yaml", Names.OTHER),
        ("python -m ajet.launcher --conf configs/missing.yaml", Names.OTHER),
        ("python -m ajet.launcher --conf $CONF", Names.UNKNOWN),
        # from where a leading literal cd takes the program (walk93 F2)
        ("cd sub && python -m ajet.launcher --conf configs/run.yaml", Names.OTHER),
        ("pushd sub; python -m ajet.launcher --conf configs/run.yaml", Names.OTHER),
        ("cd configs && python -m ajet.launcher --conf run.yaml", Names.SAME),
        ("(cd configs; python -m ajet.launcher --conf ../link.yaml)", Names.SAME),
        ("cd configs || exit 1; python -m ajet.launcher --conf other.yaml", Names.OTHER),
        ("cd $SUB && python -m ajet.launcher --conf configs/run.yaml", Names.UNKNOWN),
        ('cd "$SUB" && python -m ajet.launcher --conf configs/run.yaml', Names.UNKNOWN),
        ("pip install . && cd x && python -m ajet.launcher --conf run.yaml", Names.UNKNOWN),
        ("bash -c 'cd configs && python -m ajet.launcher' --conf run.yaml", Names.UNKNOWN),
    ],
)
def test_what_the_flag_names(code: Path, command: str, names: Names) -> None:
    from ajetd.frameworks.agentjet import conf_argument

    found = config_named(
        conf_argument(command), command, str(code), str(code / "configs/run.yaml"), LOCAL
    )
    assert found.names is names
    assert (found.path is None) == (names in (Names.NOTHING, Names.UNKNOWN))


def test_a_cd_moves_a_relative_flag_only(code: Path) -> None:
    config = str(code / "configs/run.yaml")
    for conf, names in ((config, Names.SAME), (str(code / "configs/other.yaml"), Names.OTHER)):
        command = f"cd {code} && python -m ajet.launcher --conf {conf}"
        assert config_named(conf, command, str(code), config, LOCAL).names is names


def test_a_copy_is_pointed_at_only_where_the_flag_is_the_config(code: Path) -> None:
    config, copy = str(code / "configs/run.yaml"), str(code / "configs/run.ajetd-x.yaml")
    same = "python -m ajet.launcher --conf ./configs/run.yaml --autokill"
    moved = repoint(same, str(code), config, copy, LOCAL, {})
    assert moved == "python -m ajet.launcher --conf ./configs/run.ajetd-x.yaml --autokill"
    for command, names in (
        ("python -m ajet.launcher --conf configs/other.yaml", Names.OTHER),
        ("python -m ajet.launcher --conf $C", Names.UNKNOWN),
        ("python -m ajet.launcher", Names.NOTHING),
    ):
        assert repoint(command, str(code), config, copy, LOCAL, {}) is names
