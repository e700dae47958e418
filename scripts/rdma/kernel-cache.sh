# shellcheck shell=bash
# The kernel cache of scripts/with-rdma's VMs: Debian's kernel and modules,
# an out-of-tree siw.ko built from linux-source, the uncompressed vmlinux and
# the initramfs (busybox-static, the root-mounting modules, scripts/vm/
# initramfs-init). Sourced by scripts/with-rdma (not run on its own).
#
# Expects from the caller: scripts/lib.sh (log, die, can_be_root, apt_update),
# VM_DIR (scripts/vm), ensure_vm_packages (scripts/rdma/host-packages.sh).
# Entry points: kernel_version, and ensure_cache KVER (prints the entry's path).
#
# The cache key (cache_dir) hashes scripts/vm/initramfs-init, CACHE_FORMAT and
# INITRAMFS_MODULES, not the scripts: editing these files rebuilds nothing.

# Bump when the cached build (not just the scripts read at run time) changes.
CACHE_FORMAT=1
# Debian kernel flavour: -amd64 has rdma_rxe and 9p (-cloud has neither).
KFLAVOUR=amd64
INITRAMFS_MODULES=(virtio_pci 9pnet_virtio 9p overlay virtio_console)

cache_root() { echo "${PANAMA_VERBS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/panama-verbs}"; }

# kernel_version: the ABI name of Debian's current kernel, e.g. 6.1.0-57-amd64.
kernel_version() {
    if [ -n "${PANAMA_VERBS_KVER:-}" ]; then
        echo "$PANAMA_VERBS_KVER"
        return
    fi
    # apt-cache takes ~1 s: reuse the answer until the package lists change.
    local v memo
    memo=$(cache_root)/kernel-version
    if [ -s "$memo" ] && [ -z "$(find /var/lib/apt/lists -maxdepth 1 -newer "$memo" \
        -name '*Packages*' -print -quit 2>/dev/null)" ]; then
        cat "$memo"
        return
    fi
    v=$(apt_kernel_version) || { can_be_root && apt_update && v=$(apt_kernel_version); } || true
    if [ -z "$v" ]; then
        # No package lists: fall back to the newest kernel already cached.
        v=$(find "$(cache_root)" -maxdepth 2 -name .ready -printf '%h\n' 2>/dev/null |
            sed 's|.*/||; s|-f[0-9a-f]*$||' | sort -V | tail -1)
        [ -n "$v" ] || die "cannot find Debian's linux-image-$KFLAVOUR (no package lists? run apt-get update)"
    elif mkdir -p "$(cache_root)" 2>/dev/null; then
        echo "$v" >"$memo.$$" && mv "$memo.$$" "$memo" || true
    fi
    echo "$v"
}

apt_kernel_version() {
    apt-cache depends "linux-image-$KFLAVOUR" 2>/dev/null |
        sed -n "s/^ *Depends: linux-image-\(.*-$KFLAVOUR\)\$/\1/p" | head -1 | grep .
}

# cache_dir KVER: the cache entry, keyed by kernel and by what is baked in.
cache_dir() {
    local key
    key=$(cat "$VM_DIR/initramfs-init" <(echo "$CACHE_FORMAT ${INITRAMFS_MODULES[*]}") |
        sha256sum | cut -c1-10)
    echo "$(cache_root)/$1-f$key"
}

# ensure_cache KVER: build the cache entry unless present; print its path.
ensure_cache() {
    local kver=$1 dir root
    dir=$(cache_dir "$kver")
    [ -e "$dir/.ready" ] && echo "$dir" && return
    root=$(cache_root)
    mkdir -p "$root" || die "cannot create cache dir $root"
    ensure_vm_packages build
    (
        flock 9
        [ -e "$dir/.ready" ] || build_cache "$kver" "$dir"
    ) 9>"$root/.lock" || exit
    echo "$dir"
}

build_cache() {
    local kver=$1 dir=$2 tmp t0=$SECONDS
    log "building the VM kernel cache for $kver in $dir (first run; about a minute)"
    tmp=$dir.tmp.$$
    rm -rf "$tmp"
    mkdir -p "$tmp/debs" "$tmp/build"
    (
        set -e
        fetch_debs "$kver" "$tmp/debs"
        unpack_kernel "$kver" "$tmp"
        build_siw "$kver" "$tmp"
        depmod -b "$tmp/root" "$kver"
        build_initramfs "$kver" "$tmp"
        rm -rf "$tmp/debs" "$tmp/build"
    ) >"$tmp.log" 2>&1 || {
        tail -n 30 "$tmp.log" >&2
        die "building the cache failed (log: $tmp.log)"
    }
    mv "$tmp.log" "$tmp/build.log"
    prune_cache "$kver"
    mv "$tmp" "$dir"
    touch "$dir/.ready"
    log "cache ready after $((SECONDS - t0)) s"
}

