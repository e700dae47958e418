# Shell functions shared by the project's scripts. Source it:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Works under `set -euo pipefail`. Messages go to stderr.

# The repository root (the directory above scripts/).
PANAMA_VERBS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The packages the build and the tests need on a Debian 12 host (scripts/with-rdma installs
# what the VM itself needs).
HOST_PACKAGES=(gcc libibverbs-dev librdmacm-dev ibverbs-providers rdma-core ibverbs-utils perftest
               ca-certificates curl unzip)

log() { printf '%s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

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

_APT_UPDATED=
# ensure_packages PKG...: installs the Debian packages that are not installed yet, with apt-get
# (as root, or through sudo -n), running `apt-get update` once first.
ensure_packages() {
    local missing=() pkg sudo=()
    for pkg in "$@"; do
        if [[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null) != "install ok installed" ]]; then
            missing+=("$pkg")
        fi
    done
    (( ${#missing[@]} == 0 )) && return 0
    if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
        die "missing packages: ${missing[*]}; this script installs them with apt-get (Debian 12), which is not here. Install their equivalents by hand."
    fi
    if (( EUID != 0 )); then
        if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
            sudo=(sudo -n)
        else
            die "missing packages: ${missing[*]}; installing them needs root. Run: sudo apt-get install ${missing[*]}"
        fi
    fi
    log "installing: ${missing[*]}"
    if [[ -z $_APT_UPDATED ]]; then
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q \
            || die "apt-get update failed; cannot install ${missing[*]}"
        _APT_UPDATED=1
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
        || die "apt-get install ${missing[*]} failed"
}
