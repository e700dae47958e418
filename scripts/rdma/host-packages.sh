# shellcheck shell=bash
# Host packages for scripts/with-rdma's VM route: what is missing, and
# installing it. Sourced by scripts/with-rdma (not run on its own).
#
# Expects from the caller: scripts/lib.sh (ensure_packages, die).
# Used by: run_in_vm (scripts/rdma/vm-runs.sh) and ensure_cache
# (scripts/rdma/kernel-cache.sh, with "build").

# need_packages [build]: print the Debian packages missing for the VM route
# (with "build": also those needed to build the cache).
need_packages() {
    local -A by_cmd=([qemu-system-x86_64]=qemu-system-x86 [modprobe]=kmod
        [ip]=iproute2 [rdma]=iproute2 [ss]=iproute2 [ibv_devinfo]=ibverbs-utils
        [ib_send_lat]=perftest [rping]=rdmacm-utils [taskset]=util-linux
        [flock]=util-linux)
    if [ "${1:-}" = build ]; then
        by_cmd+=([cpio]=cpio [depmod]=kmod [gcc-12]=gcc-12 [make]=make
            [xz]=xz-utils [apt-get]=apt [dpkg]=dpkg)
        ldconfig -p 2>/dev/null | grep -q 'libelf\.so\.1 ' || echo libelf1 # objtool
    fi
    local c
    for c in "${!by_cmd[@]}"; do
        command -v "$c" >/dev/null 2>&1 || echo "${by_cmd[$c]}"
    done
    # The initramfs and the guest's poweroff need a static busybox (the
    # dynamic busybox package installs the same path).
    file_is_static /bin/busybox || echo busybox-static
    compgen -G '/usr/lib/*/libibverbs/librxe-rdmav*.so' >/dev/null || echo ibverbs-providers
    dpkg-query -W -f='${Status}' rdma-core 2>/dev/null | grep -q 'ok installed' || echo rdma-core
}

file_is_static() {
    [ -x "$1" ] && ! LC_ALL=C ldd "$1" >/dev/null 2>&1
}

# ensure_vm_packages [build]: install what need_packages reports (lib.sh's
# ensure_packages: apt-get update once, then install), or fail clearly.
ensure_vm_packages() {
    local -a pkgs
    mapfile -t pkgs < <(need_packages "$@" | sort -u)
    ((${#pkgs[@]})) || return 0
    ensure_packages "${pkgs[@]}"
    command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 still missing"
}