# prune_cache KVER: drop finished entries of other kernels/formats (~500 MB each).
prune_cache() {
    local d
    for d in "$(cache_root)"/*-f*; do
        [ -e "$d/.ready" ] && [ "$d" != "$(cache_dir "$1")" ] && rm -rf "$d"
    done
    return 0
}

# fetch_debs KVER DIR: download (never install) the kernel packages.
fetch_debs() {
    local kver=$1 dir=$2 base=${1%-"$KFLAVOUR"} series
    series=$(echo "$kver" | cut -d. -f1,2)
    local -a pkgs=("linux-image-$kver-unsigned" "linux-headers-$kver"
        "linux-headers-$base-common" "linux-kbuild-$series" "linux-source-$series")
    # The signed and unsigned images have the same content; take either.
    apt-cache show "${pkgs[0]}" >/dev/null 2>&1 || pkgs[0]=linux-image-$kver
    (cd "$dir" && apt-get download "${pkgs[@]}")
}

# unpack_kernel KVER DIR: DIR/root (modules), DIR/vmlinux.
unpack_kernel() {
    local kver=$1 dir=$2
    dpkg -x "$dir"/debs/linux-image-*.deb "$dir/root"
    extract_vmlinux "$dir/root/boot/vmlinuz-$kver" "$dir/vmlinux"
    rm -f "$dir/root/boot/vmlinuz-$kver"
}

# extract_vmlinux VMLINUZ OUT: QEMU boots the uncompressed ELF (PVH entry)
# much faster than the bzImage, which decompresses itself under TCG.
extract_vmlinux() {
    local in=$1 out=$2 magic off tool
    for magic in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
        tool=${magic%%:*}
        for off in $(LC_ALL=C grep -obUaP "${magic#*:}" "$in" | cut -d: -f1); do
            # Trailing data after the stream is expected; judge by the result.
            tail -c +$((off + 1)) "$in" | "$tool" -dc 2>/dev/null >"$out" || true
            if [ "$(head -c 4 "$out" | od -An -c | tr -d ' ')" = '177ELF' ]; then
                return 0
            fi
        done
    done
    echo "cannot extract vmlinux from $in" >&2
    return 1
}

# build_siw KVER DIR: Debian's kernel lacks siw; build it out of tree from
# linux-source against the unpacked headers (nothing is installed on the host).
build_siw() {
    local kver=$1 dir=$2 b=$2/build src hdr
    for deb in "$dir"/debs/linux-{headers,kbuild,source}-*.deb; do
        dpkg -x "$deb" "$b"
    done
    hdr=$b/usr/src/linux-headers-$kver
    # The headers' Makefile includes the -common tree by absolute /usr/src path.
    sed -i "s|^include /usr/src/|include $b/usr/src/|" "$hdr/Makefile"
    src=$b/siw
    mkdir -p "$src"
    tar -xJf "$b"/usr/src/linux-source-*.tar.xz -C "$src" --strip-components=5 \
        --wildcards '*/drivers/infiniband/sw/siw/*'
    make -C "$hdr" M="$src" CONFIG_RDMA_SIW=m -j"$(nproc)" modules
    mkdir -p "$dir/root/lib/modules/$kver/updates"
    cp "$src/siw.ko" "$dir/root/lib/modules/$kver/updates/"
}

# build_initramfs KVER DIR: busybox-static, the modules needed to mount the
# root (dependency order from modprobe), and scripts/vm/initramfs-init.
build_initramfs() {
    local kver=$1 dir=$2 t=$2/build/initramfs ko name
    mkdir -p "$t/bin" "$t/modules"
    cp /bin/busybox "$t/bin/busybox"
    cp "$VM_DIR/initramfs-init" "$t/init"
    chmod 755 "$t/init"
    # One module per modprobe call: further arguments would be parameters.
    for ko in "${INITRAMFS_MODULES[@]}"; do
        modprobe -d "$dir/root" -S "$kver" --show-depends "$ko"
    done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' |
        while read -r ko; do
            name=${ko##*/}
            case $ko in
            *.xz) xz -dc "$ko" >"$t/modules/${name%.xz}" && name=${name%.xz} ;;
            *.zst) zstd -dc "$ko" >"$t/modules/${name%.zst}" && name=${name%.zst} ;;
            *) cp "$ko" "$t/modules/$name" ;;
            esac
            echo "$name" >>"$t/modules/order"
        done
    (cd "$t" && find . | cpio -o -H newc --quiet) >"$dir/initramfs.cpio"
}
