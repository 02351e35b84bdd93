import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  Context,
  findCommand,
  FIX_PROMPT,
  formatPlans,
  modePickItems,
  PALETTE,
  PickItem,
  rewindItems,
  Selection,
  statusMenuItems,
} from "../src/commands";
import { Catalog } from "../src/names";

// Names the extension has never heard of: every menu comes from the server's catalog.
const CATALOG: Catalog = {
  modes: [
    { name: "talk", description: "plan by talking", default: true, role: "plan" },
    { name: "dig", description: "research", default: false, role: "research" },
    { name: "build", description: "edit and run", default: false, role: "build" },
  ],
  agents: [
    { name: "boss", description: "plans", default: true, primary: true, default_mode: "talk", role: "planner" },
    { name: "helper", description: "a sub-agent", default: false, primary: false, default_mode: "build", role: null },
    { name: "maker", description: "builds", default: false, primary: true, default_mode: "build", role: "builder" },
  ],
};

interface Fake {
  ctx: Context;
  calls: { command: string; args: unknown }[];
  shown: string[];
  errors: string[];
  infos: string[];
}

const SEL: Selection = {
  uri: "file:///w/a.py",
  range: { start: { line: 1, character: 0 }, end: { line: 3, character: 4 } },
  empty: false,
};

function fake(opts: {
  inputs?: (string | undefined)[];
  pick?: (items: PickItem[]) => PickItem | undefined;
  selection?: Selection;
  answers?: Record<string, unknown>;
  status?: { mode: string; agent: string };
  advertised?: unknown;
} = {}): Fake {
  const f: Fake = { calls: [], shown: [], errors: [], infos: [], ctx: undefined as unknown as Context };
  const inputs = [...(opts.inputs ?? [])];
  f.ctx = {
    lsp: {
      async execute(command, args) {
        f.calls.push({ command, args });
        const a = opts.answers && command in opts.answers ? opts.answers[command] : command === "ndomo.catalog" ? CATALOG : undefined;
        if (a instanceof Error) throw a;
        return a ?? null;
      },
    },
    ui: {
      selection: () => opts.selection,
      input: async () => inputs.shift(),
      pick: async (items) => (opts.pick ? opts.pick(items) : undefined),
      info: (m) => f.infos.push(m),
      error: (m) => f.errors.push(m),
      show: (_t, body) => f.shown.push(body),
    },
    status: () => opts.status ?? null,
    advertised: () => opts.advertised,
  };
  return f;
}

const byMode = (mode: string) => (items: PickItem[]) => items.find((i) => i.args.mode === mode);
const sent = (f: Fake) => f.calls.filter((c) => c.command !== "ndomo.catalog");

test("mode pick issues ndomo.mode.set with the picked mode", async () => {
  const f = fake({ pick: byMode("build"), status: { mode: "talk", agent: "boss" } });
  await findCommand("ndomo.switchMode")!.run(f.ctx);
  assert.deepEqual(f.calls, [
    { command: "ndomo.catalog", args: {} },
    { command: "ndomo.mode.set", args: { mode: "build" } },
  ]);
});

test("dismissed pick sends nothing", async () => {
  const f = fake({ pick: () => undefined });
  await findCommand("ndomo.switchMode")!.run(f.ctx);
  assert.deepEqual(sent(f), []);
});

test("mode items are the catalog's modes with their descriptions, the current one marked", () => {
  const items = modePickItems(CATALOG.modes, "dig");
  assert.deepEqual(items.map((i) => i.args.mode), ["talk", "dig", "build"]);
  assert.equal(items[1].description, "research");
  assert.ok(items[1].label.includes("$(check)"));
  assert.ok(!items[0].label.includes("$(check)"));
});

