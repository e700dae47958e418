#!/usr/bin/env bash
# Java <-> C interoperability over the connection manager between two "hosts" (two VMs, each with its
# own device, joined by a link), on Soft-RoCE and on SoftiWARP (iWARP connects only through rdma_cm):
# rping (rdmacm-utils) Java server with the C client and C server with the Java client, both with -V
# (data check), and write-lat -R with perftest's ib_write_lat -R the same two ways.
#
# Usage:  samples/src/test/cm-interop.sh         (builds nothing: run ./mvnw -B install first)
# Environment: CM_INTEROP_PROVIDERS (default "rxe siw"), CM_INTEROP_COUNT (default 20).
# Exits 0 only if every pair ran and both sides passed; prints one PASS/FAIL line per pair and side.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$root"
. scripts/lib.sh
find_java
[[ -x samples/run ]] && ls samples/target/panama-verbs-samples-*.jar >/dev/null 2>&1 \
    || die "samples are not built: run ./mvnw -B install -DskipTests first"

if [[ ${1:-} == --side ]]; then
    # Inside a VM: this host's half of every pair, in order.
    side=$2
    n=${CM_INTEROP_COUNT:-20}
    status=0 port=7300
    dev=${RDMA_DEVICE:-rxe0}
    for tool in rping write-lat; do
    for java_side in server client; do
        port=$((port + 1))
        if [[ $tool == rping ]]; then
            if [[ $side == server ]]; then
                flags=(-s -a "$RDMA_SERVER_IP" -p "$port" -C "$n" -v)
            else
                flags=(-c -a "$RDMA_SERVER_IP" -p "$port" -C "$n" -v -V)
            fi
            c_tool=(rping)
        else
            flags=(-R -d "$dev" -p "$port" -n 200)
            [[ $side == client ]] && flags+=("$RDMA_SERVER_IP")
            c_tool=(ib_write_lat -F)
        fi
        if [[ $side == "$java_side" ]]; then
            cmd=(samples/run "$tool" "${flags[@]}") who="Java $side"
        else
            cmd=("${c_tool[@]}" "${flags[@]}") who="C $side"
        fi
        if [[ $java_side == server ]]; then pair="Java server <- C client"; else pair="C server <- Java client"; fi
        label="$tool $RDMA_PROVIDER ($pair), $side side"
        out=$(mktemp)
        for try in $(seq 1 30); do
            # The client may start before this pair's server listens: give it a moment, and retry
            # a refused connection (rxe: REJECTED; siw: ECONNREFUSED, on which C rping hangs).
            [[ $side == client ]] && sleep 3
            set +e
            timeout "$([[ $side == client ]] && echo 90 || echo 300)" "${cmd[@]}" >"$out" 2>&1
            rc=$?
            set -e
            if [[ $side == client && $rc != 0 ]] && grep -Eqi "REJECTED|refused|Unexpected CM event|Unable to" "$out"; then
                continue
            fi
            break
        done
        sed "s/^/    [$RDMA_PROVIDER $who] /" "$out"
        if [[ $tool == rping ]]; then
            # rping -v: the client prints "ping data: ...", the server "server ping data: ...".
            prefix=$([[ $side == server ]] && echo "server " || true)
            lines=$(grep -c "^${prefix}ping data: rdma-ping-" "$out" || true)
            want=$n
        else
            # perftest's result row for 2 bytes and 200 iterations.
            lines=$(grep -Ec '^ 2 +200 +[0-9]+\.[0-9]+' "$out" || true)
            want=1
        fi
        if (( rc != 0 )); then
            echo "FAIL $label: exit status $rc"; status=1
        elif grep -q 'data mismatch' "$out"; then
            echo "FAIL $label: data mismatch"; status=1
        elif (( lines != want )); then
            echo "FAIL $label: $lines result lines, expected $want"; status=1
        else
            echo "PASS $label"
        fi
        rm -f "$out"
    done
    done
    exit "$status"
fi

self=samples/src/test/cm-interop.sh
status=0
for provider in ${CM_INTEROP_PROVIDERS:-rxe siw}; do
    scripts/with-rdma --provider "$provider" --timeout 1200 --env CM_INTEROP_COUNT --two-hosts \
        --server "$self --side server" --client "$self --side client" || status=1
done
exit "$status"
