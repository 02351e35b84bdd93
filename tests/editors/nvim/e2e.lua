-- Drives the real plugin against the real server in a headless Neovim; every step's
-- outcome goes to the JSON file named by $NDOMO_TEST_OUT (the Python test asserts on it).
local out_path = assert(os.getenv("NDOMO_TEST_OUT"))
local file = assert(os.getenv("NDOMO_TEST_FILE"))
local python = assert(os.getenv("NDOMO_TEST_PYTHON"))
local base_url = assert(os.getenv("NDOMO_BASE_URL"))
local steps = vim.split(os.getenv("NDOMO_TEST_STEPS") or "", ",", { trimempty = true })

local results = { errors = {} }

local function save()
  local f = assert(io.open(out_path, "w"))
  f:write(vim.json.encode(results))
  f:close()
end

local function wait(ms, cond, what)
  local ok = vim.wait(ms, cond, 50)
  if not ok then error("timed out waiting for " .. what) end
end

-- Every message the user would see (server showMessage, plugin notices, answers).
results.notices = {}
vim.notify = function(msg, level)
  table.insert(results.notices, { msg = tostring(msg), level = level or vim.log.levels.INFO })
end

local ndomo = require("ndomo")
local cmd = { python, "-m", "ndomo", "serve", "--log-level", "debug", "--log-file", os.getenv("NDOMO_TEST_LOG") }
if os.getenv("NDOMO_TEST_SETUP") == "docs" then
  -- docs/editors.md's setup, with the fake model as the endpoint
  ndomo.setup({
    cmd = cmd,
    init_options = {
      model = { base_url = base_url, name = "qwen2.5-coder:7b", api_key_env = "NDOMO_API_KEY" },
      modes = { default = "discussion" },
    },
    keymaps = false,
  })
elseif os.getenv("NDOMO_TEST_SETUP") == "transcript" then
  -- the session export shown beside the code after each turn (off by default)
  ndomo.setup({ cmd = cmd, init_options = { open_transcript = true } })
else
  -- no init_options at all (the model comes from NDOMO_BASE_URL)
  ndomo.setup({ cmd = cmd })
end

results.answers = {}
vim.api.nvim_create_autocmd("User", {
  pattern = "NdomoAnswer",
  callback = function(ev) table.insert(results.answers, ev.data) end,
})

-- Approvals and other questions: a stubbed vim.ui.select that records and answers
-- (`pick` when a step set it, else $NDOMO_TEST_PICK).
results.selects = {}
local pick
-- An approval (`ndomo/approve`) is picked by its label as the picker shows it ("Run once — …").
vim.ui.select = function(items, opts, on_choice)
  local approval = opts.kind == "ndomo_approval"
  local titles = {}
  for _, it in ipairs(items) do
    table.insert(titles, approval and opts.format_item(it) or (type(it) == "table" and it.title or it))
  end
  table.insert(results.selects, { prompt = opts.prompt, items = titles, kind = opts.kind })
  local want = pick or os.getenv("NDOMO_TEST_PICK") or (approval and "Run once" or "Once")
  for i, it in ipairs(items) do
    if titles[i] == want or (approval and vim.startswith(titles[i], want .. " — ")) then return on_choice(it) end
  end
  on_choice(nil)
end

local function ndomo_buffers(part)
  local found = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b):find(part, 1, true) then table.insert(found, b) end
  end
  return found
end

results.progress = {}
vim.api.nvim_create_autocmd("LspProgress", {
  callback = function(ev)
    local v = ev.data and ev.data.params and ev.data.params.value
    if type(v) == "table" then table.insert(results.progress, v.kind .. ":" .. (v.title or v.message or "")) end
  end,
})

local S = {}

