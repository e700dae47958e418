# shellcheck shell=bash
# The QEMU runs of scripts/with-rdma: one VM for COMMAND, or two VMs
# (--two-hosts) joined by a UDP socket link; the per-run log and exchange
# directory, output streaming, the watchdog, the exit status. Sourced by
# scripts/with-rdma (not run on its own).
#
# Expects from the caller: scripts/lib.sh (log); VM_DIR (scripts/vm, whose
# guest-init.sh is the guest's PID 1), EXIT_HARNESS, info, two_host_status and
# the options (PROVIDER, TIMEOUT, MEM, KEEP_LOGS, TWO_HOSTS, SERVER_CMD,
# CLIENT_CMD, CLIENT_DELAY, READY_TIMEOUT, SERVER_GRACE, EXTRA_ENV, SHARES,
# CMD) from scripts/with-rdma; ensure_vm_packages (scripts/rdma/host-packages.sh);
# kernel_version and ensure_cache (scripts/rdma/kernel-cache.sh).
# Entry point: run_in_vm (exits with the run's status).

# RDMA_* variables the VM sets itself (not passed in from the caller).
HARNESS_VARS='^RDMA_(DEVICE|PORT|GID_INDEX|NETDEV|IP|PEER_IP|PROVIDER|IN_VM|ROLE|SERVER_IP|CLIENT_IP|RXE_.*|SIW_.*)$'

# Run state.
LOG_DIR=
QEMU_PIDS=()
READER_PIDS=()
AUX_PIDS=()
WATCHDOG_PID=

make_log_dir() {
    LOG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/with-rdma.XXXXXX")
    cp "$VM_DIR/guest-init.sh" "$LOG_DIR/guest-init.sh"
}

# work_shares: the read-write shares (working tree first, then --share).
work_shares() {
    local top
    top=$(git -C "$PWD" rev-parse --show-toplevel 2>/dev/null || pwd -P)
    [ "$top" = / ] || echo "$top"
    printf '%s\n' "${SHARES[@]}"
}

# write_role ROLE CMD...: the role's environment, working directory, command.
write_role() {
    local role=$1 v
    shift
    {
        for v in PATH HOME JAVA_HOME CI MAVEN_OPTS LANG LC_ALL TZ TERM "${EXTRA_ENV[@]}" \
            $(compgen -e | grep '^RDMA_' | grep -Ev "$HARNESS_VARS" || true); do
            [ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}"
        done
        printf 'PV_CWD=%q\n' "$PWD"
        printf 'PV_CMD=('
        printf '%q ' "$@"
        printf ')\n'
    } >"$LOG_DIR/role-$role.sh"
}

# write_vm_conf VM SETUP "ROLES" [NIC_IP NIC_PEER_IP]
write_vm_conf() {
    local vm=$1 setup=$2 roles=$3 i=0 share
    {
        printf 'PV_KVER=%q\nPV_MODDIR=%q\n' "$KVER" "$CACHE/root/lib/modules/$KVER"
        printf 'PV_SETUP=%q\nPV_PROVIDER=%q\nPV_ROLES=(%s)\n' "$setup" "${PROVIDER:-rxe}" "$roles"
        printf 'PV_NIC_IP=%q\nPV_NIC_PEER_IP=%q\n' "${4:-}" "${5:-}"
        printf 'PV_HOSTNAME=%q\n' "$(hostname 2>/dev/null || echo rdma-vm)"
        printf 'PV_CLIENT_DELAY=%q\nPV_SERVER_GRACE=%q\nPV_READY_TIMEOUT=%q\n' \
            "$CLIENT_DELAY" "$SERVER_GRACE" "$READY_TIMEOUT"
        printf 'PV_SHARES=('
        while read -r share; do
            [ -n "$share" ] && printf 'w%d %q ' $((i++)) "$share"
        done < <(work_shares)
        printf ')\n'
    } >"$LOG_DIR/vm-$vm.conf"
}

# qemu_opt_path PATH: escape commas for QEMU's option syntax.
qemu_opt_path() { echo "${1//,/,,}"; }

