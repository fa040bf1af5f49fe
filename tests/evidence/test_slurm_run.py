"""A whole `harness run` with the runbook's `launcher: slurm`, on the real single-node cluster
(tests/support/slurm_cluster.py): each served step names its job on the console the moment it
is submitted, and the step's report names the job, its node list and its accounting (state,
exit code, queue wait, run time, and where that came from: scontrol here, as the test cluster
keeps no accounting database), read from the job itself."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))  # the workflow tests' project
from workflow_support import Project, loopback_runbook  # noqa: E402

from harness.evidence.server import ServerRecord  # noqa: E402
from harness.util import slurm  # noqa: E402


def test_each_served_step_names_its_job_on_the_console_and_in_its_report(cluster, tmp_path, monkeypatch):
    project = Project(tmp_path)
    monkeypatch.setenv("HARNESS_CACHE_DIR", project.env["HARNESS_CACHE_DIR"])
    path = loopback_runbook(project.root / "slurm.yaml")
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "launcher": "slurm"}, sort_keys=False))

    done = project.cli(*project.run_args("--run-id", "sl", "--auto-approve", runbook=path))
    console = done.stdout + done.stderr
    submitted = re.findall(r"slurm job (\d+) submitted \(--job-name=harness-server ", console)
    assert len(submitted) >= 2, console  # interface and operators serve the model

    reports = project.reports("sl")
    record = ServerRecord.read(reports / "evidence/02-interface/server/server.json")
    assert record.job_id == submitted[0] and record.nodes == cluster.node
    accounting = slurm.accounting(record.job_id)
    assert record.slurm == accounting and accounting.state == "COMPLETED", accounting  # a clean stop
    [engine] = [line for line in (reports / "02-interface.md").read_text().splitlines()
                if line.startswith("| engine |")]
    assert (f"measured: slurm job {record.job_id} on {cluster.node} (COMPLETED, exit 0:0; "
            f"pending {accounting.pending_s:g} s, ran {accounting.run_s:g} s (scontrol)), pid "
            f"{record.identity.pid} on {cluster.node} port {record.port}, serving loopback-model") in engine, engine
