# Shell functions shared by the project's scripts. Source it:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Works under `set -euo pipefail`. Messages go to stderr.

# The repository root (the directory above scripts/).
PANAMA_VERBS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The packages the build and the tests need on a Debian 12 host (scripts/with-rdma installs
# what the VM itself needs: scripts/rdma/host-packages.sh).
HOST_PACKAGES=(gcc libibverbs-dev librdmacm-dev ibverbs-providers rdma-core ibverbs-utils rdmacm-utils perftest
               ca-certificates curl unzip)

# log MSG...: prints MSG on stderr, after $LOG_PREFIX (default none; e.g. "with-rdma: ").
log() { printf '%s%s\n' "${LOG_PREFIX:-}" "$*" >&2; }
# die MSG...: logs "error: MSG" and exits with $DIE_STATUS (default 1; scripts/with-rdma: 125).
die() { log "error: $*"; exit "${DIE_STATUS:-1}"; }

# _java_major DIR: prints the major version of the JDK in DIR (from DIR/release), or nothing
# when DIR is not a JDK (it needs bin/java, bin/javac and a release file).
_java_major() {
    local dir=$1 version
    [[ -x $dir/bin/java && -x $dir/bin/javac && -r $dir/release ]] || return 0
    version=$(sed -n 's/^JAVA_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$dir/release" | head -n 1)
    version=${version#1.}          # 1.8.0 -> 8.0
    version=${version%%[!0-9]*}    # 25.0.3 -> 25, 22-ea -> 22
    [[ -n $version ]] && printf '%s\n' "$version"
    return 0
}

# find_java: makes JAVA_HOME point at a JDK 22 or newer and puts its bin/ first on PATH.
# Uses $JAVA_HOME when that is one; otherwise the newest such JDK under /usr/lib/jvm.
# Fails with a message saying what to install otherwise.
find_java() {
    local min=22 major best="" best_major=0 dir
    if [[ -n ${JAVA_HOME:-} ]]; then
        major=$(_java_major "$JAVA_HOME")
        if [[ -n $major ]] && (( major >= min )); then
            export JAVA_HOME
            export PATH="$JAVA_HOME/bin:$PATH"
            return 0
        fi
        log "JAVA_HOME=$JAVA_HOME is not a JDK $min+ (version: ${major:-none}); looking in /usr/lib/jvm"
    fi
    for dir in /usr/lib/jvm/*/; do
        dir=${dir%/}
        major=$(_java_major "$dir")
        if [[ -n $major ]] && (( major >= min && major > best_major )); then
            best=$dir best_major=$major
        fi
    done
    if [[ -z $best ]]; then
        die "no JDK $min or newer found (JAVA_HOME is ${JAVA_HOME:-unset}; nothing suitable in /usr/lib/jvm).
       panama-verbs needs the Foreign Function and Memory API of Java 22+. Install one, e.g.
       Eclipse Temurin 25 (https://adoptium.net/installation/linux/: apt-get install temurin-25-jdk),
       and set JAVA_HOME to it."
    fi
    export JAVA_HOME=$best
    export PATH="$JAVA_HOME/bin:$PATH"
    log "using JDK $best_major at $JAVA_HOME"
}

# can_be_root: true when this shell is root or may use passwordless sudo.
can_be_root() { (( EUID == 0 )) || { command -v sudo >/dev/null && sudo -n true 2>/dev/null; }; }

# as_root CMD...: runs CMD as root (directly, or through sudo -n); returns 3 when it cannot.
as_root() {
    if (( EUID == 0 )); then
        "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo -n "$@"
    else
        return 3
    fi
}

_APT_UPDATED=
# apt_update: runs `apt-get update` as root, once per shell (apt-get's output goes to stderr).
apt_update() {
    [[ -z $_APT_UPDATED ]] || return 0
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 || return
    _APT_UPDATED=1
}

# ensure_packages PKG...: installs the Debian packages that are not installed yet, with apt-get
# (as root, or through sudo -n), running `apt-get update` once first. apt-get's output goes to
# stderr, so that stdout stays the caller's.
ensure_packages() {
    local absent=() pkg
    for pkg in "$@"; do
        if [[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null) != "install ok installed" ]]; then
            absent+=("$pkg")
        fi
    done
    (( ${#absent[@]} == 0 )) && return 0
    if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
        die "missing packages: ${absent[*]}; this script installs them with apt-get (Debian 12), which is not here. Install their equivalents by hand."
    fi
    can_be_root || die "missing packages: ${absent[*]}; installing them needs root. Run: sudo apt-get install ${absent[*]}"
    log "installing: ${absent[*]}"
    apt_update || die "apt-get update failed; cannot install ${absent[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${absent[@]}" >&2 \
        || die "apt-get install ${absent[*]} failed"
}
