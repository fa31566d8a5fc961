#!/usr/bin/env bash
# Vendor MathJax 3 from the npm registry into book/_vendor/mathjax so the book renders maths offline.
# Keeps the combined tex-chtml component, its fonts, the TeX extensions (autoload), the menu and a11y components.
set -euo pipefail
VERSION=${MATHJAX_VERSION:-3.2.2}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack "mathjax@$VERSION" >/dev/null && tar xzf "mathjax-$VERSION.tgz")
dest=book/_vendor/mathjax
rm -rf "$dest.new" && mkdir -p "$dest.new/output/chtml/fonts" "$dest.new/input/tex"
es5="$tmp/package/es5"
cp "$es5/tex-chtml.js" "$dest.new/"
cp -r "$es5/output/chtml/fonts/woff-v2" "$dest.new/output/chtml/fonts/"
cp -r "$es5/input/tex/extensions" "$dest.new/input/tex/"
cp -r "$es5/ui" "$es5/a11y" "$dest.new/"
cp "$tmp/package/LICENSE" "$dest.new/LICENSE"
echo "mathjax@$VERSION from the npm registry (es5 build; Apache-2.0)" > "$dest.new/VERSION"
rm -rf "$dest" && mv "$dest.new" "$dest"
echo "vendored mathjax@$VERSION into $dest ($(du -sh "$dest" | cut -f1))"
