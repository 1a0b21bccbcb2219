#!/usr/bin/env bash
# Print the CPython interpreters CI tests on besides python3: the oldest (3.11,
# the floor in pyproject.toml) and the newest 3.x this machine has, one path a
# line, skipping any whose version is python3's own.  They are looked for on
# PATH as python3.N and among pyenv's installed versions (pyenv's shims refuse
# a version that is not selected, so its versions/ directory is read instead).
# Exits 1 when either end cannot be found.
set -euo pipefail
declare -A found=()
consider() {
    local minor
    minor=$("$1" -c 'import sys; print(sys.version_info[1] if sys.version_info[0] == 3 else 0)' \
        2>/dev/null) || return 0
    [ "$minor" -ge 11 ] && [ -z "${found[$minor]:-}" ] && found[$minor]=$1
    return 0
}
for minor in $(seq 11 20); do
    for candidate in "/usr/local/bin/python3.$minor" "/usr/bin/python3.$minor"; do
        if [ -x "$candidate" ]; then consider "$candidate"; fi
    done
done
root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
for candidate in "$root"/versions/3.*/bin/python3; do
    if [ -x "$candidate" ]; then consider "$candidate"; fi
done
mine=$(python3 -c 'import sys; print(sys.version_info[1])')
minors=$(printf '%s\n' "${!found[@]}" | sort -n)
oldest=$(echo "$minors" | head -n 1)
newest=$(echo "$minors" | tail -n 1)
if [ "$oldest" != 11 ] || [ -z "$newest" ]; then
    echo "pythons.sh: need CPython 3.11 and a newer 3.x; found: ${minors//$'\n'/ }" >&2
    exit 1
fi
for minor in $(echo -e "$oldest\n$newest" | sort -un); do
    [ "$minor" = "$mine" ] || echo "${found[$minor]}"
done
