"""The security defaults, each checked from inside the container.

| default | checked by |
|---|---|
| ``--network=none`` | only ``lo``; connecting out fails with ENETUNREACH |
| no added capabilities | CapEff/CapBnd within Podman's upstream default set; ``mount`` refused |
| no-new-privileges | ``NoNewPrivs: 1`` |
| resource limits | the container's cgroup holds the configured memory, CPU and pid limits |
| no host path but the workspace | Podman's own files; the read-only command channel |
| the host's own state hidden | home, project and service directories empty; ``/etc/shadow`` gone |
| no host control surface | the host's live podman and docker sockets unseen; no socket at all |
| read-only option | writes to the workspace fail with EROFS |
| a private workspace | a command run as another user is kept out of a 0700 root until opened |
"""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import tempfile
from collections.abc import Iterator

import pytest

from workspacefs import InMemoryFilesystem, ReadOnlyError
from workspacefs.sandbox import PodmanSandbox, containers_conf
from workspacefs.sandbox._container import CHANNEL

pytestmark = pytest.mark.container

CAPS = {
    "CHOWN": 0,
    "DAC_OVERRIDE": 1,
    "FOWNER": 3,
    "FSETID": 4,
    "KILL": 5,
    "SETGID": 6,
    "SETUID": 7,
    "SETPCAP": 8,
    "NET_BIND_SERVICE": 10,
    "SYS_CHROOT": 18,
    "SETFCAP": 31,
}
"""Podman's upstream default capabilities (what ``no added capabilities`` allows)."""

VIRTUAL = {
    "overlay",
    "proc",
    "sysfs",
    "tmpfs",
    "devpts",
    "mqueue",
    "cgroup",
    "cgroup2",
    "fuse.workspacefs",
}


def status(box: PodmanSandbox) -> dict[str, str]:
    lines = box.exec("cat /proc/self/status").stdout.splitlines()
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def test_network_is_none(sandbox: PodmanSandbox) -> None:
    interfaces = sandbox.exec("tail -n +3 /proc/net/dev | cut -d: -f1").stdout.split()
    assert interfaces == ["lo"]
    probe = sandbox.exec(
        'python3 -c \'import socket\ntry:\n socket.create_connection(("192.0.2.1", 80), 5)\n'
        "except OSError as e:\n print(e.errno)'"
    )
    assert probe.stdout.strip() == str(errno.ENETUNREACH)


def test_no_added_capabilities_and_no_new_privileges(sandbox: PodmanSandbox) -> None:
    fields = status(sandbox)
    allowed = sum(1 << bit for bit in CAPS.values())
    for name in ("CapEff", "CapPrm", "CapBnd"):
        assert int(fields[name], 16) & ~allowed == 0, (name, fields[name])
    assert int(fields["CapAmb"], 16) == 0
    assert fields["NoNewPrivs"].strip() == "1"
    refused = sandbox.exec("mkdir -p /mnt/x && mount -t tmpfs none /mnt/x")
    assert refused.exit_code != 0
    assert "permission denied" in refused.stderr.lower()


def test_resource_limits_are_set(sandbox: PodmanSandbox) -> None:
    config = sandbox.config
    limits = sandbox.exec(
        "cd /sys/fs/cgroup; if [ -e memory.max ]; then cat memory.max pids.max cpu.max; else "
        "cat memory/memory.limit_in_bytes pids/pids.max cpu/cpu.cfs_quota_us "
        "cpu/cpu.cfs_period_us; fi"
    ).stdout.split()
    assert int(limits[0]) == config.memory
    assert int(limits[1]) == config.pids_limit
    quota, period = int(limits[2]), int(limits[3])
    assert quota / period == pytest.approx(config.cpus or min(2, os.cpu_count() or 1))


def test_only_the_workspace_is_bound_from_the_host(sandbox: PodmanSandbox) -> None:
    mounts = [line.split() for line in sandbox.exec("cat /proc/self/mountinfo").stdout.splitlines()]
    fuse = [fields[4] for fields in mounts if fields[fields.index("-") + 1].startswith("fuse")]
    assert fuse == ["/workspace"]
    channels = []
    for fields in mounts:
        kind, root, point = fields[fields.index("-") + 1], fields[3], fields[4]
        if kind in VIRTUAL:
            continue
        per_container = "/containers/storage/overlay-containers/" in root
        init = point == "/run/podman-init"
        if point == CHANNEL:
            assert "ro" in fields[5].split(","), "the command channel is bound read-only"
            channels.append(point)
            continue
        assert per_container or init, f"host path {root} bound at {point}"
    assert channels == [CHANNEL]
    # The channel holds the running command's own files and nothing else, and nothing
    # in the container can change it.
    seen = sandbox.exec(
        f"ls -A {CHANNEL}; ls -A {CHANNEL}/*; touch {CHANNEL}/x || echo refused; "
        f"rm -f {CHANNEL}/*/script || echo refused"
    )
    listed = seen.stdout.split()
    assert len(listed) == 1 + 5 + 2, seen
    assert listed[0].isdigit()
    assert sorted(listed[1:6]) == ["err", "in", "out", "script", "status"]
    assert listed[6:] == ["refused", "refused"]
    assert "Read-only file system" in seen.stderr


