-- The editor's diagnostics reach the agent, and the chat buffer keeps answers out of
-- vim.notify, in a real headless Neovim against the real server and the scripted model.
-- A checker (standing for another language server) flags `return z` as an error through
-- vim.diagnostic as soon as the buffer holds it. Results go to $NDOMO_TEST_OUT.
local out_path = assert(os.getenv("NDOMO_TEST_OUT"))
local file = assert(os.getenv("NDOMO_TEST_FILE"))
local python = assert(os.getenv("NDOMO_TEST_PYTHON"))
local base_url = assert(os.getenv("NDOMO_BASE_URL"))
local results = { errors = {}, notified = {} }

local function save()
  local f = assert(io.open(out_path, "w"))
  f:write(vim.json.encode(results))
  f:close()
end

local function wait(ms, cond, what)
  if not vim.wait(ms, cond, 50) then error("timed out waiting for " .. what) end
end

local notify = vim.notify
vim.notify = function(msg, level, o)
  table.insert(results.notified, tostring(msg))
  return notify(msg, level, o)
end

local ndomo = require("ndomo")
ndomo.setup({
  cmd = { python, "-m", "ndomo", "serve", "--log-level", "debug", "--log-file", os.getenv("NDOMO_TEST_LOG") },
  init_options = { model = { base_url = base_url, name = "fake-model" } },
})
local chat = require("ndomo.chat")

local function chat_lines()
  local b = vim.fn.bufnr(chat.NAME)
  return b > 0 and vim.api.nvim_buf_get_lines(b, 0, -1, false) or {}
end

local function has(pattern)
  for _, l in ipairs(chat_lines()) do
    if l:find(pattern, 1, true) then return true end
  end
  return false
end

local function idle() return ndomo.last_status and not ndomo.last_status.busy end

local checker = vim.api.nvim_create_namespace("checker")
local function check(buf)
  local found = {}
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local col = line:find("return z", 1, true)
    if col then
      table.insert(found, { lnum = i - 1, col = col + 6, end_col = col + 7, message = '"z" is not defined',
        source = "checker", code = "undefined-name", severity = vim.diagnostic.severity.ERROR })
    end
  end
  vim.diagnostic.set(checker, buf, found)
end

local S = {}

function S.attach()
  vim.cmd.edit(file)
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_attach(buf, false, { on_lines = function() vim.schedule(function() check(buf) end) end })
  wait(20000, function() return require("ndomo.client").get(buf) ~= nil end, "client")
  wait(20000, function() return ndomo.last_status ~= nil end, "first ndomo/status")
  vim.cmd("Ndomo agent craftsman")
  wait(10000, function() return ndomo.last_status.agent == "craftsman" end, "agent craftsman")
end

-- the server's request answered straight from vim.diagnostic
function S.answer()
  local buf = vim.fn.bufnr(file)
  vim.diagnostic.set(checker, buf, { { lnum = 0, col = 0, message = "just a hint", source = "checker", severity = vim.diagnostic.severity.HINT },
    { lnum = 1, col = 4, end_lnum = 1, end_col = 10, message = "bad", source = "checker", code = 7, severity = vim.diagnostic.severity.ERROR } })
  results.answer = require("ndomo.problems").handler(nil, { uris = { vim.uri_from_fname(file), "file:///nowhere.py" } })
  vim.diagnostic.set(checker, buf, {})
end

-- a turn typed in the chat edits the file: the checker's error reaches the model, the
-- multi-line answer shows in the chat and not in the message area
function S.turn()
  vim.cmd("Ndomo chat")
  local win = vim.fn.bufwinid(vim.fn.bufnr(chat.NAME))
  vim.api.nvim_set_current_win(win)
  local b = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(b, -2, -1, false, { "break it" })
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(b), 0 })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  wait(30000, function() return has("Third line.") end, "the answer in the chat")
  wait(10000, idle, "idle")
  vim.wait(300) -- anything notified after the end would land now
  results.chat = chat_lines()
  results.chat_statusline = vim.api.nvim_eval_statusline(vim.wo[win].statusline, { winid = win }).str
  results.status_usage = ndomo.last_status.usage
  results.buffer = vim.api.nvim_buf_get_lines(vim.fn.bufnr(file), 0, -1, false)
end

-- the chat closed, the next answer is notified as before
function S.closed()
  chat.close()
  vim.cmd("Ndomo ask what now")
  wait(30000, function()
    for _, m in ipairs(results.notified) do
      if m:find("Answer without the chat.", 1, true) then return true end
    end
    return false
  end, "the answer notified")
  wait(10000, idle, "idle")
end

for _, name in ipairs(vim.split(os.getenv("NDOMO_TEST_STEPS") or "", ",", { trimempty = true })) do
  local ok, err = pcall(S[name])
  if not ok then results.errors[name] = tostring(err) end
  save()
end
save()
vim.cmd("qa!")
