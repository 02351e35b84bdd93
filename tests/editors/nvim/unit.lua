-- Plugin logic without a server: statusline text, options, completion, request handler.
local out_path = assert(os.getenv("NDOMO_TEST_OUT"))
local r = {}
local status = require("ndomo.status")

r.idle = status.format({ session = "s", mode = "discussion", agent = "foreman", busy = false, state = "idle", plan = vim.NIL })
r.plan = status.format({ session = "s", mode = "autopilot", agent = "craftsman", busy = false, state = "idle",
  plan = { id = "p", slug = "x", done = 2, total = 5 } })
r.state = status.format({ session = "s", mode = "autopilot", agent = "craftsman", busy = false, state = "failed", plan = vim.NIL })
r.busy = status.format({ session = "s", mode = "autopilot", agent = "craftsman", busy = true, state = "idle", plan = vim.NIL }, 0)
r.none = status.format(nil)
-- folder trust: anything but "trusted" says so; a server that sends no trust says nothing
r.trust_unknown = status.format({ session = "s", mode = "discussion", agent = "foreman", busy = false, state = "idle", plan = vim.NIL, trust = "unknown" })
r.trust_untrusted = status.format({ session = "s", mode = "autopilot", agent = "craftsman", busy = false, state = "idle",
  plan = { id = "p", slug = "x", done = 2, total = 5 }, trust = "untrusted" })
r.trust_trusted = status.format({ session = "s", mode = "discussion", agent = "foreman", busy = false, state = "idle", plan = vim.NIL, trust = "trusted" })
r.auto_allow = status.format({ session = "s", mode = "autopilot", agent = "craftsman", busy = false, state = "idle", plan = vim.NIL, auto_allow = true })
local trust = require("ndomo.trust")
r.trust_prompt = trust.prompt({ root = "/ws", state = "unknown", configures = { "agents: craftsman (replaces the built-in)", "model.base_url" } })
r.trust_ask = {
  trust.should_ask({ state = "unknown", configures = { "model.base_url" } }),
  trust.should_ask({ state = "unknown", configures = {} }),
  trust.should_ask({ state = "trusted", configures = { "model.base_url" } }),
  trust.should_ask({ state = "untrusted", configures = { "model.base_url" } }),
}
r.usage = status.usage({ mode = "m", agent = "a", usage = { turn = { prompt = 1234, completion = 56 },
  session = { prompt = 75310, completion = 300 }, cost = { turn = 0.0045, session = 0.0195, currency = "€" } } })
r.usage_none = status.usage({ mode = "m", agent = "a" })
r.before_setup = require("ndomo").status()

local cfg = require("ndomo.config")
local o = cfg.merge({ cmd = { "python", "-m", "ndomo", "serve" }, init_options = { model = { name = "m" } } })
r.cmd = o.cmd
r.keymaps_default = o.keymaps
r.init_options = o.init_options
r.bad_cmd = select(2, pcall(cfg.merge, { cmd = {} }))
r.bad_keymaps = select(2, pcall(cfg.merge, { keymaps = "yes" }))

require("ndomo").setup({ cmd = { "ndomo-does-not-exist" } })
r.has_command = vim.fn.exists(":Ndomo") == 2
local cmds = require("ndomo.commands")
r.complete_all = cmds.complete("", "Ndomo ", 6)
-- No server, nothing advertised: no names of the plugin's own to complete.
r.complete_mode = cmds.complete("b", "Ndomo mode b", 12)
r.complete_agent = cmds.complete("", "Ndomo agent ", 12)
r.complete_trust = cmds.complete("", "Ndomo trust ", 12)
-- Menus and jobs from a catalog with names the plugin has never heard of.
local cat = {
  modes = { { name = "talk", role = "plan" }, { name = "dig", role = "research" }, { name = "make", role = "build" } },
  agents = {
    { name = "boss", primary = true, role = "planner", default = true },
    { name = "helper", primary = false, role = "builder" },
    { name = "maker", primary = true, role = "builder", default_mode = "make" },
    { name = "odd", primary = true, role = "builder", default = true },
  },
}
r.cat_modes = cmds.mode_names(cat)
r.cat_agents = cmds.agent_names(cat)
r.cat_fix = cmds.by_role(cat, "builder", "build")
r.cat_plan = cmds.by_role(cat, "planner", "plan")
r.cat_none = cmds.by_role(cat, "reviewer", "plan") == nil
r.no_keymaps = vim.fn.maparg("<leader>na", "n") == ""

-- vim.ui.select answers a server request from inside a coroutine (as Neovim ≥ 0.11 runs them).
vim.ui.select = function(items, opts, cb)
  r.select_prompt = opts.prompt
  cb(items[3])
end
local co = coroutine.create(function()
  local picked = require("ndomo.ui").show_message_request(nil, {
    type = 3,
    message = "ndomo · craftsman (autopilot) wants bash: rm x",
    actions = { { title = "Once" }, { title = "Session" }, { title = "Always" }, { title = "Deny" } },
  }, {})
  r.picked = picked.title
end)
local _, first = coroutine.resume(co)
r.yielded = coroutine.status(co) == "suspended" and first == nil
vim.wait(1000, function() return coroutine.status(co) == "dead" end)
r.co_dead = coroutine.status(co) == "dead"