function S.attach()
  vim.cmd.edit(file)
  local buf = vim.api.nvim_get_current_buf()
  wait(20000, function() return require("ndomo.client").get(buf) ~= nil end, "client")
  wait(20000, function() return ndomo.last_status ~= nil end, "first ndomo/status")
  results.first_status = ndomo.status()
  -- the server processes, so the test can check that none outlives Neovim
  results.server_pids = vim.api.nvim_get_proc_children(vim.fn.getpid())
  local c = require("ndomo.client").get(buf)
  results.root = c.root_dir
  results.save_capability = vim.tbl_get(c.capabilities, "experimental", "ndomo", "saveDocuments") == true
  save()
end

-- Live settings: the same server process applies a new model name without a restart.
function S.settings()
  local buf = vim.fn.bufnr(file)
  local c = require("ndomo.client").get(buf)
  local pid = c.rpc and c.rpc.pid or nil
  local before = require("ndomo.client").execute_sync("ndomo.health", { probe_model = false }, 10000, buf)
  results.model_before = before and before.model.name
  ndomo.set_settings({ model = { name = "changed-live" } })
  wait(15000, function()
    local r = require("ndomo.client").execute_sync("ndomo.health", { probe_model = false }, 10000, buf)
    return r and r.model.name == "changed-live"
  end, "the new model name")
  local after = require("ndomo.client").get(buf)
  results.settings_same_client = after ~= nil and after.id == c.id and not after:is_stopped()
  results.settings_clients = #vim.lsp.get_clients({ name = "ndomo" })
  results.settings_pid_same = pid == nil or (after.rpc and after.rpc.pid) == pid
end

function S.mode()
  vim.cmd("Ndomo mode autopilot")
  wait(10000, function() return ndomo.last_status and ndomo.last_status.mode == "autopilot" end, "mode autopilot")
  results.mode_status = ndomo.status()
  results.complete_sub = require("ndomo.commands").complete("mo", "Ndomo mo", 8)
  results.complete_mode = require("ndomo.commands").complete("a", "Ndomo mode a", 12)
end

function S.diagnostics()
  local buf = vim.fn.bufnr(file)
  wait(15000, function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.source == "ndomo" then return true end
    end
    return false
  end, "plan diagnostics")
  results.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(results.diagnostics, { source = d.source, message = d.message, lnum = d.lnum })
  end
end

local function wait_edit(buf, before)
  wait(30000, function()
    return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") ~= before
  end, "the craftsman's edit in the buffer")
  results.fixed = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  wait(15000, function() return ndomo.last_status and not ndomo.last_status.busy end, "turn end")
end

-- The server's code action "ndomo: Fix with craftsman" on lines 1-2, applied as a user would.
function S.code_action()
  local buf = vim.fn.bufnr(file)
  vim.api.nvim_set_current_buf(buf)
  local client = require("ndomo.client").get(buf)
  local resp = client:request_sync("textDocument/codeAction", {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = { start = { line = 0, character = 0 }, ["end"] = { line = 1, character = 0 } },
    context = { diagnostics = {} },
  }, 10000, buf)
  if not resp or resp.err then
    results.code_action_error = resp and (resp.err.message or vim.inspect(resp.err)) or "timeout"
    error("codeAction failed: " .. results.code_action_error)
  end
  results.code_actions = {}
  for _, a in ipairs(resp.result or {}) do table.insert(results.code_actions, a.title) end
  local before = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  vim.lsp.buf.code_action({
    range = { start = { 1, 0 }, ["end"] = { 2, 0 } },
    filter = function(a) return a.title == "ndomo: Fix with craftsman" end,
    apply = true,
  })
  wait_edit(buf, before)
end

-- The same through the plugin's own command on a line range. A mark on line 4 and the cursor
-- there show whether the edit touched only line 2 (a whole-file replacement moves both).
function S.fix()
  local buf = vim.fn.bufnr(file)
  vim.api.nvim_set_current_buf(buf)
  local ns = vim.api.nvim_create_namespace("ndomo_test")
  local mark = vim.api.nvim_buf_set_extmark(buf, ns, 3, 2, {})
  vim.api.nvim_win_set_cursor(0, { 4, 3 })
  local before = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  vim.cmd("1,2Ndomo fix")
  wait_edit(buf, before)
  results.mark_after = vim.api.nvim_buf_get_extmark_by_id(buf, ns, mark, {})
  results.cursor_after = vim.api.nvim_win_get_cursor(0)
