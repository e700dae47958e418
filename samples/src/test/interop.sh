#!/usr/bin/env bash
# Java <-> C interoperability of the ping-pong samples over two "hosts" (two VMs, each with its own
# Soft-RoCE device rxe0, joined by a link): for each kind (rc uc ud srq), the Java server with the
# C client (ibv_<kind>_pingpong) and the C server with the Java client, all with -c (data check).
#
# Usage:  samples/src/test/interop.sh            (builds nothing: run ./mvnw -B install first)
# Environment: INTEROP_KINDS (default "rc uc ud srq"), INTEROP_ITERS (default 200),
#              INTEROP_PROVIDER (default rxe).
# Exits 0 only if every pair ran and both sides of it passed; prints one PASS/FAIL line per pair.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$root"
. scripts/lib.sh
find_java
[[ -x samples/run ]] && ls samples/target/panama-verbs-samples-*.jar >/dev/null 2>&1 \
    || die "samples are not built: run ./mvnw -B install -DskipTests first"

if [[ ${1:-} == --side ]]; then
    # Inside a VM: run this host's half of every pair, in order.
    side=$2
    kinds=(${INTEROP_KINDS:-rc uc ud srq})
    n=${INTEROP_ITERS:-200}
    g=${RDMA_GID_INDEX:-1}
    dev=${RDMA_DEVICE:-rxe0}
    status=0 port=18515
    for kind in "${kinds[@]}"; do
        for java_side in server client; do
            port=$((port + 1))
            common=(-d "$dev" -g "$g" -p "$port" -c -n "$n")
            # A UD message must fit the port's MTU (1024 on Soft-RoCE); the tools' default is 2048.
            [[ $kind == ud ]] && common+=(-s 1024)
            if [[ $side == "$java_side" ]]; then
                cmd=(samples/run "$kind-pingpong" "${common[@]}" --timeout 120)
                who="Java $side"
            else
                cmd=("ibv_${kind}_pingpong" "${common[@]}")
                who="C $side"
            fi
            [[ $side == client ]] && cmd+=("$RDMA_SERVER_IP")
            if [[ $java_side == server ]]; then pair="Java server <- C client"; else pair="C server <- Java client"; fi
            label="$kind-pingpong ($pair), $side side"
            out=$(mktemp)
            for try in $(seq 1 90); do
                set +e
                timeout 300 "${cmd[@]}" >"$out" 2>&1
                rc=$?
                set -e
                # The client starts before this pair's server listens: retry only a refused connection.
                if [[ $side == client && $rc != 0 ]] && grep -q "Couldn't connect to" "$out"; then
                    sleep 2
                    continue
                fi
                break
            done
            sed "s/^/    [$kind $who] /" "$out"
            if (( rc != 0 )); then
                echo "FAIL $label: exit status $rc"; status=1
            elif grep -q 'invalid data' "$out"; then
                echo "FAIL $label: invalid data"; status=1
            elif [[ $who == Java* ]] && ! grep -q "data check: all $n received messages are correct" "$out"; then
                echo "FAIL $label: no data check line"; status=1
            elif ! grep -Eq "^$n iters in [0-9.]+ seconds" "$out"; then
                echo "FAIL $label: no result line"; status=1
            else
                echo "PASS $label"
            fi
            rm -f "$out"
        done
    done
    exit "$status"
fi

self=samples/src/test/interop.sh
exec scripts/with-rdma --provider "${INTEROP_PROVIDER:-rxe}" --timeout 3000 \
    --env INTEROP_KINDS --env INTEROP_ITERS --two-hosts \
    --server "$self --side server" --client "$self --side client"
