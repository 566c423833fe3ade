#!/usr/bin/env bash
# Installs what workspacefs needs on a Debian machine and prepares .venv.
# Idempotent: each step checks first, so a second run takes a second or two.
set -euo pipefail
cd "$(dirname "$0")/.."

# podman, runc and catatonit (podman run --init) run the sandbox's containers; util-linux has
# setsid and mount, which the sandbox uses inside and outside them.
# dpkg-dev (dpkg-source), liburing-dev and libnuma-dev build libfuse (below).
APT_PACKAGES=(fuse3 libfuse3-dev pkg-config git gcc python3-dev python3-venv podman runc catatonit
              util-linux sqlite3 zip unzip dpkg-dev liburing-dev libnuma-dev)

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

# libfuse 3.18.3, built into .venv/libfuse, unless the system's is that new already.
# Debian 12's libfuse (3.14) never passes HANDLE_KILLPRIV_V2 or PARALLEL_DIROPS on to
# the kernel, and only 3.18.3 tells the file system which writes and opens must clear
# set-ID bits: without it the kernel asks for security.capability before page-cache
# writes and re-reads the attributes before each chown (docs/fuse.md, "libfuse").
# The source is Debian's own package, fetched by apt with a private configuration
# (a deb-src line for sid on the mirror the system's sources name; nothing in the
# system's apt setup changes) and verified as apt verifies every download: the
# suite's InRelease signature against Debian's archive keyring, then the hashes of
# the Sources index, the .dsc and the tarballs. Its soname is libfuse3.so.4, so
# nothing else links to it: pyfuse3 finds it through an rpath. Rebuilt when the
# version or the build options change. If it cannot be built (no network to the
# mirror...), the system's libfuse is used, which works with more kernel requests;
# setup does not try again until .venv/.libfuse-failed is removed.
# WORKSPACEFS_LIBFUSE=system keeps the system's libfuse.
LIBFUSE_VERSION=3.18.3
LIBFUSE_PACKAGE=fuse3=3.18.3-1
LIBFUSE_SUITE=sid
LIBFUSE_OPTIONS=(--buildtype=release --libdir=lib -Dutils=false -Dexamples=false -Dtests=false
                 -Dinitscriptdir= -Duseroot=false)
libfuse_prefix=$PWD/.venv/libfuse
libfuse_stamp=.venv/.libfuse-built
libfuse_failed=.venv/.libfuse-failed
libfuse_log=.venv/libfuse-build.log
want_libfuse="$LIBFUSE_PACKAGE $LIBFUSE_SUITE ${LIBFUSE_OPTIONS[*]} $libfuse_prefix"

# The Debian archive the system's own apt sources name (not its security archive).
debian_mirror() {
    apt-get indextargets --format '$(REPO_URI)' 'Label: Debian' 2>/dev/null | sort -u | head -n1
}

