// An ACP client built on the official TypeScript SDK (@agentclientprotocol/sdk), driven by
// pytest (tests/acp/test_acp.py) one JSON line at a time:
//
//   node driver.mjs -- <agent command...>
//
// stdin, one command a line:
//   {"op": "request", "id": n, "method": "...", "params": {...}}   → {"type": "response"|"error", "id": n, ...}
//   {"op": "notify", "method": "...", "params": {...}}
//   {"op": "permissions", "answers": ["deny", "once", ...]}       option ids, one per request
//   {"op": "buffer", "path": "/abs/file", "text": "..."}           an unsaved editor buffer
//   {"op": "exit"}
// stdout, one event a line: every session/update, permission request, fs read and write,
// and the agent process's exit ({"type": "agent_exit", "code": …}).
import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const argv = process.argv.slice(2);
const command = argv[0] === "--" ? argv.slice(1) : argv;
const agent = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const out = (event) => process.stdout.write(JSON.stringify(event) + "\n");
out({ type: "agent_pid", pid: agent.pid });
agent.on("exit", (code, signal) => out({ type: "agent_exit", code, signal }));

const answers = [];
const buffers = new Map();

const app = acp
  .client({ name: "ndomo-tests" })
  .onNotification(acp.methods.client.session.update, (ctx) => {
    out({ type: "update", params: ctx.params });
  })
  .onRequest(acp.methods.client.session.requestPermission, (ctx) => {
    const answer = answers.shift();
    out({ type: "permission", params: ctx.params, answer: answer ?? null });
    if (answer === undefined) return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: answer } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, async (ctx) => {
    const { path } = ctx.params;
    const unsaved = buffers.get(path);
    out({ type: "fs_read", path, unsaved: unsaved !== undefined });
    return { content: unsaved ?? (await readFile(path, "utf8")) };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, async (ctx) => {
    const { path, content } = ctx.params;
    out({ type: "fs_write", path, content });
    buffers.delete(path);
    await writeFile(path, content, "utf8");
    return {};
  });

const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

await app.connectWith(stream, async (ctx) => {
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const cmd = JSON.parse(line);
    if (cmd.op === "exit") break;
    if (cmd.op === "permissions") answers.push(...cmd.answers);
    else if (cmd.op === "buffer") buffers.set(cmd.path, cmd.text);
    else if (cmd.op === "notify") await ctx.notify(cmd.method, cmd.params);
    else if (cmd.op === "request") {
      // not awaited: a cancel must reach the agent while a prompt is pending
      ctx.request(cmd.method, cmd.params).then(
        (result) => out({ type: "response", id: cmd.id, result }),
        (error) =>
          out({
            type: "error",
            id: cmd.id,
            error: { code: error.code ?? null, message: String(error.message), data: error.data ?? null },
          }),
      );
    }
  }
});
agent.stdin.end();
process.exit(0);
