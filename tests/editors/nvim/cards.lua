-- The chat buffer's write / apply_patch hunks, a command's sandbox state, the decision lines
-- and a code action's chip in a real headless Neovim against the real server and the scripted
-- fake model; then the same read back from the server's stored history. Results go to the
-- JSON file named by $NDOMO_TEST_OUT.
local out_path = assert(os.getenv("NDOMO_TEST_OUT"))
local file = assert(os.getenv("NDOMO_TEST_FILE"))
local python = assert(os.getenv("NDOMO_TEST_PYTHON"))
local base_url = assert(os.getenv("NDOMO_BASE_URL"))
local results = { errors = {} }

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
  -- sandboxed, offline commands run without asking: the first command's decision line
  init_options = { model = { base_url = base_url, name = "fake-model" }, sandbox = { auto_allow = true } },
})
local chat = require("ndomo.chat")
local function chat_buf() return vim.fn.bufnr(chat.NAME) end
local function chat_lines() return vim.api.nvim_buf_get_lines(chat_buf(), 0, -1, false) end
local function has(pattern)
  for _, l in ipairs(chat_lines()) do
    if l:find(pattern, 1, true) then return true end
  end
  return false
end
local function line_of(text)
  for i, l in ipairs(chat_lines()) do
    if l == text then return i end
  end
end
local function chat_win() return vim.fn.bufwinid(chat_buf()) end
local function idle() return ndomo.last_status and not ndomo.last_status.busy end
vim.ui.select = function(items, _, on_choice)
  vim.schedule(function()
    for _, it in ipairs(items) do
      if type(it) == "table" and it.id == "once" then return on_choice(it) end -- ndomo/approve
    end
    on_choice(nil)
  end)
end

local function groups(l)
  local ns = vim.api.nvim_get_namespaces()["ndomo_chat"]
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(chat_buf(), ns, { l - 1, 0 }, { l - 1, -1 }, { details = true })) do
    table.insert(out, m[4].line_hl_group)
  end
  return out
end

local WATCHED = {
  "@ calc.py:2 · return a - b", "    new.txt:1 (new file)", "    @@ -0,0 +1,2 @@", "    +first", "    +second",
  "    calc.py:2", "    -    return a - b", "    +    return a + b", "    sandboxed · offline", "    sandboxed · network",
  "· auto-allowed (sandboxed, offline)", "· approved once by you",
}

local function marks()
  local m = {}
  for _, text in ipairs(WATCHED) do
    local l = line_of(text)
    m[text] = l and groups(l) or "missing"
  end
  return m
end

local ok, err = pcall(function()
  vim.cmd.edit(file)
  wait(20000, function() return require("ndomo.client").get(0) ~= nil end, "client")
  wait(20000, function() return ndomo.last_status ~= nil end, "first ndomo/status")
  vim.cmd("Ndomo agent craftsman")
  wait(10000, function() return ndomo.last_status.agent == "craftsman" end, "agent craftsman")
  vim.cmd("Ndomo mode autopilot")
  wait(10000, function() return ndomo.last_status.mode == "autopilot" end, "mode autopilot")
  vim.cmd("Ndomo chat")
  -- a turn on a selection, as a code action sends it: line 2 of calc.py
  local done = false
  require("ndomo.client").execute("ndomo.turn", {
    prompt = "make the files", uri = vim.uri_from_fname(file),
    range = { start = { line = 1, character = 0 }, ["end"] = { line = 1, character = 8 } },
  }, function() done = true end, vim.fn.bufnr(file))
  wait(90000, function() return done and has("Made them.") end, "the answer")
  wait(10000, idle, "idle")
  vim.wait(300)
  results.lines = chat_lines()
  results.marks = marks()
  -- the chip jumps to the selection's line; the write card's path to the new file
  vim.api.nvim_set_current_win(chat_win())
  vim.api.nvim_win_set_cursor(0, { line_of("@ calc.py:2 · return a - b"), 0 })
  vim.api.nvim_feedkeys("gf", "x", false)
  results.chip_jump = { name = vim.api.nvim_buf_get_name(0), line = vim.api.nvim_win_get_cursor(0)[1] }
  -- the conversation read again from the server's store: the same cards and lines
  chat._state().turns = {}
  chat.reload()
  wait(20000, function() return has("Made them.") end, "the reloaded history")
  vim.wait(300)
  results.reloaded = chat_lines()
  results.reloaded_marks = marks()
end)
if not ok then results.errors.run = tostring(err) end
save()
vim.cmd("qa!")
