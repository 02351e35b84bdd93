// Bundle each test with `vscode` and the language client replaced by small stubs, so
// `node --test` runs the real extension code without an editor.
import { build } from "esbuild";
import { readdirSync, rmSync } from "node:fs";

rmSync("out-test", { recursive: true, force: true });
const entryPoints = readdirSync("test")
  .filter((f) => f.endsWith(".test.ts"))
  .map((f) => `test/${f}`);

await build({
  entryPoints,
  bundle: true,
  outdir: "out-test",
  outExtension: { ".js": ".cjs" },
  platform: "node",
  format: "cjs",
  target: "node20",
  alias: {
    vscode: "./test/stubs/vscode.ts",
    "vscode-languageclient/node": "./test/stubs/languageclient.ts",
  },
  logLevel: "warning",
});
