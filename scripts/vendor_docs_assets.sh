#!/usr/bin/env bash
# Re-vendor the docs site's JavaScript libraries from the npm registry into docs/assets/vendor/.
#
# The site must work offline, so KaTeX (maths), mermaid (diagrams) and iframe-worker (site search
# from file://) ship with it instead of being fetched from a CDN. To upgrade one, change its version
# below, run this script from anywhere, rebuild (`nox -s docs-browser`) and commit the result.
set -euo pipefail

KATEX=katex@0.19.1
MERMAID=mermaid@11.17.2
IFRAME_WORKER=iframe-worker@1.0.4

root="$(cd "$(dirname "$0")/.." && pwd)"
vendor="$root/docs/assets/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$work"
for spec in "$KATEX" "$MERMAID" "$IFRAME_WORKER"; do
    name="${spec%@*}"
    mkdir -p "$name"
    tar -xzf "$(npm pack --silent "$spec")" -C "$name"
done

rm -rf "$vendor"
mkdir -p "$vendor/katex" "$vendor/mermaid" "$vendor/iframe-worker"
cp katex/package/dist/katex.min.js katex/package/dist/katex.min.css katex/package/LICENSE "$vendor/katex/"
cp -r katex/package/dist/fonts "$vendor/katex/fonts"
cp mermaid/package/dist/mermaid.min.js mermaid/package/LICENSE "$vendor/mermaid/"
cp iframe-worker/package/shim/index.js "$vendor/iframe-worker/shim.js"
cp iframe-worker/package/LICENSE "$vendor/iframe-worker/"
printf '%s\n' "$KATEX" "$MERMAID" "$IFRAME_WORKER" > "$vendor/VERSIONS.txt"
echo "vendored into $vendor:"
cat "$vendor/VERSIONS.txt"