test("status menu offers the catalog's modes then its session agents (no sub-agents)", async () => {
  const items = statusMenuItems(CATALOG, { mode: "build", agent: "maker" });
  assert.deepEqual(
    items.map((i) => [i.command, i.args.mode ?? i.args.agent]),
    [
      ["ndomo.mode.set", "talk"],
      ["ndomo.mode.set", "dig"],
      ["ndomo.mode.set", "build"],
      ["ndomo.agent.set", "boss"],
      ["ndomo.agent.set", "maker"],
    ],
  );
  const f = fake({ pick: (its) => its.find((i) => i.args.agent === "maker") });
  await findCommand("ndomo.statusMenu")!.run(f.ctx);
  assert.deepEqual(f.calls.at(-1), { command: "ndomo.agent.set", args: { agent: "maker" } });
});

test("menus use the initialize result's lists when ndomo.catalog does not answer", async () => {
  let offered: PickItem[] = [];
  const pick = (items: PickItem[]) => ((offered = items), undefined);
  const f = fake({ pick, answers: { "ndomo.catalog": new Error("not started") }, advertised: CATALOG });
  await findCommand("ndomo.switchAgent")!.run(f.ctx);
  assert.deepEqual(offered.map((i) => i.args.agent), ["boss", "maker"]);
  const g = fake({ pick, answers: { "ndomo.catalog": new Error("not started") } });
  await findCommand("ndomo.switchMode")!.run(g.ctx);
  assert.deepEqual(offered, []); // nothing advertised: an empty menu, never names of our own
});

test("switch agent issues ndomo.agent.set", async () => {
  const f = fake({ pick: (items) => items.find((i) => i.args.agent === "maker") });
  await findCommand("ndomo.switchAgent")!.run(f.ctx);
  assert.deepEqual(f.calls.at(-1), { command: "ndomo.agent.set", args: { agent: "maker" } });
});

test("ask sends the prompt with the selection and shows the answer", async () => {
  const f = fake({ inputs: ["why is this slow?"], selection: SEL, answers: { "ndomo.turn": { status: "done", answer: "Because." } } });
  await findCommand("ndomo.ask")!.run(f.ctx);
  assert.deepEqual(f.calls, [
    { command: "ndomo.turn", args: { prompt: "why is this slow?", uri: SEL.uri, range: SEL.range } },
  ]);
  assert.deepEqual(f.shown, ["Because."]);
});

test("ask without selection or with an empty prompt", async () => {
  const f = fake({ inputs: ["hello"], selection: { ...SEL, empty: true } });
  await findCommand("ndomo.ask")!.run(f.ctx);
  assert.deepEqual(f.calls, [{ command: "ndomo.turn", args: { prompt: "hello" } }]);
  const g = fake({ inputs: ["  "] });
  await findCommand("ndomo.ask")!.run(g.ctx);
  assert.deepEqual(g.calls, []);
});

test("fix selection runs the catalog's builder in the build mode on the selection", async () => {
  const f = fake({ selection: SEL });
  await findCommand("ndomo.fixSelection")!.run(f.ctx);
  assert.deepEqual(sent(f), [
    { command: "ndomo.turn", args: { prompt: FIX_PROMPT, uri: SEL.uri, range: SEL.range, agent: "maker", mode: "build" } },
  ]);
  const g = fake();
  await findCommand("ndomo.fixSelection")!.run(g.ctx);
  assert.deepEqual(g.calls, []);
  assert.equal(g.errors.length, 1);
  const none = { ...CATALOG, agents: CATALOG.agents.filter((a) => a.role !== "builder") };
  const h = fake({ selection: SEL, answers: { "ndomo.catalog": none } });
  await findCommand("ndomo.fixSelection")!.run(h.ctx);
  assert.deepEqual(sent(h), []);
  assert.match(h.errors[0], /no builder agent/);
});

test("plan uses the catalog's planner in the plan mode", async () => {
  const f = fake({ inputs: ["add a cache"], selection: SEL });
  await findCommand("ndomo.planWithForeman")!.run(f.ctx);
  assert.deepEqual(sent(f), [
    { command: "ndomo.turn", args: { prompt: "add a cache", uri: SEL.uri, range: SEL.range, agent: "boss", mode: "talk" } },
  ]);
});

