#!/usr/bin/env bash
# Installs what workspacefs needs on a Debian machine and prepares .venv.
# Idempotent: each step checks first, so a second run takes a second or two.
set -euo pipefail
cd "$(dirname "$0")/.."

# podman, runc and catatonit (podman run --init) run the sandbox's containers; util-linux has
# setsid and mount, which the sandbox uses inside and outside them.
APT_PACKAGES=(fuse3 libfuse3-dev pkg-config git gcc python3-dev python3-venv podman runc catatonit
              util-linux sqlite3 zip unzip)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    SUDO=""
    [[ $(id -u) -eq 0 ]] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The debug UI's browser tests drive Debian's Chromium through playwright with
# executable_path (playwright's own browser download does not work here). Without
# recommends: a headless browser needs no desktop services.
if ! dpkg -s chromium fonts-dejavu-core >/dev/null 2>&1; then
    echo "setup: installing chromium"
    SUDO=""
    [[ $(id -u) -eq 0 ]] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        chromium fonts-dejavu-core >/dev/null
fi

# Containers bind the mount, so it needs allow_other; non-root users may ask
# for it only when /etc/fuse.conf says so.
if ! grep -qx 'user_allow_other' /etc/fuse.conf 2>/dev/null; then
    SUDO=""
    [[ $(id -u) -eq 0 ]] || SUDO="sudo"
    echo 'user_allow_other' | $SUDO tee -a /etc/fuse.conf >/dev/null
fi

# fusectl (/sys/fs/fuse/connections) lets a mount whose FUSE loop died abort its kernel
# connection, so nothing waits on it; systemd mounts it at boot, a machine without systemd may not.
if [[ $(id -u) -eq 0 ]] && [[ -d /sys/fs/fuse/connections ]] && ! mountpoint -q /sys/fs/fuse/connections; then
    mount -t fusectl fusectl /sys/fs/fuse/connections 2>/dev/null ||
        echo "setup: could not mount fusectl on /sys/fs/fuse/connections" >&2
fi

# The sandbox mounts an overlay of / for its containers (as root); load the module if needed.
if [[ $(id -u) -eq 0 ]] && ! grep -qw overlay /proc/filesystems; then
    modprobe overlay 2>/dev/null || echo "setup: could not load the overlay module" >&2
fi

PYTHON=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
    echo "setup: creating .venv"
    "$PYTHON" -m venv .venv
fi

# pyfuse3 is built from its PyPI sdist with the patches in patches/pyfuse3/
# (inodes for the file-handle handlers, connection capabilities, a one-task
# session loop, a fallocate handler): they let the mount open files and
# directories without kernel requests, and serve fallocate(2). workspacefs
# detects them at runtime and works without them, only slower and without
# fallocate. Built before the other dependencies (which then keep it), again
# when the patches change or a stock pyfuse3 replaced it.
PYFUSE3_VERSION=3.5.0
want_pyfuse3="$PYFUSE3_VERSION $(cat patches/pyfuse3/*.patch | sha256sum | cut -d' ' -f1)"
pyfuse3_stamp=.venv/.pyfuse3-patched
build_pyfuse3() {
    echo "setup: building pyfuse3 $PYFUSE3_VERSION with patches/pyfuse3"
    local build
    build=$(mktemp -d)
    .venv/bin/python -m pip download -q --no-binary :all: --no-deps -d "$build" "pyfuse3==$PYFUSE3_VERSION"
    tar -xzf "$build/pyfuse3-$PYFUSE3_VERSION.tar.gz" -C "$build"
    local source_dir="$build/pyfuse3-$PYFUSE3_VERSION"
    for patch_file in "$PWD"/patches/pyfuse3/*.patch; do
        (cd "$source_dir" && git apply "$patch_file")
    done
    rm -f "$source_dir/src/pyfuse3/__init__.c" # generated from the patched .pyx instead
    .venv/bin/python -m pip install -q --no-deps --force-reinstall "$source_dir"
    rm -rf "$build"
    echo "$want_pyfuse3" >"$pyfuse3_stamp"
}
pyfuse3_patched() {
    .venv/bin/python -c 'import sys, pyfuse3 as p
sys.exit(not (hasattr(p, "ConnectionInfo") and hasattr(p.Operations, "fallocate")))' 2>/dev/null
}
if [[ ! -f $pyfuse3_stamp || $(cat "$pyfuse3_stamp") != "$want_pyfuse3" ]]; then
    build_pyfuse3
fi

# Reinstall only when the declared dependencies change.
stamp=.venv/.workspacefs-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    echo "setup: installing workspacefs and its dev tools into .venv"
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e '.[dev]'
    echo "$want" >"$stamp"
fi

if ! pyfuse3_patched; then
    build_pyfuse3
    pyfuse3_patched || { echo "setup: the patched pyfuse3 does not load" >&2; exit 1; }
fi

# Say what the Podman sandbox still lacks here, if anything (one line each; not fatal).
.venv/bin/python -c '
from workspacefs.sandbox import preflight
for problem in preflight():
    print("setup: sandbox:", problem)
'
