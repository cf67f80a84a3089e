// Regenerates src/schema.ts, the API's types, from hangar's OpenAPI document with the pinned
// openapi-typescript (`npm run generate`); `--check` only compares, and fails when the
// checked-in file differs from what the document gives (`npm run check-schema`; hangar's
// tests run it against the live document, so the types cannot drift from the API).
//
// The document is HANGAR_OPENAPI (a file, or a hangar's /api/v1/external/openapi.json URL)
// when set, else what ../../scripts/openapi_json.py prints, run by HANGAR_PYTHON, else by the
// checkout's .venv/bin/python (./dev makes it), else by python3.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pkg = resolve(here, "..");
const checkout = resolve(pkg, "..", "..");
const target = join(pkg, "src", "schema.ts");
const check = process.argv.includes("--check");

function python() {
  if (process.env.HANGAR_PYTHON) return process.env.HANGAR_PYTHON;
  const venv = join(checkout, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

const scratch = mkdtempSync(join(tmpdir(), "hangar-client-schema-"));
try {
  let source = process.env.HANGAR_OPENAPI;
  if (!source) {
    source = join(scratch, "openapi.json");
    const script = join(checkout, "scripts", "openapi_json.py");
    writeFileSync(source, execFileSync(python(), [script], { cwd: checkout, maxBuffer: 64 << 20 }));
  }
  const out = join(scratch, "schema.ts");
  const cli = join(pkg, "node_modules", "openapi-typescript", "bin", "cli.js");
  execFileSync(process.execPath, [cli, source, "--output", out], { stdio: ["ignore", "ignore", "inherit"] });
  const made = readFileSync(out, "utf8");
  if (check) {
    const kept = existsSync(target) ? readFileSync(target, "utf8") : "";
    if (kept !== made) {
      console.error("src/schema.ts differs from the OpenAPI document: run `npm run generate`");
      process.exit(1);
    }
    console.log("src/schema.ts matches the OpenAPI document");
  } else {
    writeFileSync(target, made);
    console.log("wrote src/schema.ts");
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
