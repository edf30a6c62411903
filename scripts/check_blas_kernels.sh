#!/bin/bash
# kvbench runs OpenBLAS's Haswell kernels on every CPU with AVX2 and FMA
# unless OPENBLAS_CORETYPE says otherwise (harness/cli/blas_kernels.h), and
# its arguments survive the re-exec that takes. OpenBLAS reports the kernels
# it loaded with OPENBLAS_VERBOSE=2 ("Core: NAME" on stderr, once per load).
# usage: scripts/check_blas_kernels.sh KVBENCH
set -euo pipefail
kvbench=${1:?usage: scripts/check_blas_kernels.sh KVBENCH}
fail() { echo "FAIL: $*" >&2; exit 1; }

last_core() { grep -o 'Core: [A-Za-z0-9]*' | tail -n 1 | cut -d' ' -f2; }

# A library built without DYNAMIC_ARCH names no core: nothing to pin.
probe=$(env -u OPENBLAS_CORETYPE OPENBLAS_VERBOSE=2 "$kvbench" --version 2>&1 >/dev/null | last_core)
[ -n "$probe" ] || { echo "skipped: this OpenBLAS reports no core (not DYNAMIC_ARCH)"; exit 77; }

if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  [ "$probe" = Haswell ] || fail "OPENBLAS_CORETYPE unset: kernels $probe, expected Haswell"
else
  echo "note: no AVX2/FMA here, the library's own choice ($probe) stands"
fi

# The user's choice is kept: no re-exec, one load, their kernels.
mine=$(OPENBLAS_CORETYPE=Prescott OPENBLAS_VERBOSE=2 "$kvbench" --version 2>&1 >/dev/null)
[ "$(printf '%s\n' "$mine" | grep -c 'Core:')" = 1 ] || fail "OPENBLAS_CORETYPE=Prescott: loaded more than once"
[ "$(printf '%s\n' "$mine" | last_core)" = Prescott ] || fail "OPENBLAS_CORETYPE=Prescott was not kept"

# Arguments, spaces and all, reach the re-executed program unchanged: the
# error line names the exact file that was passed.
weird="$(mktemp -d)/a b  'c'.json"
out=$(env -u OPENBLAS_CORETYPE "$kvbench" run --experiment "$weird" 2>&1 >/dev/null) && fail "a missing experiment ran"
case $out in
  *"a b  'c'.json"*) ;;
  *) fail "the re-executed program saw other arguments: $out" ;;
esac
rmdir "$(dirname "$weird")"
echo "ok: kernels $probe unless OPENBLAS_CORETYPE is set; arguments kept"
