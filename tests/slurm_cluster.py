"""A private single-node SLURM cluster on localhost, for tests.

``local_slurm_cluster()`` starts munged, slurmctld and slurmd from the Debian packages
(.ci/install-slurm.sh) under a temporary directory, with their own munge key copy and socket, their
own ports and a generated ``slurm.conf``; nothing is written to /etc.  It waits until the node is
``idle``, yields a ``SlurmCluster`` whose ``env`` lets client tools (sbatch, squeue, Snakemake's SLURM
executor) reach it, and always stops every daemon by PID afterwards (also when the body raises, and at
interpreter exit as a last resort).

Why an ``srun`` wrapper: the client tools find the configuration only through ``SLURM_CONF`` (or
/etc/slurm/slurm.conf), and the Snakemake job step strips every ``SLURM_*`` variable before its inner
``srun``; the wrapper, first on PATH, puts ``SLURM_CONF`` back.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: Binaries the cluster needs (Debian packages slurmctld, slurmd, slurm-client, munge).
REQUIRED_BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scancel", "scontrol", "srun")
#: The packaged munge key, copied (root- or user-owned, mode 0400) for the private munged.
PACKAGED_MUNGE_KEY = Path("/etc/munge/munge.key")
#: Environment variable set in the daemons' and clients' environments; it marks leftover processes.
MARKER_VARIABLE = "BIASTRANSFER_TEST_SLURM_ROOT"
PARTITION = "debug"


def missing_binaries() -> list[str]:
    """Names of the binaries in ``REQUIRED_BINARIES`` that are not on PATH."""
    return [name for name in REQUIRED_BINARIES if shutil.which(name) is None]


@dataclass(frozen=True)
class SlurmJob:
    """One job as ``scontrol show job`` reports it (kept for MinJobAge after it ends)."""

    job_id: int
    name: str
    comment: str
    state: str
    exit_code: str
    num_cpus: int
    min_memory: str
    time_limit: str
    work_dir: str
    tres_per_job: str
    cpus_per_tres: str
    submit_time: str
    start_time: str
    end_time: str


@dataclass(frozen=True)
class SlurmCluster:
    """A running local cluster: its directory, configuration, node, partition and client environment."""

    root: Path
    conf: Path
    node: str
    partition: str
    env: dict[str, str]

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a SLURM client command (``sinfo``, ``squeue``, ...) against this cluster."""
        return subprocess.run(list(args), env=self.env, capture_output=True, text=True, check=check, timeout=60)

    def jobs(self) -> list[SlurmJob]:
        """Every job the controller still remembers, in submission order."""
        out = self.run("scontrol", "--oneliner", "show", "job").stdout
        records = []
        for line in out.splitlines():
            if not line.startswith("JobId="):
                continue
            fields = _parse_scontrol_line(line)
            records.append(
                SlurmJob(
                    job_id=int(fields["JobId"]),
                    name=fields.get("JobName", ""),
                    comment=fields.get("Comment", ""),
                    state=fields.get("JobState", ""),
                    exit_code=fields.get("ExitCode", ""),
                    num_cpus=int(fields.get("NumCPUs", "0")),
                    min_memory=fields.get("MinMemoryNode", fields.get("MinMemoryCPU", "")),
                    time_limit=fields.get("TimeLimit", ""),
                    work_dir=fields.get("WorkDir", ""),
                    tres_per_job=fields.get("TresPerJob", ""),
                    cpus_per_tres=fields.get("CpusPerTres", ""),
                    submit_time=fields.get("SubmitTime", ""),
                    start_time=fields.get("StartTime", ""),
                    end_time=fields.get("EndTime", ""),
                )
            )
        return sorted(records, key=lambda job: job.job_id)

    def daemon_pids(self) -> dict[str, int]:
        """PIDs of the running daemons, from their PID files (munged, slurmctld, slurmd)."""
        return {
            pid_file.stem: int(pid_file.read_text().split()[0])
            for pid_file in sorted((self.root / "run").glob("*.pid"))
        }

    def log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` lines of each daemon log, for error messages."""
        parts = []
        for log in sorted((self.root / "log").glob("*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(parts)


def _parse_scontrol_line(line: str) -> dict[str, str]:
    """Split one ``scontrol --oneliner`` record into key=value pairs (values hold no spaces we need)."""
    fields = {}
    for token in line.split():
        key, sep, value = token.partition("=")
        if sep:
            fields[key] = value
    return fields


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _real_memory_mb() -> int:
    """About 85 % of the machine's memory in MB (slurmd refuses a node configured above what it has)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(int(line.split()[1]) / 1024 * 0.85)
    raise RuntimeError("MemTotal missing from /proc/meminfo")


def write_slurm_conf(root: Path, node: str, cpus: int, memory_mb: int, munge_socket: Path, gpus: int = 1) -> Path:
    """Write slurm.conf and gres.conf for a one-node cluster whose state, spool, logs and PIDs live under ``root``.

    The node declares ``gpus`` GPUs (links to /dev/null): scheduled, but not enforced.
    """
    ctld_port, slurmd_port = _free_port(), _free_port()
    lines = [
        "ClusterName=biastransfer-test",
        f"SlurmctldHost={node}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "MpiDefault=none",
        # The node may declare more CPUs and memory than the machine has, and GPUs (GRES whose device
        # files are links to /dev/null), so that jobs sized for a real GPU node (the shipped profile's
        # GPU rules) can be scheduled; nothing enforces these limits (no cgroups): they are bookkeeping.
        "SlurmdParameters=config_overrides",
        "GresTypes=gpu",
        "ReturnToService=2",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        # Finished jobs stay visible to squeue/scontrol for an hour: the executor's squeue status checks
        # and the tests' job records rely on it.
        "MinJobAge=3600",
        "KillWait=5",
        "InactiveLimit=0",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool'}",
        f"SlurmctldPidFile={root / 'run' / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'run' / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'log' / 'slurmd.log'}",
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} Gres=gpu:{gpus} State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes={node} Default=YES MaxTime=INFINITE State=UP",
    ]
    conf = root / "slurm.conf"
    conf.write_text("\n".join(lines) + "\n")
    # slurmd counts a gpu GRES by its device files: one link to /dev/null per declared GPU.
    (root / "dev").mkdir(exist_ok=True)
    for index in range(gpus):
        device = root / "dev" / f"gpu{index}"
        if not device.is_symlink():
            device.symlink_to("/dev/null")
    (root / "gres.conf").write_text(f"NodeName={node} Name=gpu File={root / 'dev'}/gpu[0-{gpus - 1}]\n")
    return conf


def _write_srun_wrapper(bin_dir: Path, conf: Path) -> None:
    real_srun = shutil.which("srun")
    wrapper = bin_dir / "srun"
    wrapper.write_text(f'#!/bin/sh\nSLURM_CONF="{conf}"\nexport SLURM_CONF\nexec "{real_srun}" "$@"\n')
    wrapper.chmod(0o755)


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start one foreground daemon in its own session; its output goes to ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(process: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace_s)


def _marked_pids(marker: str) -> list[int]:
    """PIDs of processes (other than this one and its ancestors) whose environment carries ``marker``."""
    protected = set()
    pid = os.getpid()
    while pid > 1:
        protected.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    needle = f"{MARKER_VARIABLE}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in protected:
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


class _Daemons:
    """The started daemons of one cluster, stopped once in reverse order of start."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env
        self.processes: list[subprocess.Popen[bytes]] = []
        self.stopped = False

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        ctld_alive = len(self.processes) >= 2 and self.processes[1].poll() is None
        if ctld_alive:
            # Cancel queued/running jobs so that slurmd ends their job steps before it goes.
            subprocess.run(["scancel", "--user", str(os.getuid())], env=self.env, capture_output=True, timeout=30)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                queue = subprocess.run(
                    ["squeue", "-h", "-t", "PENDING,RUNNING,COMPLETING,SUSPENDED", "-o", "%i"],
                    env=self.env,
                    capture_output=True,
                    text=True,
                    timeout=30,
                )
                if queue.returncode != 0 or not queue.stdout.strip():
                    break
                time.sleep(0.5)
        for process in reversed(self.processes):
            _stop(process)
        # Job steps (slurmstepd) and job processes outlive slurmd if a job could not be cancelled:
        # end every process still carrying this cluster's marker.
        for pid in _marked_pids(str(self.root)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def local_slurm_cluster(
    root: Path | None = None,
    *,
    cpus: int | None = None,
    memory_mb: int | None = None,
    gpus: int = 1,
    ready_timeout_s: float = 30.0,
) -> Iterator[SlurmCluster]:
    """Start a one-node SLURM cluster under ``root`` (a new temp dir if None) and stop it on exit.

    The node declares ``cpus`` CPUs (default: this machine's), ``memory_mb`` MB (default: 85 % of this
    machine's) and ``gpus`` GPUs; declaring more than the machine has is allowed (nothing is enforced).

    Raises RuntimeError naming the missing binaries, or with the daemon logs when the node does not
    become idle within ``ready_timeout_s``.
    """
    missing = missing_binaries()
    if missing:
        raise RuntimeError(f"SLURM binaries missing from PATH: {', '.join(missing)} (run .ci/install-slurm.sh)")
    if not PACKAGED_MUNGE_KEY.is_file():
        raise RuntimeError(f"munge key {PACKAGED_MUNGE_KEY} missing (run .ci/install-slurm.sh)")
    own_root = root is None
    root = Path(tempfile.mkdtemp(prefix="slurm-test-")) if root is None else Path(root)
    root = root.resolve()
    for sub in ("munge", "state", "spool", "run", "log", "bin"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o700)

    # munged refuses a key it does not own: use a private copy owned by the current user.
    key = root / "munge" / "munge.key"
    shutil.copyfile(PACKAGED_MUNGE_KEY, key)
    key.chmod(0o400)
    munge_socket = root / "munge" / "munged.socket"
    node = socket.gethostname().split(".")[0]
    conf = write_slurm_conf(root, node, cpus or os.cpu_count() or 1, memory_mb or _real_memory_mb(), munge_socket, gpus)
    _write_srun_wrapper(root / "bin", conf)

    env = dict(os.environ)
    env = {k: v for k, v in env.items() if not k.startswith("SLURM_")}
    env.update(
        SLURM_CONF=str(conf),
        PATH=f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        **{MARKER_VARIABLE: str(root)},
    )
    daemons = _Daemons(root, env)
    atexit.register(daemons.stop)
    cluster = SlurmCluster(root=root, conf=conf, node=node, partition=PARTITION, env=env)
    try:
        log = root / "log"
        daemons.processes.append(
            _start(
                [
                    "munged",
                    "--foreground",
                    "--force",
                    f"--key-file={key}",
                    f"--socket={munge_socket}",
                    f"--pid-file={root / 'run' / 'munged.pid'}",
                    f"--log-file={log / 'munged.log'}",
                    f"--seed-file={root / 'munge' / 'munged.seed'}",
                ],
                env,
                log / "munged.stdout.log",
            )
        )
        _wait_for(lambda: munge_socket.exists(), ready_timeout_s, "munged socket", cluster, daemons)
        daemons.processes.append(_start(["slurmctld", "-D", "-f", str(conf)], env, log / "slurmctld.stdout.log"))
        daemons.processes.append(_start(["slurmd", "-D", "-f", str(conf), "-N", node], env, log / "slurmd.stdout.log"))

        def node_idle() -> bool:
            state = cluster.run("sinfo", "-h", "-n", node, "-o", "%t", check=False)
            return state.returncode == 0 and state.stdout.strip() == "idle"

        _wait_for(node_idle, ready_timeout_s, f"node {node} idle", cluster, daemons)
        yield cluster
    finally:
        daemons.stop()
        atexit.unregister(daemons.stop)
        if own_root:
            shutil.rmtree(root, ignore_errors=True)


def _wait_for(ready, timeout_s: float, what: str, cluster: SlurmCluster, daemons: _Daemons) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready():
            return
        dead = [p.args[0] for p in daemons.processes if p.poll() is not None]
        if dead:
            raise RuntimeError(f"{', '.join(dead)} exited while waiting for {what}:\n{cluster.log_tail()}")
        time.sleep(0.2)
    raise RuntimeError(f"timed out after {timeout_s:.0f} s waiting for {what}:\n{cluster.log_tail()}")
