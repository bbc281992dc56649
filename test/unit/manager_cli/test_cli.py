"""The manager binary's flags: defaults match the kubebuilder scaffold, bad flags exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from llmscaler_manager.__main__ import _lease_namespace
from llmscaler_manager.cli import DEFAULT_LEADER_ELECTION_ID, parse_args
from llmscaler_runtime.kube import config as kube_config


def test_defaults_follow_the_kubebuilder_scaffold() -> None:
    opts = parse_args([])
    assert opts.metrics_bind_address == ":8080"
    assert opts.health_probe_bind_address == ":8081"
    assert opts.leader_elect is False
    assert opts.leader_election_id == DEFAULT_LEADER_ELECTION_ID
    assert opts.watch_namespace is None
    assert opts.log_format == "json"
    assert opts.log_level == "info"
    assert opts.max_concurrent_reconciles >= 1


def test_advisory_is_off_unless_asked_for() -> None:
    assert parse_args([]).advisory is False
    assert parse_args(["--advisory"]).advisory is True


def test_metrics_can_be_disabled_with_zero() -> None:
    assert parse_args(["--metrics-bind-address", "0"]).metrics_bind_address == "0"


@pytest.mark.parametrize(
    "argv",
    [
        ["--metrics-bind-address", "8080"],
        ["--health-probe-bind-address", ":99999"],
        ["--max-concurrent-reconciles", "0"],
        ["--log-format", "xml"],
        ["--kubeconfig", "/nonexistent/kubeconfig"],
        ["--no-such-flag"],
    ],
)
def test_bad_flags_exit_2_with_a_message(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "llmscaler-manager: error:" in err


def test_binary_rejects_bad_flag_with_exit_2() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "llmscaler_manager", "--log-format", "xml"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "--log-format" in proc.stderr


def test_lease_namespace_flag_then_own_namespace_then_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sa_file = tmp_path / "namespace"
    monkeypatch.setattr(kube_config, "SERVICE_NAMESPACE_FILENAME", str(sa_file))
    assert _lease_namespace(parse_args([])) == "default"  # outside a cluster
    sa_file.write_text("llm-system\n")
    assert _lease_namespace(parse_args([])) == "llm-system"
    flag = parse_args(["--leader-election-namespace", "leases"])
    assert _lease_namespace(flag) == "leases"