end

function S.approval()
  vim.cmd("Ndomo agent craftsman")
  wait(10000, function() return ndomo.last_status and ndomo.last_status.agent == "craftsman" end, "agent craftsman")
  vim.cmd("Ndomo ask run the script")
  wait(30000, function() return #results.selects > 0 end, "an approval request")
  wait(30000, function() return ndomo.last_status and not ndomo.last_status.busy end, "turn end")
  results.after_approval_status = ndomo.last_status
end

function S.health()
  vim.cmd("checkhealth ndomo")
  results.health = vim.api.nvim_buf_get_lines(0, 0, -1, false)
end

-- The session transcript the server opened beside the code (window/showDocument) follows the
-- file on disk once the turn's ndomo/status arrives.
function S.transcript_file()
  wait(15000, function() return #ndomo_buffers("/.ndomo/sessions/") > 0 end, "the session transcript buffer")
  local b = ndomo_buffers("/.ndomo/sessions/")[1]
  wait(15000, function()
    return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n"):find("Fixed: add now adds.", 1, true) ~= nil
  end, "the answer in the transcript buffer")
  results.transcript_file = vim.api.nvim_buf_get_lines(b, 0, -1, false)
end

-- :Ndomo agent without a name: the list comes asynchronously, then vim.ui.select.
function S.agent_pick()
  pick = "craftsman"
  local before = #results.selects
  vim.cmd("Ndomo agent")
  results.selects_right_after = #results.selects - before
  wait(10000, function() return #results.selects > before end, "the agent pick")
  results.agent_items = results.selects[before + 1].items
  wait(10000, function() return ndomo.last_status and ndomo.last_status.agent == "craftsman" end, "agent craftsman")
  pick = nil
end

-- Menus from the server's lists only: completion and the pickers of :Ndomo mode and
-- :Ndomo agent offer the mode and agent named in NDOMO_TEST_MODE / NDOMO_TEST_AGENT (which
-- the plugin has never heard of), and picking them switches the session.
function S.names()
  local cmds = require("ndomo.commands")
  results.names_complete_mode = cmds.complete("", "Ndomo mode ", 11)
  results.names_complete_agent = cmds.complete("", "Ndomo agent ", 12)
  for _, which in ipairs({ "mode", "agent" }) do
    pick = assert(os.getenv(which == "mode" and "NDOMO_TEST_MODE" or "NDOMO_TEST_AGENT"))
    local before = #results.selects
    vim.cmd("Ndomo " .. which)
    wait(10000, function() return #results.selects > before end, "the " .. which .. " pick")
    results["names_" .. which .. "_items"] = results.selects[before + 1].items
    local want = pick
    wait(10000, function() return ndomo.last_status and ndomo.last_status[which] == want end, which .. " " .. want)
  end
  results.names_status = ndomo.status()
  pick = nil
end

-- :Ndomo plans: progress per plan; <CR> opens the plan's markdown view.
function S.plans()
  vim.cmd("Ndomo plans")
  wait(10000, function() return #ndomo_buffers("ndomo://plans") > 0 end, "the plans list")
  local b = ndomo_buffers("ndomo://plans")[1]
  results.plans = vim.api.nvim_buf_get_lines(b, 0, -1, false)
  vim.api.nvim_set_current_win(vim.fn.bufwinid(b))
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.cmd("normal " .. vim.keycode("<CR>"))
  wait(10000, function() return vim.api.nvim_buf_get_name(0):find("/.ndomo/plans/", 1, true) ~= nil end, "the plan view")
  results.plan_view_name = vim.api.nvim_buf_get_name(0)
  results.plan_view = vim.api.nvim_buf_get_lines(0, 0, -1, false)
end

-- The open plan view follows a change made elsewhere (here: a task marked done through the
-- server, which rewrites the file; the status notification triggers :checktime).
function S.plan_view_follows()
  local b = vim.api.nvim_get_current_buf()
  local id
  for _, line in ipairs(vim.api.nvim_buf_get_lines(b, 0, -1, false)) do
    id = id or line:match("#(%d+)%s*$")
  end
  results.view_task_id = id
  local done_err
  require("ndomo.client").execute("ndomo.task.status", { id = tonumber(id), status = "done" }, function(err)
    done_err = err or false
  end)
  wait(10000, function() return done_err ~= nil end, "ndomo.task.status")
  if done_err then error("ndomo.task.status: " .. vim.inspect(done_err)) end
  wait(15000, function()
    return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n"):find("[x]", 1, true) ~= nil
  end, "the plan view to show the task done")
  results.plan_view_after = vim.api.nvim_buf_get_lines(b, 0, -1, false)
end

-- :Ndomo new asks first (undo no longer reaches the old session); :Ndomo! new does not.
function S.new_session()
  local first = ndomo.last_status.session
  pick = "Keep this session"
  local before = #results.selects
  vim.cmd("Ndomo new")
  wait(5000, function() return #results.selects > before end, "the new-session question")
  results.new_prompt = results.selects[before + 1].prompt
  vim.wait(500)
  results.kept_session = ndomo.last_status.session == first
  pick = nil
  local asked = #results.selects
  vim.cmd("Ndomo! new")
  wait(10000, function() return ndomo.last_status.session ~= first end, "a new session")
  results.bang_asked = #results.selects - asked
end

-- An agent edit, then `bash` reads the file: the editor saved the buffer first.
function S.save_then_bash()
  local buf = vim.fn.bufnr(file)
  vim.api.nvim_set_current_buf(buf)
  vim.cmd("Ndomo agent craftsman")
  wait(10000, function() return ndomo.last_status and ndomo.last_status.agent == "craftsman" end, "agent craftsman")
  vim.cmd("Ndomo mode autopilot")
  wait(10000, function() return ndomo.last_status and ndomo.last_status.mode == "autopilot" end, "mode autopilot")
  local answers = #results.answers
  vim.cmd("Ndomo ask fix add, then show the file")
  wait(30000, function() return #results.answers > answers end, "the turn's answer")
  results.fixed = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  results.modified_after = vim.bo[buf].modified
  results.undo_seq = vim.fn.undotree(buf).seq_last
  vim.api.nvim_buf_call(buf, function() vim.cmd("silent undo") end)
  results.after_undo = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

-- Files outside any root get no client: a help buffer, a file outside the cwd with no marker,
-- and $HOME/.bashrc from $HOME (which must not grow a .ndomo/).
function S.outside()
  local outside = assert(os.getenv("NDOMO_TEST_OUTSIDE"))
  vim.cmd.edit(outside)
  results.outside_clients = #vim.lsp.get_clients({ bufnr = 0 })
  vim.cmd("help help")
  results.help_clients = #vim.lsp.get_clients({ bufnr = 0 })
  vim.cmd("close")
  local home = assert(vim.uv.os_homedir())
  vim.cmd.cd(home)
  vim.cmd.edit(home .. "/.bashrc")
  results.home_clients = #vim.lsp.get_clients({ bufnr = 0 })
  results.clients = #vim.lsp.get_clients({ name = "ndomo" })
end

-- Stay up (the test kills Neovim itself).
function S.hold()
  results.holding = true
  save()
  while true do vim.wait(1000) end
end

function S.transcript()
  local b = vim.fn.bufnr(require("ndomo.ui").TRANSCRIPT)
  results.transcript = b > 0 and vim.api.nvim_buf_get_lines(b, 0, -1, false) or {}
end

for _, name in ipairs(steps) do
  local ok, err = pcall(S[name])
  if not ok then results.errors[name] = tostring(err) end
  save()
end
S.transcript()
save()
vim.cmd("qa!")
