#!/bin/bash
# PID 1 of a with-rdma VM, started by the initramfs after switch_root.
#
# The root filesystem is the host's / (9p, read-only) under a tmpfs overlay;
# /.pv is the host's per-run exchange directory (9p, read-write). It holds
#   vm-<VM>.conf     settings for this VM (written by scripts/with-rdma, in
#                    scripts/rdma/vm-runs.sh, as is role-<ROLE>.sh)
#   role-<ROLE>.sh   environment, working directory and command of each role
# and receives
#   rc-<ROLE>        the exit status of each role's command
#   ready-server     (two-host mode) the server command listens
#   dmesg-<VM>.log   the kernel log at power-off
# The commands' stdout/stderr go to virtio serial ports named pv.<ROLE>.out and
# pv.<ROLE>.err, which the host streams to its own stdout/stderr. Everything
# this script prints goes to the serial console, i.e. the host's log file.
#
# No `set -e`: PID 1 must always reach power_off, whatever fails.
set -uo pipefail

PV=/.pv
NET_RXE=10.77.0 # subnet of the rxe link (only ever used inside the VM)
NET_SIW=10.77.1 # subnet of the siw link (rdma_cm maps one IP to one device)

log() {
    local up
    read -r up _ </proc/uptime
    echo "[$up] guest-init: $*"
}

power_off() {
    sync
    dmesg >"$PV/dmesg-${PV_VM:-X}.log" 2>/dev/null
    sync
    /bin/busybox poweroff -f
    echo o >/proc/sysrq-trigger # fallback if busybox is missing
    sleep 30
}

die() {
    log "FATAL: $*"
    power_off
}

vm_name() {
    local arg
    for arg in $(</proc/cmdline); do
        [[ $arg == pv.vm=* ]] && echo "${arg#pv.vm=}"
    done
}

mount_basics() {
    mkdir -p /dev/pts /dev/shm
    mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
    mount -t tmpfs -o mode=1777 tmpfs /dev/shm
    mount -t tmpfs -o mode=1777 tmpfs /tmp
    mount -t tmpfs -o mode=0755 tmpfs /run
    # devtmpfs lacks these; bash process substitution needs /dev/fd.
    ln -sfn /proc/self/fd /dev/fd
    ln -sfn /proc/self/fd/0 /dev/stdin
    ln -sfn /proc/self/fd/1 /dev/stdout
    ln -sfn /proc/self/fd/2 /dev/stderr
    mkdir -p /run/pv
}

# The host root has no modules for the guest kernel: bind the cached, depmod'ed
# tree so that the kernel's autoloader (/sbin/modprobe of the host root) works.
bind_modules() {
    mkdir -p "/lib/modules/$PV_KVER" &&
        mount --bind "$PV_MODDIR" "/lib/modules/$PV_KVER" ||
        die "cannot bind $PV_MODDIR"
}

