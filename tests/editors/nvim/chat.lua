-- The chat buffer (:Ndomo chat) in a real headless Neovim against the real server and the
-- scripted fake model. Results go to the JSON file named by $NDOMO_TEST_OUT.
local out_path = assert(os.getenv("NDOMO_TEST_OUT"))
local file = assert(os.getenv("NDOMO_TEST_FILE"))
local python = assert(os.getenv("NDOMO_TEST_PYTHON"))
local base_url = assert(os.getenv("NDOMO_BASE_URL"))
local workspace = vim.fs.dirname(file)
local steps = vim.split(os.getenv("NDOMO_TEST_STEPS") or "", ",", { trimempty = true })
local results = { errors = {}, questions_in_chat = {} }

local function save()
  local f = assert(io.open(out_path, "w"))
  f:write(vim.json.encode(results))
  f:close()
end

local function wait(ms, cond, what)
  if not vim.wait(ms, cond, 50) then error("timed out waiting for " .. what) end
end

local ndomo = require("ndomo")
ndomo.setup({
  cmd = { python, "-m", "ndomo", "serve", "--log-level", "debug", "--log-file", os.getenv("NDOMO_TEST_LOG") },
  init_options = { model = { base_url = base_url, name = "fake-model" } },
  chat = { layout = os.getenv("NDOMO_TEST_LAYOUT") or "split" },
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

local function line_of(pattern)
  for i, l in ipairs(chat_lines()) do
    if l:find(pattern, 1, true) then return i end
  end
  return nil
end

-- approvals: answered "Once", after the chat has drawn the pending question
vim.ui.select = function(items, opts, on_choice)
  if opts.kind == "ndomo_notes" then -- :Ndomo notes: record the list, delete the first
    results.notes = vim.tbl_map(opts.format_item, items)
    return on_choice(items[1])
  end
  vim.schedule(function()
    local block
    for _, l in ipairs(chat_lines()) do
      if l:sub(1, 2) == "? " then
        table.insert(results.questions_in_chat, l)
        block = {}
      end
      -- an approval's lines, from its "? " line to the blank line after it
      if block and l == "" then block = nil elseif block then table.insert(block, l) end
      if block and opts.kind == "ndomo_approval" and not results.approval_block then results.approval_block = block end
    end
    if opts.kind == "ndomo_approval" then
      results.select_prompt = opts.prompt
      results.select_items = vim.tbl_map(opts.format_item, items)
    end
    for _, it in ipairs(items) do
      if type(it) == "table" and it.id == "once" then return on_choice(it) end -- ndomo/approve
      if (type(it) == "table" and it.title or it) == "Once" then return on_choice(it) end
    end
    on_choice(nil)
  end)
end

local function chat_win() return vim.fn.bufwinid(vim.fn.bufnr(chat.NAME)) end

local function send(prompt)
  vim.api.nvim_set_current_win(chat_win())
  local b = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(b, -2, -1, false, { prompt })
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(b), 0 })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
end

local function idle() return ndomo.last_status and not ndomo.last_status.busy end

local S = {}

function S.attach()
  vim.cmd.edit(file)
  local buf = vim.api.nvim_get_current_buf()
  wait(20000, function() return require("ndomo.client").get(buf) ~= nil end, "client")
  wait(20000, function() return ndomo.last_status ~= nil end, "first ndomo/status")
  vim.cmd("Ndomo chat")
  results.chat_open = chat_win() ~= -1
  results.layout_float = vim.api.nvim_win_get_config(chat_win()).relative ~= ""
end

-- the agent picked (its default mode with it); a resumed session keeps what it had
function S.agent()
  vim.cmd("Ndomo agent craftsman")
  wait(10000, function() return ndomo.last_status.agent == "craftsman" end, "agent craftsman")
end

-- a prompt from the input area; the command's output streams in while it runs
function S.stream()
  send("run the script")
  results.input_cleared = chat.input() == ""
  wait(30000, function() return has("    | started") end, "streamed output in the chat")
  results.while_running = chat_lines()
  results.busy_while_streaming = ndomo.last_status.busy
  local l = line_of("    | started")
  results.output_folded = vim.api.nvim_win_call(chat_win(), function() return vim.fn.foldclosed(l) end) ~= -1
  local f = assert(io.open(workspace .. "/go", "w"))
  f:close()
  wait(30000, function() return has("Ran it.") and has("✓ done") end, "the answer and the end")
  wait(10000, idle, "idle")
  results.after_stream = chat_lines()
end

-- a running tool call stopped from the chat (X on its line); the turn goes on
function S.stop_call()
  send("sleep now")
  wait(30000, function() return has("⚙ bash running") end, "the running sleep")
  vim.api.nvim_set_current_win(chat_win())
  vim.api.nvim_win_set_cursor(0, { line_of("⚙ bash running"), 0 })
  vim.api.nvim_feedkeys("X", "x", false)
  wait(30000, function() return has("Stopped the sleep, going on.") end, "the turn going on")
  wait(10000, idle, "idle")
  results.after_stop = chat_lines()
end

-- a code action's turn streams into the chat as well
function S.code_action()
  local buf = vim.fn.bufnr(file)
  vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
  vim.lsp.buf.code_action({
    range = { start = { 1, 0 }, ["end"] = { 2, 0 } },
    filter = function(a) return a.title == "ndomo: Fix with craftsman" end,
    apply = true,
  })
  -- the answer's first half is in the chat while the model holds back the second
  wait(30000, function() return has("Fixed: add") end, "the code action's first piece in the chat")
  results.code_action_streaming = chat_lines()
  results.busy_while_answering = ndomo.last_status.busy
  local f = assert(io.open(workspace .. "/release", "w"))
  f:close()
  wait(30000, function() return has("Fixed: add now adds.") end, "the code action's answer in the chat")
  wait(10000, idle, "idle")
  results.after_code_action = chat_lines()
end

-- the session's mode changes (not the agent's default): it must come back after a restart
function S.mode()
  vim.cmd("Ndomo mode brainstorming")
  wait(10000, function() return ndomo.last_status.mode == "brainstorming" end, "mode brainstorming")
end

-- the server dies (SIGKILL, no chance to save anything on the way out)
function S.kill()
  local log = assert(os.getenv("NDOMO_TEST_LOG"))
  local pids = vim.fn.systemlist({ "pgrep", "-f", "--", "--log-file " .. log })
  assert(#pids == 1, "one server for this log, got " .. vim.inspect(pids))
  results.killed = vim.uv.kill(tonumber(pids[1]), "sigkill") == 0
  wait(20000, function() return #vim.fn.systemlist({ "pgrep", "-f", "--", "--log-file " .. log }) == 0 end, "the server gone")
end

-- a fresh Neovim (and server) on the same workspace: the chat shows the session's history
function S.history()
  wait(20000, function() return has("> run the script") end, "the stored history")
  results.history = chat_lines()
  results.history_status = ndomo.last_status
end

-- notes listed and one deleted from the editor
function S.notes()
  local deleted = false
  local notify = vim.notify
  vim.notify = function(msg, ...)
    if tostring(msg):find("deleted note", 1, true) then deleted = true end
    return notify(msg, ...)
  end
  vim.cmd("Ndomo notes")
  wait(10000, function() return deleted end, "the note deleted")
  vim.notify = notify
end

for _, name in ipairs(steps) do
  local ok, err = pcall(S[name])
  if not ok then results.errors[name] = tostring(err) end
  save()
end
results.final = chat_lines()
save()
vim.cmd("qa!")
