#!/usr/bin/env bash
# cmake --install puts weft_torch where the interpreter looks under the prefix
# (lib/python3.X/dist-packages); imported from there, without the build tree and without
# LD_LIBRARY_PATH (its RPATH finds libweft.so), it runs a one-rank group.
set -euo pipefail
build=$1 python=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
package=$(echo "$work"/prefix/lib/python3*/dist-packages/weft_torch)
[[ -f "$package/__init__.py" ]] || { echo "weft_torch is not installed under $work/prefix"; exit 1; }
ls "$package"/_C.*.so >/dev/null
cd "$work"
env -u LD_LIBRARY_PATH PYTHONPATH="$(dirname "$package")" "$python" - "$work" <<'PY'
import sys
import torch
import torch.distributed as dist
import weft_torch
assert weft_torch.__file__.startswith(sys.argv[1]), weft_torch.__file__
dist.init_process_group("weft", init_method=f"file://{sys.argv[1]}/store", rank=0, world_size=1)
t = torch.arange(5, dtype=torch.float32)
dist.all_reduce(t)
assert torch.equal(t, torch.arange(5, dtype=torch.float32)), t
dist.destroy_process_group()
print("installed weft_torch", weft_torch.weft_version(), "from", weft_torch.__file__)
PY