# Read-write 9p shares (the working tree), mounted at their host paths.
mount_shares() {
    local i tag path
    for ((i = 0; i < ${#PV_SHARES[@]}; i += 2)); do
        tag=${PV_SHARES[i]} path=${PV_SHARES[i + 1]}
        mkdir -p "$path" &&
            mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=mmap \
                "$tag" "$path" || die "cannot mount share $path"
    done
}

basic_system() {
    echo "$PV_HOSTNAME" >/proc/sys/kernel/hostname
    ip link set lo up
    modprobe rdma_ucm || die "modprobe rdma_ucm failed"
    modprobe ib_uverbs || die "modprobe ib_uverbs failed"
}

# add_veth NAME_A NAME_B SUBNET: a veth pair with SUBNET.1 and SUBNET.2.
add_veth() {
    ip link add "$1" type veth peer name "$2" &&
        ip addr add "$3.1/24" dev "$1" && ip addr add "$3.2/24" dev "$2" &&
        ip link set "$1" up && ip link set "$2" up ||
        die "cannot create veth pair $1/$2"
}

# wait_active DEV: the port is ACTIVE (rxe takes ~2 s after link add).
wait_active() {
    local i state=
    for ((i = 0; i < 600; i++)); do
        state=$(cat "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null)
        [[ $state == *ACTIVE* ]] && return 0
        sleep 0.1
    done
    die "$1 port not ACTIVE after 60 s (state: ${state:-none})"
}

# gid_index DEV: the IPv4-mapped RoCE v2 GID (rxe); 0 where there is none (siw).
gid_index() {
    local port=/sys/class/infiniband/$1/ports/1 i t gid type
    for ((t = 0; t < 100; t++)); do
        for gid in "$port"/gids/*; do
            i=${gid##*/}
            type=$(cat "$port/gid_attrs/types/$i" 2>/dev/null) || continue
            if [[ $(<"$gid") == 0000:0000:0000:0000:0000:ffff:* && $type == "RoCE v2" ]]; then
                echo "$i"
                return
            fi
        done
        [[ $1 == siw* ]] && break
        sleep 0.1
    done
    echo 0
}

# rdma_link DEV TYPE NETDEV: add a soft-RDMA device and wait for its port.
rdma_link() {
    rdma link add "$1" type "$2" netdev "$3" ||
        die "rdma link add $1 type $2 netdev $3 failed"
    wait_active "$1"
    log "$1 ($2 on $3) is ACTIVE"
}

# env_lines PREFIX DEV NETDEV IP PEER_IP: export lines describing one device.
env_lines() {
    printf 'export %s_DEVICE=%q %s_PORT=1 %s_GID_INDEX=%q %s_NETDEV=%q %s_IP=%q %s_PEER_IP=%q\n' \
        "$1" "$2" "$1" "$1" "$(gid_index "$2")" "$1" "$3" "$1" "$4" "$1" "$5"
}

# One VM, one role: rxe0 on veth0 and/or siw0 on veth2.
setup_local() {
    local env=/run/pv/env-main
    echo "export RDMA_PROVIDER=$PV_PROVIDER" >"$env"
    if [[ $PV_PROVIDER == rxe || $PV_PROVIDER == both ]]; then
        add_veth veth0 veth1 "$NET_RXE"
        rdma_link rxe0 rxe veth0
        env_lines RDMA_RXE rxe0 veth0 "$NET_RXE.1" "$NET_RXE.2" >>"$env"
    fi
    if [[ $PV_PROVIDER == siw || $PV_PROVIDER == both ]]; then
        add_veth veth2 veth3 "$NET_SIW"
        rdma_link siw0 siw veth2
        env_lines RDMA_SIW siw0 veth2 "$NET_SIW.1" "$NET_SIW.2" >>"$env"
    fi
    if [[ $PV_PROVIDER == siw ]]; then
        env_lines RDMA siw0 veth2 "$NET_SIW.1" "$NET_SIW.2" >>"$env"
    else
        env_lines RDMA rxe0 veth0 "$NET_RXE.1" "$NET_RXE.2" >>"$env"
    fi
}

# One of two VMs joined by a virtio-net NIC (QEMU UDP socket link). Two VMs
# rather than two network namespaces of one: rxe's UDP socket lives in the
# initial namespace only, and a wildcard rdma_cm listen on siw binds a socket
# for every siw device in the listener's namespace, which fails at random
# when the other namespace's device is visible.
setup_nic() {
    modprobe virtio_net || die "modprobe virtio_net failed"
    local n nic= i
    for ((i = 0; i < 100; i++)); do
        for n in /sys/class/net/*; do
            [ -e "$n/device" ] && nic=${n##*/}
        done
        [ -n "$nic" ] && break
        sleep 0.1
    done
    [ -n "$nic" ] || die "no NIC found"
    ip addr add "$PV_NIC_IP/24" dev "$nic" && ip link set "$nic" up ||
        die "cannot configure $nic"
    rdma_link "${PV_PROVIDER}0" "$PV_PROVIDER" "$nic"
    two_host_env "${PV_ROLES[0]}" "${PV_PROVIDER}0" "$nic" "$PV_NIC_IP" "$PV_NIC_PEER_IP"
}

# two_host_env ROLE DEV NETDEV IP PEER_IP
two_host_env() {
    local env=/run/pv/env-$1 server_ip=$4 client_ip=$5
    [ "$1" = client ] && server_ip=$5 client_ip=$4
    {
        echo "export RDMA_PROVIDER=$PV_PROVIDER RDMA_ROLE=$1"
        echo "export RDMA_SERVER_IP=$server_ip RDMA_CLIENT_IP=$client_ip"
        env_lines RDMA "$2" "$3" "$4" "$5"
        env_lines "RDMA_${PV_PROVIDER^^}" "$2" "$3" "$4" "$5"
    } >"$env"
}

# port NAME: the device node of the virtio serial port pv.NAME.
port() {
    local p
    for p in /sys/class/virtio-ports/*; do
        if [ "$(cat "$p/name" 2>/dev/null)" = "pv.$1" ]; then
            echo "/dev/${p##*/}"
            return
        fi
    done
    die "no virtio serial port pv.$1"
}

# run_role ROLE CPU: run the role's command pinned to CPU (the JVM crashes
# under multi-threaded TCG when its threads spread over vCPUs) and write its
# exit status to $PV/rc-ROLE.
run_role() {
    local role=$1 cpu=$2 out err rc
    out=$(port "$role.out") err=$(port "$role.err")
    (
        set +u
        ulimit -l unlimited
        # shellcheck disable=SC1090
        source "$PV/role-$role.sh" && source "/run/pv/env-$role" ||
            exit 125
        export RDMA_IN_VM=1
        # The VM's CPU is emulated (TCG): samples/run picks its JIT flags for that.
        export SAMPLES_EMULATED_CPU=1
        # A command that ends its own VM (e.g. resets it through /proc/sysrq-trigger to act as a
        # host that dies) writes its exit status here first.
        export RDMA_STATUS_FILE=$PV/rc-$role
        cd "$PV_CWD" || {
            echo "with-rdma: cannot cd to $PV_CWD in the VM" >&2
            exit 125
        }
        exec taskset -c "$cpu" "${PV_CMD[@]}"
    ) </dev/null >"$out" 2>"$err" &
    echo $! >"/run/pv/pid-$role"
    wait $!
    rc=$?
    echo "$rc" >"$PV/rc-$role"
    log "$role exited with status $rc"
}

# server_listening: a TCP socket or an rdma_cm ID is listening (the server's
# VM runs nothing else that listens).
server_listening() {
    [ -n "$(ss -Hltn 2>/dev/null)" ] ||
        rdma resource show cm_id 2>/dev/null | grep -q 'state LISTEN'
}

# signal_ready: write $PV/ready-server once the server listens, or after
# PV_READY_TIMEOUT seconds (a server that listens some other way).
signal_ready() {
    local end=$((SECONDS + PV_READY_TIMEOUT))
    until server_listening || ((SECONDS >= end)) || [ -e "$PV/rc-server" ]; do
        sleep 0.2
    done
    log "server ready"
    : >"$PV/ready-server"
}

# wait_for_server: the client starts once the server listens (or has ended),
# plus a short delay; give up if the server's VM ended without saying so.
wait_for_server() {
    until [ -e "$PV/ready-server" ]; do
        if [ -e "$PV/vm-ended-A" ]; then
            log "the server's VM ended before the server was ready"
            return 1
        fi
        sleep 0.2
    done
    sleep "$PV_CLIENT_DELAY"
}

# supervise_server: wait for the server; once the client has finished, allow
# it PV_SERVER_GRACE seconds, then kill it (a server left waiting for a client
# that failed would otherwise run until the global timeout).
supervise_server() {
    local pid deadline=
    until [ -e "$PV/rc-server" ]; do
        if [ -z "$deadline" ] && [ -e "$PV/rc-client" ]; then
            deadline=$((SECONDS + PV_SERVER_GRACE))
        fi
        if [ -n "$deadline" ] && ((SECONDS >= deadline)); then
            pid=$(cat /run/pv/pid-server 2>/dev/null)
            log "server still running ${PV_SERVER_GRACE}s after the client ended: killing it"
            echo "with-rdma: server still running ${PV_SERVER_GRACE}s after the client ended; killed" \
                >"$(port server.err)"
            [ -n "$pid" ] && kill -TERM "$pid" && sleep 3 && kill -KILL "$pid"
            deadline=$((SECONDS + 3600))
        fi
        sleep 0.2
    done 2>/dev/null
}

run_server() {
    run_role server 0 &
    local job=$!
    signal_ready
    supervise_server
    wait "$job"
}

run_client() {
    if wait_for_server; then
        run_role client 0
    else
        echo "with-rdma: the server's VM ended before the server was ready" >"$(port client.err)"
        echo 125 >"$PV/rc-client"
    fi
}

main() {
    # Also on a script error (e.g. set -u): PID 1 exiting would panic.
    trap power_off EXIT
    mount_basics
    PV_VM=$(vm_name)
    # shellcheck disable=SC1090
    source "$PV/vm-$PV_VM.conf" || die "no $PV/vm-$PV_VM.conf"
    log "started"
    bind_modules
    mount_shares
    log "mounted"
    basic_system
    log "basic system up"
    case $PV_SETUP in
    local)
        setup_local
        run_role main 0
        ;;
    nic)
        setup_nic
        if [ "${PV_ROLES[0]}" = server ]; then run_server; else run_client; fi
        ;;
    *) die "unknown setup $PV_SETUP" ;;
    esac
    power_off
}

main "$@"
