// Bundle the extension (vscode stays external: the editor provides it).
import { build } from "esbuild";

await build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile: "dist/extension.js",
  platform: "node",
  format: "cjs",
  target: "node18",
  external: ["vscode"],
  sourcemap: true,
  minify: process.argv.includes("--minify"),
  logLevel: "info",
});

// The conversation view's webview script (runs in the webview, not in the extension host).
await build({
  entryPoints: ["src/chat/webview.ts"],
  bundle: true,
  outfile: "dist/chat.js",
  platform: "browser",
  format: "iife",
  target: "es2020",
  minify: process.argv.includes("--minify"),
  logLevel: "info",
});
