-- The chat buffer's tool cards and highlighting in a real headless Neovim against the real
-- server and the scripted fake model. Results go to the JSON file named by $NDOMO_TEST_OUT.
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
  init_options = { model = { base_url = base_url, name = "fake-model" } },
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
vim.ui.select = function(items, opts, on_choice)
  vim.schedule(function()
    for _, it in ipairs(items) do
      if type(it) == "table" and it.id == "once" then return on_choice(it) end -- ndomo/approve
      if (type(it) == "table" and it.title or it) == "Once" then return on_choice(it) end
    end
    on_choice(nil)
  end)
end

--- The highlight groups of the log's line `l` (1-based).
local function groups(l)
  local ns = vim.api.nvim_get_namespaces()["ndomo_chat"]
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(chat_buf(), ns, { l - 1, 0 }, { l - 1, -1 }, { details = true })) do
    table.insert(out, m[4].line_hl_group)
  end
  return out
end

local ok, err = pcall(function()
  vim.cmd.edit(file)
  wait(20000, function() return require("ndomo.client").get(0) ~= nil end, "client")
  wait(20000, function() return ndomo.last_status ~= nil end, "first ndomo/status")
  vim.cmd("Ndomo agent craftsman")
  wait(10000, function() return ndomo.last_status.agent == "craftsman" end, "agent craftsman")
  vim.cmd("Ndomo chat")
  local b = chat_buf()
  vim.api.nvim_set_current_win(chat_win())
  vim.api.nvim_buf_set_lines(b, -2, -1, false, { "fix add" })
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(b), 0 })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  wait(60000, function() return has("Fixed it.") end, "the answer")
  wait(10000, idle, "idle")
  vim.wait(300)
  results.lines = chat_lines()
  local marks = {}
  for _, text in ipairs({ "    calc.py:2", "    -    return a - b", "    +    return a + b", "    ```sh", "    exit 3",
    "> fix add", "✗ bash failed: exit code: 3" }) do
    local l = line_of(text)
    marks[text] = l and groups(l) or "missing"
  end
  results.marks = marks
  results.treesitter = vim.treesitter.highlighter.active[b] ~= nil
  -- gf on the edit card's path line opens the file at the changed line
  vim.api.nvim_set_current_win(chat_win())
  vim.api.nvim_win_set_cursor(0, { line_of("    calc.py:2"), 0 })
  vim.api.nvim_feedkeys("gf", "x", false)
  results.jumped = { name = vim.api.nvim_buf_get_name(0), line = vim.api.nvim_win_get_cursor(0)[1] }
  -- the history as the server stored it: the failed command stays failed
  chat.reload()
  wait(20000, function() return has("✗ bash failed") and has("Fixed it.") end, "the reloaded history")
  results.reloaded = chat_lines()
end)
if not ok then results.errors.run = tostring(err) end
save()
vim.cmd("qa!")