-- transcript text from turn events
local ui = require("ndomo.ui")
ui.on_event({ kind = "turn_started", agent = "craftsman", mode = "autopilot", prompt = "fix" })
ui.on_event({ kind = "text", text = "hello " })
ui.on_event({ kind = "text", text = "world\nsecond" })
ui.on_event({ kind = "turn_finished", status = "done", error = vim.NIL })
r.transcript = vim.api.nvim_buf_get_lines(vim.fn.bufnr(ui.TRANSCRIPT), 0, -1, false)

-- an unknown subcommand is an error message, not a crash
local msgs = {}
vim.notify = function(m) table.insert(msgs, m) end
vim.cmd("Ndomo frobnicate")
r.unknown = msgs[1]
-- no server: a clear message
vim.cmd("Ndomo cancel")
r.no_server = msgs[2]

-- the empty argument goes out as an object, not a list
r.empty_dict = vim.json.encode({ arguments = { vim.empty_dict() } })
-- D1: init_options left out (or empty) go out as {}, never []
local client = require("ndomo.client")
r.init_default = vim.json.encode(client.object(cfg.merge({}).init_options))
r.init_given = vim.json.encode(client.object({ model = { name = "m" } }))
r.caps_save = vim.tbl_get(client.capabilities(nil), "experimental", "ndomo", "saveDocuments")
-- ndomo/approve is announced only by a client that answers it (ui_select_requests)
r.caps_approvals = { vim.tbl_get(client.capabilities(nil, true), "experimental", "ndomo", "approvals") == true,
  vim.tbl_get(client.capabilities(nil, false), "experimental", "ndomo", "approvals") == nil }
r.caps_user = vim.tbl_get(client.capabilities({ textDocument = { completion = { completionItem = { snippetSupport = false } } } }),
  "textDocument", "completion", "completionItem", "snippetSupport")

-- :Ndomo alone: a pick of the subcommands, no E471
local picked_items
vim.ui.select = function(items, opts, cb)
  picked_items = items
  cb(nil)
end
local ok_bare, err_bare = pcall(vim.cmd, "Ndomo")
r.bare_ok = ok_bare
r.bare_err = not ok_bare and tostring(err_bare) or nil
r.bare_items = picked_items

-- :checkhealth with no client: no :LspInfo advice (an lspconfig command)
vim.cmd("checkhealth ndomo")
r.health_no_client = vim.api.nvim_buf_get_lines(0, 0, -1, false)
vim.cmd("bwipe!")

-- roots: never / or $HOME; a marker folder; the cwd for a loose file under it
local tmp = vim.fn.tempname()
local home = vim.uv.os_homedir()
vim.fn.mkdir(tmp .. "/proj/.git", "p")
vim.fn.mkdir(tmp .. "/proj/src", "p")
vim.fn.mkdir(tmp .. "/loose", "p")
local function root_of(path)
  local b = vim.fn.bufadd(path)
  return client.root_for(b, cfg.merge({}))
end
r.root_marker = root_of(tmp .. "/proj/src/a.py") == vim.fs.normalize(tmp .. "/proj")
r.root_git_dir = root_of(tmp .. "/proj/.git/COMMIT_EDITMSG")
vim.cmd.cd(tmp .. "/loose")
r.root_cwd = root_of(tmp .. "/loose/n.txt") == vim.fs.normalize(tmp .. "/loose")
r.root_not_under_cwd = root_of(tmp .. "/elsewhere.txt")
vim.cmd.cd(home)
r.root_home = root_of(home .. "/.profile-ndomo-test")
vim.cmd.cd("/")
r.root_slash = root_of("/ndomo-test.txt")
r.root_uri = client.root_for(vim.fn.bufadd("fugitive:///x/y"), cfg.merge({}))

-- D7: ndomo/saveDocuments writes the modified buffers named, keeps their undo history
vim.cmd.cd(tmp)
local target = tmp .. "/proj/src/a.py"
vim.fn.writefile({ "old" }, target)
vim.cmd.edit(target)
local sb = vim.api.nvim_get_current_buf()
vim.api.nvim_buf_set_lines(sb, 0, -1, false, { "new" })
local clean = tmp .. "/proj/src/b.py"
vim.fn.writefile({ "same" }, clean)
vim.cmd.edit(clean)
local save = require("ndomo.save")
local res = save.handler(nil, { uris = { vim.uri_from_fname(target), vim.uri_from_fname(clean), vim.uri_from_fname(tmp .. "/not-open.py") } }, {})
r.saved = res.saved
r.saved_expected = { vim.uri_from_fname(target), vim.uri_from_fname(clean) }
r.saved_disk = vim.fn.readfile(target)
r.saved_modified = vim.bo[sb].modified
r.saved_undo = vim.fn.undotree(sb).seq_last
r.not_open_loaded = vim.fn.bufnr(tmp .. "/not-open.py")
-- the file changed on disk since it was read: saved without a question (a :write would ask)
vim.cmd.edit(target)
vim.api.nvim_buf_set_lines(sb, 0, -1, false, { "newer" })
vim.fn.writefile({ "changed behind" }, target)
local later = os.time() + 5
vim.uv.fs_utime(target, later, later)
res = save.handler(nil, { uris = { vim.uri_from_fname(target) } }, {})
r.saved_changed = res.saved
r.saved_changed_disk = vim.fn.readfile(target)
-- a read-only buffer is not written
vim.bo[sb].readonly = true
vim.api.nvim_buf_set_lines(sb, 0, -1, false, { "newest" })
res = save.handler(nil, { uris = { vim.uri_from_fname(target) } }, {})
r.saved_readonly = res.saved
r.saved_readonly_disk = vim.fn.readfile(target)
vim.bo[sb].readonly = false
vim.bo[sb].modified = false