test("a failed turn shows its error", async () => {
  const f = fake({ inputs: ["x"], answers: { "ndomo.turn": { status: "failed", answer: "", error: "model unreachable at http://x" } } });
  await findCommand("ndomo.ask")!.run(f.ctx);
  assert.deepEqual(f.shown, ["ndomo: model unreachable at http://x"]);
});

const SIMPLE: Record<string, string> = {
  "ndomo.cancelTurn": "ndomo.cancel",
  "ndomo.undoTurn": "ndomo.undo",
  "ndomo.showPlans": "ndomo.plan.list",
  "ndomo.newSession": "ndomo.session.new",
  "ndomo.showHealth": "ndomo.health",
};

for (const [id, lsp] of Object.entries(SIMPLE)) {
  test(`${id} maps to ${lsp}`, async () => {
    const f = fake();
    await findCommand(id)!.run(f.ctx);
    assert.deepEqual(f.calls, [{ command: lsp, args: {} }]);
    assert.equal(findCommand(id)!.lsp, lsp);
  });
}

test("every palette command is contributed in package.json and vice versa", () => {
  const pkg = JSON.parse(readFileSync("package.json", "utf8"));
  const contributed = new Set<string>(pkg.contributes.commands.map((c: { command: string }) => c.command));
  for (const c of PALETTE) assert.ok(contributed.has(c.id), `${c.id} missing in package.json`);
  const own = new Set([...PALETTE.map((c) => c.id), "ndomo.restartServer", "ndomo.folderTrust", "ndomo.reviewTurn"]);
  for (const id of contributed) assert.ok(own.has(id), `${id} has no implementation`);
  const ask = pkg.contributes.keybindings.find((k: { command: string }) => k.command === "ndomo.ask");
  assert.ok(ask, "Ask has a keybinding");
});

test("plans table", () => {
  assert.equal(formatPlans([]), "No plans yet.");
  const text = formatPlans([{ id: "p1", slug: "add-cache", title: "Add a cache", status: "draft" }]);
  assert.match(text, /draft\tadd-cache\tAdd a cache/);
});

test("rewind: pick a prompt, pick what, and a conflict asks before forcing", async () => {
  const view = {
    turns: [
      { id: 3, prompt: "make the files\nplease", agent: "craftsman" },
      { id: 5, prompt: "rewind to turn 3", agent: "rewind" },
      { id: 7, prompt: "now something else", agent: "craftsman" },
    ],
  };
  assert.deepEqual(rewindItems(view).map((i) => [i.label, i.args.turn]), [["1. make the files", 3], ["2. now something else", 7]]);
  const picks: string[][] = [];
  const answers = ["1. make the files", "Files only (the conversation stays)", "Overwrite them"];
  let forced = false;
  const f = fake({
    pick: (items) => {
      picks.push(items.map((i) => i.label));
      const want = answers.shift();
      return items.find((i) => i.label === want);
    },
    answers: { "ndomo.session.open": view },
  });
  const execute = f.ctx.lsp.execute;
  f.ctx.lsp.execute = async (command, args) => {
    if (command === "ndomo.session.rewind" && !args?.force) {
      f.calls.push({ command, args });
      throw new Error("not rewinding: changed after the agent's turns: keep.txt (force overwrites them)");
    }
    if (command === "ndomo.session.rewind") forced = true;
    return execute(command, args);
  };
  await findCommand("ndomo.rewindSession")!.run(f.ctx);
  assert.deepEqual(f.calls.map((c) => [c.command, c.args]), [
    ["ndomo.session.open", { limit: 200 }],
    ["ndomo.session.rewind", { turn: 3, what: "code" }],
    ["ndomo.session.rewind", { turn: 3, what: "code", force: true }],
  ]);
  assert.ok(forced);
  assert.deepEqual(picks[2], ["Overwrite them", "Keep my changes"]);
});
