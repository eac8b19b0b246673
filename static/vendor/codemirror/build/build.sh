#!/usr/bin/env bash
# Builds ../codemirror.min.js (CodeMirror 6 + Python, one minified IIFE that sets
# window.RankLabEditor) and ../LICENSES.txt from the exact versions in package-lock.json.
# Run it as `make vendor-editor`; needs Node.js and npm, and the npm registry for `npm ci`.
set -euo pipefail
cd "$(dirname "$0")"

npm ci --no-audit --no-fund

meta="$(mktemp)"
trap 'rm -f "$meta"' EXIT
npx --no-install esbuild editor.js --bundle --minify --format=iife --target=es2019 \
  --legal-comments=none --metafile="$meta" --outfile=../codemirror.min.js

# The licence of every package esbuild actually put in the bundle (from its metafile), in name
# order, so the file changes only when the bundled packages do.
node - "$meta" ../LICENSES.txt <<'JS'
const fs = require("fs");
const path = require("path");
const [metaPath, outPath] = process.argv.slice(2);
const meta = JSON.parse(fs.readFileSync(metaPath, "utf8"));
const packages = new Set();
for (const input of Object.keys(meta.inputs)) {
  const match = input.match(/(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (match) packages.add(match[1]);
}
const sections = [...packages].sort().map((name) => {
  const dir = path.join("node_modules", name);
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  const file = fs.readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.(md|txt))?$/i.test(f));
  if (!file) throw new Error(`${name}: no licence file`);
  const text = fs.readFileSync(path.join(dir, file), "utf8").trim();
  return `${"=".repeat(78)}\n${pkg.name}@${pkg.version} (${pkg.license})\n${"=".repeat(78)}\n\n${text}\n`;
});
const header =
  "Licences of the packages bundled into codemirror.min.js (built by\n" +
  "static/vendor/codemirror/build/build.sh from its package-lock.json).\n\n";
fs.writeFileSync(outPath, header + sections.join("\n"));
console.log(`LICENSES.txt: ${packages.size} packages: ${[...packages].sort().join(", ")}`);
JS