# start_reader ROLE STREAM PREFIX: FIFO that QEMU writes one port to; a
# background reader streams it to our stdout (out) or stderr (err).
start_reader() {
    local fifo=$LOG_DIR/$1.$2 prefix=$3
    mkfifo "$fifo"
    if [ "$2" = out ]; then
        if [ -n "$prefix" ]; then sed -u "s/^/$prefix/" <"$fifo" & else cat <"$fifo" & fi
    else
        if [ -n "$prefix" ]; then sed -u "s/^/$prefix/" <"$fifo" >&2 & else cat <"$fifo" >&2 & fi
    fi
    READER_PIDS+=($!)
}

# start_vm VM NCPU MEM "ROLES" [NETDEV_OPTS]: boot one VM in the background.
start_vm() {
    local vm=$1 ncpu=$2 mem=$3 roles=$4 netdev=${5:-} role i=0 share
    local -a args=(
        -name "with-rdma-$vm" -accel tcg -machine q35 -cpu max -smp "$ncpu" -m "$mem"
        -nodefaults -no-user-config -display none -monitor none -no-reboot
        -kernel "$CACHE/vmlinux" -initrd "$CACHE/initramfs.cpio"
        -append "console=ttyS0 loglevel=5 panic=-1 oops=panic pv.vm=$vm 8250.nr_uarts=1 i8042.noaux i8042.nokbd i8042.nopnp random.trust_cpu=on no_timer_check tsc=reliable"
        -chardev "file,id=con,path=$(qemu_opt_path "$LOG_DIR/console-$vm.log")" -serial chardev:con
        -fsdev local,id=fsroot,path=/,security_model=none,readonly=on,multidevs=remap
        -device virtio-9p-pci,fsdev=fsroot,mount_tag=root
        -fsdev "local,id=fsxchg,path=$(qemu_opt_path "$LOG_DIR"),security_model=none,multidevs=remap"
        -device virtio-9p-pci,fsdev=fsxchg,mount_tag=xchg
        -device virtio-serial-pci,id=vser
    )
    while read -r share; do
        [ -n "$share" ] || continue
        args+=(-fsdev "local,id=fsw$i,path=$(qemu_opt_path "$share"),security_model=none,multidevs=remap"
            -device "virtio-9p-pci,fsdev=fsw$i,mount_tag=w$i")
        i=$((i + 1))
    done < <(work_shares)
    for role in $roles; do
        for s in out err; do
            args+=(-chardev "file,id=$role-$s,path=$(qemu_opt_path "$LOG_DIR/$role.$s")"
                -device "virtserialport,bus=vser.0,chardev=$role-$s,name=pv.$role.$s")
        done
    done
    # Distinct MACs: siw derives its GID and rxe its GUIDs from the MAC.
    [ -z "$netdev" ] || args+=(-netdev "$netdev"
        -device "virtio-net-pci,netdev=n0,mac=52:54:00:77:00:0$((${#QEMU_PIDS[@]} + 1))")
    info "starting VM $vm"
    qemu-system-x86_64 "${args[@]}" </dev/null >>"$LOG_DIR/qemu-$vm.log" 2>&1 &
    QEMU_PIDS+=($!)
    if [ -n "$netdev" ]; then
        # When a VM ends, tell the other (a client VM waiting for its server).
        (wait_pid "$!" && : >"$LOG_DIR/vm-ended-$vm") 2>/dev/null &
        AUX_PIDS+=($!)
    fi
}

wait_pid() { while kill -0 "$1" 2>/dev/null; do sleep 0.5; done; }

# start_watchdog: kill the VMs after TIMEOUT seconds.
start_watchdog() {
    (
        local end=$((SECONDS + TIMEOUT))
        while ((SECONDS < end)); do sleep 1; done
        : >"$LOG_DIR/timed-out"
        kill "${QEMU_PIDS[@]}" 2>/dev/null
    ) &
    WATCHDOG_PID=$!
}