-- D5 + D10: every window's statusline follows ndomo/status, and while busy a timer animates
-- the spinner with no notification; idle, the timer is gone.
local ndomo = require("ndomo")
local evals = {}
function _G.ndomo_test_sl()
  local w = vim.g.statusline_winid
  evals[w] = (evals[w] or 0) + 1
  return ndomo.status()
end
vim.o.laststatus = 2
vim.o.statusline = "%!v:lua.ndomo_test_sl()"
vim.cmd("only")
vim.cmd("enew")
vim.cmd("split")
vim.cmd("enew") -- two windows, two buffers: `redrawstatus` (no !) would skip the other one
local other = vim.fn.win_getid(2)
vim.cmd("redraw!")
local handler = ndomo.handlers()["ndomo/status"]
local base = { session = "s", mode = "autopilot", agent = "craftsman", state = "idle", plan = vim.NIL }
r.spinning_before = ndomo.spinning()
local before = evals[other] or 0
handler(nil, vim.tbl_extend("force", base, { busy = false, agent = "foreman" }), { client_id = 0 })
vim.wait(2000, function() return (evals[other] or 0) > before end, 10)
r.other_redrawn = (evals[other] or 0) > before
handler(nil, vim.tbl_extend("force", base, { busy = true }), { client_id = 0 })
vim.wait(2000, function() return ndomo.spinning() end, 10)
r.spinning_busy = ndomo.spinning()
local frames = {}
vim.wait(5000, function()
  frames[ndomo.status()] = true
  return vim.tbl_count(frames) >= 3
end, 10)
r.spinner_frames = vim.tbl_count(frames)
handler(nil, vim.tbl_extend("force", base, { busy = false }), { client_id = 0 })
vim.wait(2000, function() return not ndomo.spinning() end, 10)
r.spinning_idle = ndomo.spinning()
local idle_text = ndomo.status()
vim.wait(500)
r.idle_still = ndomo.status() == idle_text

-- answers: shown once per outermost turn; a hand-back is a warning; a sub-agent is not shown
local shown = {}
vim.notify = function(m, level) table.insert(shown, { msg = m, level = level }) end
local turns = require("ndomo.turns")
turns.on_event({ kind = "turn_started", turn_id = 1 }, 7)
turns.on_event({ kind = "turn_started", turn_id = 2 }, 7)
turns.on_event({ kind = "turn_finished", turn_id = 2, status = "done", answer = "from the scout" }, 7)
turns.on_event({ kind = "turn_finished", turn_id = 1, status = "done", answer = "all done" }, 7)
turns.on_result({ turn_id = 1, status = "done", answer = "all done" })
turns.on_event({ kind = "turn_started", turn_id = 3 }, 7)
turns.on_event({ kind = "turn_finished", turn_id = 3, status = "blocked", answer = "out of my domain" }, 7)
turns.on_result({ status = "failed", answer = "", error = "no model" }) -- a result no event showed
r.answers_shown = shown

-- :Ndomo plans twice: one list buffer, the newest
ui.show("plans", { "first" })
local second = ui.show("plans", { "second" })
local named = 0
for _, b in ipairs(vim.api.nvim_list_bufs()) do
  if vim.api.nvim_buf_get_name(b) == "ndomo://plans" then named = named + 1 end
end
r.plans_buffers = named
r.plans_newest = vim.api.nvim_buf_get_name(second) == "ndomo://plans"

-- the chat: a turn that streamed before the stored history came back replaces its stored copy
local chat = require("ndomo.chat")
chat.apply({ kind = "turn_started", turn_id = 7, agent = "craftsman", mode = "autopilot", prompt = "run it" })
chat.apply({ kind = "text", turn_id = 7, text = "streamed before" })
chat.load_history({ turns = {
  { id = 6, prompt = "earlier", status = "done", items = {} },
  { id = 7, prompt = "run it", status = "running", items = {} },
} })
chat.apply({ kind = "turn_finished", turn_id = 7, status = "done" })
r.chat_race = vim.tbl_map(function(t) return { t.id, t.status, #t.items } end, chat._state().turns)

local f = assert(io.open(out_path, "w"))
f:write(vim.json.encode(r))
f:close()
vim.cmd("qa!")