def test_the_host_s_own_state_is_hidden(sandbox: PodmanSandbox) -> None:
    assert os.listdir("/root"), "the check needs something in the host's /root"
    seen = sandbox.exec(
        "for d in /root /home /tmp /run /var/lib/containers /var/log; do "
        "[ -d $d ] && [ -z \"$(ls -A $d | grep -v -e '^.containerenv$' -e '^podman-init$' "
        "-e '^workspacefs$')\" ] "
        "&& echo empty $d; done; test -e /etc/shadow || echo no-shadow; "
        f"test -e {os.getcwd()} || echo no-project"
    ).stdout.split("\n")
    assert seen[:6] == [
        f"empty {d}" for d in ("/root", "/home", "/tmp", "/run", "/var/lib/containers", "/var/log")
    ]
    assert "no-shadow" in seen
    assert "no-project" in seen  # this checkout, say
    assert sandbox.exec("python3 -c 'print(1)' && git --version").ok  # programs still there


@pytest.fixture
def host_control_sockets() -> Iterator[list[str]]:
    """A live Podman API socket and a docker-style one on the host, for the sandbox not to see."""
    directory = tempfile.mkdtemp(prefix="workspacefs-test-control-", dir="/run")
    podman_socket = os.path.join(directory, "podman.sock")
    docker_socket = os.path.join(directory, "docker.sock")
    service = subprocess.Popen(
        ["podman", "system", "service", "--time=0", f"unix://{podman_socket}"],
        env={**os.environ, "CONTAINERS_CONF": containers_conf()},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    docker = socket.socket(socket.AF_UNIX)
    docker.bind(docker_socket)
    docker.listen()
    try:
        for _ in range(100):
            if os.path.exists(podman_socket):
                break
            subprocess.run(["sleep", "0.05"], check=True)
        probe = socket.socket(socket.AF_UNIX)
        probe.connect(podman_socket)  # live on the host
        probe.close()
        yield [podman_socket, docker_socket]
    finally:
        docker.close()
        service.terminate()
        service.wait(timeout=30)
        subprocess.run(["rm", "-rf", directory], check=True)


def test_no_control_surface_of_the_host(
    sandbox: PodmanSandbox, host_control_sockets: list[str]
) -> None:
    paths = " ".join(host_control_sockets)
    result = sandbox.exec(
        f"for s in {paths} /run/podman/podman.sock /var/run/docker.sock "
        "/run/containerd/containerd.sock; do test -e $s && echo reachable $s; done; "
        "find / -xdev -type s 2>/dev/null | head -5; "
        "podman --remote ps >/dev/null 2>&1 && echo podman-answers"
    )
    assert result.stdout == ""


def test_read_only_workspace() -> None:
    with PodmanSandbox(read_only=True) as box:
        result = box.exec(
            "touch /workspace/new 2>&1; mkdir /workspace/d 2>&1; "
            'python3 -c \'import os\ntry:\n os.open("/workspace/f", os.O_WRONLY | os.O_CREAT)\n'
            "except OSError as e:\n print(e.errno)'"
        )
        assert result.stdout.count("Read-only file system") == 2
        assert result.stdout.splitlines()[-1] == str(errno.EROFS)
        assert not result.changes.changed
        with pytest.raises(ReadOnlyError):
            box.filesystem.write("/workspace/new", "x")
    fs = InMemoryFilesystem(mount_point="/workspace")
    with PodmanSandbox(fs, read_only=True) as box:
        fs.write("/workspace/from-api.txt", "the harness may write\n")
        assert box.exec("cat from-api.txt").stdout == "the harness may write\n"
        assert box.exec("echo no > from-api.txt").exit_code != 0


def test_a_private_workspace_keeps_other_container_users_out_until_opened() -> None:
    # A new workspace is 0700 (docs/security.md): root in the container (the default) is
    # its owner or root on the host and gets in; any other user is "other".
    fs = InMemoryFilesystem(mount_point="/workspace")
    fs.write("/workspace/a.txt", "a\n")
    with PodmanSandbox(fs, user="65534") as box:
        refused = box.exec("cat a.txt; echo x > b.txt")
        assert refused.exit_code != 0
        assert refused.stderr.count("Permission denied") == 2
        os.chmod(box.mountpoint, 0o777)  # its owner opens it
        allowed = box.exec("cat a.txt && echo x > b.txt")
        assert (allowed.exit_code, allowed.stdout) == (0, "a\n")
        assert fs.read("/workspace/b.txt").content == "x\n"