# finish_vms: wait for QEMU, stop the watchdog, drain the output readers.
finish_vms() {
    local pid i
    for pid in "${QEMU_PIDS[@]}"; do wait "$pid" || true; done
    kill "$WATCHDOG_PID" 2>/dev/null || true
    wait "$WATCHDOG_PID" 2>/dev/null || true
    # Readers end at EOF once QEMU has closed the FIFOs; one whose FIFO QEMU
    # never opened (QEMU failed to start) would block forever.
    for pid in "${READER_PIDS[@]}"; do
        for ((i = 0; i < 20; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill "$pid" 2>/dev/null || true
    done
    QEMU_PIDS=() READER_PIDS=()
}

# show_logs: the tail of each guest console (and QEMU's own messages).
show_logs() {
    local f
    for f in "$LOG_DIR"/qemu-*.log "$LOG_DIR"/console-*.log; do
        [ -s "$f" ] || continue
        log "---- tail of $f"
        tail -n 40 "$f" | sed 's/\r$//' >&2
    done
    KEEP_LOGS=1
}

# role_status ROLE: the role's exit status, or 125 with the logs if missing.
role_status() {
    local f=$LOG_DIR/rc-$1
    if [ -s "$f" ]; then
        cat "$f"
    else
        echo "$EXIT_HARNESS"
    fi
}

cleanup() {
    local pid
    for pid in "${QEMU_PIDS[@]}" "${READER_PIDS[@]}" "${AUX_PIDS[@]}" $WATCHDOG_PID; do
        kill "$pid" 2>/dev/null || true
    done
    if [ -n "$LOG_DIR" ] && [ -d "$LOG_DIR" ]; then
        if ((KEEP_LOGS)); then
            log "logs: $LOG_DIR"
        else
            rm -rf "$LOG_DIR"
        fi
    fi
}

# vm_outcome ROLES...: exit status of the VM run (after finish_vms).
vm_outcome() {
    if [ -e "$LOG_DIR/timed-out" ]; then
        log "timed out after $TIMEOUT s; VM killed"
        show_logs
        return 124
    fi
    local role missing=0
    for role in "$@"; do
        [ -s "$LOG_DIR/rc-$role" ] || {
            log "the VM ended without an exit status for $role"
            missing=1
        }
    done
    ((missing == 0)) || show_logs
    if ((TWO_HOSTS)); then
        two_host_status "$(role_status server)" "$(role_status client)"
    fi
    return "$(role_status main)"
}

run_single_vm() {
    write_role main "${CMD[@]}"
    write_vm_conf A local "main"
    start_reader main out ""
    start_reader main err ""
    start_vm A 2 "${MEM:-4G}" "main"
}

# Two VMs (1 vCPU each: the JVM) joined by QEMU's UDP socket netdev on
# 127.0.0.1 (see setup_nic in scripts/vm/guest-init.sh for why not namespaces).
run_two_hosts_vms() {
    local pa pb
    read -r pa pb < <(free_udp_ports)
    write_role server bash -c "$SERVER_CMD"
    write_role client bash -c "$CLIENT_CMD"
    write_vm_conf A nic "server" 10.77.0.1 10.77.0.2
    write_vm_conf B nic "client" 10.77.0.2 10.77.0.1
    start_readers_two_hosts
    start_vm A 1 "${MEM:-3G}" "server" "socket,id=n0,udp=127.0.0.1:$pb,localaddr=127.0.0.1:$pa"
    start_vm B 1 "${MEM:-3G}" "client" "socket,id=n0,udp=127.0.0.1:$pa,localaddr=127.0.0.1:$pb"
}

start_readers_two_hosts() {
    local role s
    for role in server client; do
        for s in out err; do start_reader "$role" "$s" "[$role] "; done
    done
}

# free_udp_ports: two distinct UDP ports on 127.0.0.1 not in use.
free_udp_ports() {
    local used p ports=()
    used=$(ss -Hlun 2>/dev/null | awk '{n = split($4, a, ":"); print a[n]}')
    while ((${#ports[@]} < 2)); do
        p=$((20000 + RANDOM % 40000))
        grep -qx "$p" <<<"$used" || [[ " ${ports[*]} " == *" $p "* ]] || ports+=("$p")
    done
    echo "${ports[@]}"
}

run_in_vm() {
    ensure_vm_packages
    KVER=$(kernel_version)
    CACHE=$(ensure_cache "$KVER")
    info "kernel $KVER, cache $CACHE"
    make_log_dir
    trap cleanup EXIT
    trap 'log "interrupted"; exit 130' INT
    trap 'log "terminated"; exit 143' TERM
    local roles=main
    if ((TWO_HOSTS)); then
        run_two_hosts_vms
        roles="server client"
    else
        run_single_vm
    fi
    start_watchdog
    finish_vms
    local rc=0
    # shellcheck disable=SC2086
    vm_outcome $roles || rc=$?
    exit "$rc"
}