build_libfuse() {
    local mirror work keyring signed=""
    mirror=$(debian_mirror)
    if [[ -z $mirror ]]; then
        echo "no Debian archive in the system's apt sources" >"$libfuse_log"
        return 1
    fi
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    [[ -r $keyring ]] && signed=" [signed-by=$keyring]"
    work=$(mktemp -d)
    chmod 755 "$work" # apt downloads as its own user where it can
    (
        set -euo pipefail
        mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/source"
        echo "deb-src$signed $mirror $LIBFUSE_SUITE main" >"$work/sources.list"
        private=(-o "Dir::Etc::sourcelist=$work/sources.list" -o Dir::Etc::sourceparts=/nonexistent
                 -o "Dir::State::lists=$work/lists" -o "Dir::Cache=$work/cache"
                 -o Acquire::Retries=1 -o Acquire::http::Timeout=30)
        echo "== apt-get update ($mirror $LIBFUSE_SUITE, sources only)"
        apt-get "${private[@]}" -q update
        [[ $(id -u) -ne 0 ]] || chown _apt "$work/source" 2>/dev/null || true
        echo "== apt-get source --download-only $LIBFUSE_PACKAGE"
        (cd "$work/source" && apt-get "${private[@]}" -q source --download-only "$LIBFUSE_PACKAGE")
        # The .dsc's own hashes are checked again here; its maintainer signature needs
        # debian-keyring, which apt's chain above makes unnecessary.
        (cd "$work/source" && dpkg-source -x ./*.dsc libfuse)
        .venv/bin/python -m pip install -q meson ninja
        rm -rf "$libfuse_prefix"
        .venv/bin/meson setup "$work/build" "$work/source/libfuse" --prefix="$libfuse_prefix" \
            "${LIBFUSE_OPTIONS[@]}"
        PATH="$PWD/.venv/bin:$PATH" ninja -C "$work/build" install
    ) >"$libfuse_log" 2>&1
    local status=$?
    rm -rf "$work"
    return $status
}

libfuse=system
system_libfuse=$(pkg-config --modversion fuse3 2>/dev/null || echo none)
if [[ ${WORKSPACEFS_LIBFUSE:-} == system ]]; then
    echo "setup: using the system's libfuse $system_libfuse (WORKSPACEFS_LIBFUSE=system)"
elif pkg-config --atleast-version="$LIBFUSE_VERSION" fuse3 2>/dev/null; then
    : # the system's libfuse is new enough
elif [[ -f $libfuse_stamp && $(cat "$libfuse_stamp") == "$want_libfuse" &&
      -f $libfuse_prefix/lib/pkgconfig/fuse3.pc ]]; then
    libfuse=built
elif [[ -f $libfuse_failed && $(cat "$libfuse_failed") == "$want_libfuse" ]]; then
    echo "setup: using the system's libfuse $system_libfuse: building libfuse $LIBFUSE_VERSION" \
        "failed before ($libfuse_log; remove $libfuse_failed to try again)"
else
    echo "setup: building libfuse $LIBFUSE_VERSION from Debian's source package ($LIBFUSE_SUITE)"
    rm -f "$libfuse_stamp" "$libfuse_failed"
    # Not in an if: there bash would ignore set -e inside the build's subshell.
    set +e
    build_libfuse
    built=$?
    set -e
    if ((built == 0)); then
        echo "$want_libfuse" >"$libfuse_stamp"
        libfuse=built
    else
        echo "$want_libfuse" >"$libfuse_failed"
        echo "setup: could not build libfuse $LIBFUSE_VERSION ($(tail -n1 "$libfuse_log"));" \
            "using the system's libfuse $system_libfuse, which works with more kernel requests" \
            "(no HANDLE_KILLPRIV_V2, no PARALLEL_DIROPS): see $libfuse_log" >&2
    fi
fi
if [[ $libfuse == built ]]; then
    libfuse_tag="built $want_libfuse"
    libfuse_name="$LIBFUSE_VERSION in .venv/libfuse"
    # pyfuse3's build asks pkg-config; the rpath makes it load this libfuse at run time.
    pyfuse3_env=(PKG_CONFIG_PATH="$libfuse_prefix/lib/pkgconfig"
                 LDFLAGS="-Wl,-rpath,$libfuse_prefix/lib ${LDFLAGS:-}")
else
    libfuse_tag="system $system_libfuse"
    libfuse_name="the system's $system_libfuse"
    pyfuse3_env=()
fi

# pyfuse3 is built from its PyPI sdist with the patches in patches/pyfuse3/
# (inodes for the file-handle handlers, connection capabilities, a one-task
# session loop, a fallocate handler, the kernel's kill-suidgid flags, writes
# without a copy, attribute replies in one call): they let the mount open files
# and directories without kernel requests, serve fallocate(2), and spend less
# per request. workspacefs detects them at runtime and works without them, only
# slower and without fallocate. Built before the other dependencies (which then
# keep it), again when the patches change or a stock pyfuse3 replaced it.
PYFUSE3_VERSION=3.5.0
want_pyfuse3="$PYFUSE3_VERSION $(cat patches/pyfuse3/*.patch | sha256sum | cut -d' ' -f1) $libfuse_tag"
pyfuse3_stamp=.venv/.pyfuse3-patched
build_pyfuse3() {
    echo "setup: building pyfuse3 $PYFUSE3_VERSION with patches/pyfuse3 (libfuse $libfuse_name)"
    local build
    build=$(mktemp -d)
    .venv/bin/python -m pip download -q --no-binary :all: --no-deps -d "$build" "pyfuse3==$PYFUSE3_VERSION"
    tar -xzf "$build/pyfuse3-$PYFUSE3_VERSION.tar.gz" -C "$build"
    local source_dir="$build/pyfuse3-$PYFUSE3_VERSION"
    for patch_file in "$PWD"/patches/pyfuse3/*.patch; do
        (cd "$source_dir" && git apply "$patch_file")
    done
    rm -f "$source_dir/src/pyfuse3/__init__.c" # generated from the patched .pyx instead
    env "${pyfuse3_env[@]}" .venv/bin/python -m pip install -q --no-deps --force-reinstall \
        "$source_dir"
    rm -rf "$build"
    echo "$want_pyfuse3" >"$pyfuse3_stamp"
}
pyfuse3_patched() {
    .venv/bin/python -c 'import sys, pyfuse3 as p
sys.exit(not (hasattr(p, "ConnectionInfo") and hasattr(p.Operations, "fallocate")
              and hasattr(p.EntryAttributes, "set_stat")))' 2>/dev/null
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
