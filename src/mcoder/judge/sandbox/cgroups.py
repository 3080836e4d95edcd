"""cgroups: a memory and CPU account per worker slot, and the cleanup of what killed judges left."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

# ---------------------------------------------------------------- a memory and CPU account per slot


class TreeAccount:
    """The cgroups of one worker slot's candidates (cgroup v1 ``memory`` + ``cpuacct`` + ``cpu``,
    or v2; on a hybrid host also a v2 group for its pressure figures), made by the judge process
    and entered by each candidate before it drops its privileges: ``memory_mb`` bounds the memory
    of the candidate's whole process tree together, the ``cpu`` group gives the slot one CPU of
    its own (a share among the slots, and a quota of one CPU), the CPU time of the whole tree is
    read from ``cpuacct``, and the time the tree was runnable but got no CPU from ``cpu.pressure``.
    The files are opened once, before Landlock.

    Every move of a process between cgroups costs the kernel time (a fraction of a millisecond,
    at times several), so each candidate moves only into the group that counts memory, which
    must hold the candidate alone. The worker itself joins the CPU-side groups once,
    and its candidates are born in them: their CPU time and pressure include the worker's watch
    loop, which sleeps while they run."""

    def __init__(self, paths: dict[str, str]):
        self.paths = paths
        own = {p for k, p in paths.items() if k in ("memory", "v2")}
        for p in self._dirs():
            if p not in own:
                Path(p, "cgroup.procs").write_text("0")
        self.procs_fds = [
            os.open(os.path.join(p, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC) for p in self._dirs() if p in own
        ]
        v2 = "v2" in paths
        mem = paths.get("v2") or paths["memory"]
        self.oom_fd = os.open(os.path.join(mem, "memory.events" if v2 else "memory.oom_control"), os.O_RDONLY | os.O_CLOEXEC)
        self.cpu_fd = _open_if(paths.get("v2") or paths.get("cpuacct"), "cpu.stat" if v2 else "cpuacct.usage")
        self.stall_fd = _open_if(paths.get("v2") or paths.get("psi"), "cpu.pressure")
        self.v2 = v2

    def _dirs(self) -> list[str]:
        return list(dict.fromkeys(self.paths.values()))

    def enter(self) -> None:
        """Called in the candidate (still root): it and all it starts belong to the account (to
        its CPU-side groups already, as a child of the worker)."""
        for fd in self.procs_fds:
            os.write(fd, b"0")

    def oom_kills(self) -> int:
        text = os.pread(self.oom_fd, 4096, 0).decode()
        for line in text.splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                return int(v)
        return 0

    def cpu_s(self) -> float | None:
        if self.cpu_fd < 0:
            return None
        text = os.pread(self.cpu_fd, 4096, 0).decode()
        if not self.v2:
            return int(text.strip()) / 1e9
        for line in text.splitlines():
            k, _, v = line.partition(" ")
            if k == "usage_usec":
                return int(v) / 1e6
        return None

    def stall_s(self) -> float | None:
        """Seconds in which every runnable process of the tree waited for a CPU (the ``full``
        line of the group's ``cpu.pressure``); None where the host keeps no such figure."""
        if self.stall_fd < 0:
            return None
        for line in os.pread(self.stall_fd, 4096, 0).decode().splitlines():
            if line.startswith("full "):
                return int(line.rpartition("total=")[2]) / 1e6
        return None


def _open_if(folder: str | None, name: str) -> int:
    """``folder/name`` open for reading, or -1 where there is no such folder or file."""
    if not folder:
        return -1
    try:
        return os.open(os.path.join(folder, name), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1


def task_wait_s(pid: int) -> float | None:
    """Seconds process ``pid`` (its main thread) was runnable but waited for a CPU: the run-queue
    delay the scheduler keeps in ``/proc/PID/schedstat``."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def _own_cgroup(controller: str) -> str | None:
    """The folder of this process's cgroup for ``controller`` ('' for v2), if mounted here."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    mine = None
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        if (controller == "" and ctrls == "" and line.startswith("0::")) or controller in ctrls.split(","):
            mine = path
            break
    if mine is None:
        return None
    for m in mounts:
        left, _, right = m.partition(" - ")
        fields, rfields = left.split(), right.split()
        fstype, opts = rfields[0], rfields[-1].split(",")
        root, point = fields[3], fields[4]
        if (controller == "" and fstype == "cgroup2") or (fstype == "cgroup" and controller in opts):
            rel = mine[len(root):] if root != "/" and mine.startswith(root) else mine
            folder = os.path.join(point, rel.lstrip("/"))
            if os.path.isdir(folder):
                return folder
    return None


def make_tree_cgroups(name: str, memory_mb: int, cpus: float = 1.0) -> dict[str, str] | None:
    """Make the cgroup folders of one slot (``name``) with the memory limit, the CPU share and a
    quota of ``cpus`` CPUs (0: none) set; None where the host does not let this process make them (then the tree's memory is
    bounded by the process limit times the address-space limit instead, and its CPU by nothing
    but the scheduler's fairness between processes)."""
    if os.geteuid() != 0:
        return None
    limit = str(memory_mb << 20)
    mem = _own_cgroup("memory")
    if mem is not None:
        try:
            paths = {"memory": os.path.join(mem, name)}
            os.makedirs(paths["memory"], exist_ok=True)
            Path(paths["memory"], "memory.limit_in_bytes").write_text(limit)
            swap = Path(paths["memory"], "memory.memsw.limit_in_bytes")
            if swap.exists():
                with contextlib.suppress(OSError):
                    swap.write_text(limit)
            cpu = _own_cgroup("cpuacct")
            if cpu is not None:
                paths["cpuacct"] = os.path.join(cpu, name)
                os.makedirs(paths["cpuacct"], exist_ok=True)
            paths.update(_v1_cpu_share(name, cpus))
            return paths
        except OSError:
            remove_tree_cgroups(paths)
            return None
    v2 = _own_cgroup("")
    if v2 is not None and "memory" in Path(v2, "cgroup.subtree_control").read_text().split():
        try:
            path = os.path.join(v2, name)
            os.makedirs(path, exist_ok=True)
            Path(path, "memory.max").write_text(limit)
            with contextlib.suppress(OSError):
                Path(path, "memory.swap.max").write_text("0")
            if cpus > 0 and "cpu" in Path(path, "cgroup.controllers").read_text().split():
                Path(path, "cpu.max").write_text(f"{_quota_us(cpus)} {SLOT_CPU_PERIOD_US}")
            return {"v2": path}
        except OSError:
            remove_tree_cgroups({"v2": path})
            return None
    return None


SLOT_CPU_PERIOD_US = 100_000


def _quota_us(cpus: float) -> int:
    return max(1000, round(cpus * SLOT_CPU_PERIOD_US))


def _v1_cpu_share(name: str, cpus: float) -> dict[str, str]:
    """A v1 ``cpu`` group of the slot: the default share (so N slots split a busy machine N
    ways however many processes each runs) and a quota of ``cpus`` CPUs; and, on a hybrid host,
    a v2 group of the slot that keeps its pressure figures. Either is left out where it cannot
    be made."""
    out = {}
    cpu = _own_cgroup("cpu")
    if cpu is not None:
        path = os.path.join(cpu, name)
        made = not os.path.exists(path)  # else it is the cpuacct group, mounted together with cpu
        try:
            os.makedirs(path, exist_ok=True)
            Path(path, "cpu.shares").write_text("1024")
            Path(path, "cpu.cfs_period_us").write_text(str(SLOT_CPU_PERIOD_US))
            Path(path, "cpu.cfs_quota_us").write_text(str(_quota_us(cpus)) if cpus > 0 else "-1")
            out["cpu"] = path
        except OSError:
            if made:
                remove_tree_cgroups({"cpu": path})
    unified = _own_cgroup("")
    if unified is not None:
        path = os.path.join(unified, name)
        try:
            os.makedirs(path, exist_ok=True)
            if not os.path.exists(os.path.join(path, "cpu.pressure")):
                raise OSError("no pressure figures")
            out["psi"] = path
        except OSError:
            remove_tree_cgroups({"psi": path})
    return out


def remove_tree_cgroups(paths: dict[str, str] | None) -> None:
    """Remove a slot's cgroups; a process still leaving it (a check child that dies with its
    worker) makes rmdir fail for a moment, so it is tried for up to half a second."""
    for p in set((paths or {}).values()):
        for _ in range(50):
            try:
                os.rmdir(p)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.01)


def sweep_stale(tmp: str, cgroup_prefix: str = "mcoder-judge-") -> list[str]:
    """Remove what judges killed before they could clean up left behind: scratch folders
    ``mcoder-judge-*`` in ``tmp`` whose owner pid (in an ``owner`` file) is dead, and their empty
    cgroups. Returns the folders removed."""
    import shutil

    from mcoder.outputs import pid_alive  # here, not at the top: the workers import this module

    removed = []
    try:
        entries = os.listdir(tmp)
    except OSError:
        return removed
    for entry in entries:
        if not entry.startswith("mcoder-judge-") or entry == "mcoder-judge-uids":
            continue
        folder = os.path.join(tmp, entry)
        try:
            owner = int(Path(folder, "owner").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # not ours to judge (a judge still starting, or another tool's)
        if pid_alive(owner):
            continue
        _unmount_below(folder)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    for ctrl in ("memory", "cpuacct", "cpu", ""):
        base = _own_cgroup(ctrl)
        if base is None:
            continue
        with contextlib.suppress(OSError):
            for entry in os.listdir(base):
                if entry.startswith(cgroup_prefix):
                    m = entry[len(cgroup_prefix):].split("-")[0]
                    if m.isdigit() and not pid_alive(int(m)):
                        with contextlib.suppress(OSError):
                            os.rmdir(os.path.join(base, entry))
    return removed


def _unmount_below(folder: str) -> None:
    """Worker tmpfs mounts live in the workers' own mount namespaces, so nothing is mounted in
    ours; this only guards against a folder mounted by hand."""
    return
