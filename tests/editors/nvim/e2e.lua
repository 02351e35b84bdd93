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

local ndomo = require("ndomo")
ndomo.setup({
  cmd = { python, "-m", "ndomo", "serve", "--log-level", "debug", "--log-file", os.getenv("NDOMO_TEST_LOG") },
  init_options = { model = { base_url = base_url, name = "fake-model" } },
})

-- Approvals and other questions: a stubbed vim.ui.select that records and answers.
results.selects = {}
vim.ui.select = function(items, opts, on_choice)
  local titles = {}
  for _, it in ipairs(items) do table.insert(titles, type(it) == "table" and it.title or it) end
  table.insert(results.selects, { prompt = opts.prompt, items = titles, kind = opts.kind })
  local want = os.getenv("NDOMO_TEST_PICK") or "Once"
  for _, it in ipairs(items) do
    if (type(it) == "table" and it.title or it) == want then return on_choice(it) end
  end
  on_choice(nil)
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

-- The same through the plugin's own command on a line range.
function S.fix()
  local buf = vim.fn.bufnr(file)
  vim.api.nvim_set_current_buf(buf)
  local before = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  vim.cmd("1,2Ndomo fix")
  wait_edit(buf, before)
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
