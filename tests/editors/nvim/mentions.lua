-- Mentions in the chat buffer (:Ndomo chat) of a real headless Neovim, against the real server,
-- a real second language server (jedi-language-server: workspace symbols) and the scripted fake
-- model. Results go to the JSON file named by $NDOMO_TEST_OUT.
local out_path = assert(os.getenv("NDOMO_TEST_OUT"))
local file = assert(os.getenv("NDOMO_TEST_FILE"))
local python = assert(os.getenv("NDOMO_TEST_PYTHON"))
local jedi = assert(os.getenv("NDOMO_TEST_JEDI"))
local base_url = assert(os.getenv("NDOMO_BASE_URL"))
local workspace = vim.fs.dirname(file)
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
local mentions = require("ndomo.mentions")

local function chat_win() return vim.fn.bufwinid(vim.fn.bufnr(chat.NAME)) end
local function idle() return ndomo.last_status and not ndomo.last_status.busy end
local function has(pattern)
  for _, l in ipairs(vim.api.nvim_buf_get_lines(vim.fn.bufnr(chat.NAME), 0, -1, false)) do
    if l:find(pattern, 1, true) then return true end
  end
  return false
end

local function input_line()
  local b = vim.fn.bufnr(chat.NAME)
  return vim.api.nvim_buf_get_lines(b, -2, -1, false)[1]
end

local S = {}

function S.setup()
  -- calc.py: changed in its buffer, not saved (the buffer must win over the disk)
  vim.cmd.edit(file)
  local buf = vim.api.nvim_get_current_buf()
  wait(20000, function() return require("ndomo.client").get(buf) ~= nil end, "ndomo client")
  wait(20000, function() return ndomo.last_status ~= nil end, "first ndomo/status")
  vim.api.nvim_buf_set_lines(buf, 1, 2, false, { "    return a + b  # unsaved fix" })
  results.modified = vim.bo[buf].modified
  -- problems: one from another source (shown), one of ndomo's own (left out)
  vim.diagnostic.set(vim.api.nvim_create_namespace("test-linter"), buf, {
    { lnum = 1, col = 4, end_lnum = 1, end_col = 16, severity = vim.diagnostic.severity.WARN,
      message = "suspicious operator", source = "testlint", code = "T100" },
  })
  vim.diagnostic.set(vim.api.nvim_create_namespace("ndomo-own-test"), buf, {
    { lnum = 0, col = 0, severity = vim.diagnostic.severity.INFO, message = "ndomo's own note", source = "ndomo" },
  })
  -- shapes.py with a real language server for its symbols
  vim.cmd.edit(workspace .. "/shapes.py")
  local shapes = vim.api.nvim_get_current_buf()
  vim.lsp.start({ name = "jedi", cmd = { jedi }, root_dir = workspace }, { bufnr = shapes })
  wait(30000, function()
    local c = vim.lsp.get_clients({ name = "jedi" })[1]
    return c and c.initialized and c.server_capabilities and c.server_capabilities.workspaceSymbolProvider ~= nil
  end, "jedi-language-server")
  vim.cmd("Ndomo chat")
  results.chat_open = chat_win() ~= -1
  local cb = vim.fn.bufnr(chat.NAME)
  results.omnifunc = vim.bo[cb].omnifunc
  results.at_mapped = vim.fn.maparg("@", "i", false, true).buffer == 1
end

-- `@` in the input opens the completion; typing narrows it; <C-n><C-y> takes the file
function S.complete_file()
  vim.api.nvim_set_current_win(chat_win())
  local b = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(b, -2, -1, false, { "fix" })
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(b), 0 })
  vim.api.nvim_feedkeys(vim.keycode("A @cal<C-n><C-y><Esc>"), "x", false)
  results.after_file = input_line()
  -- what `@` offers before anything is typed, and for a fuzzy word
  -- the cursor as insert mode has it after typing "x @" (normal mode stops on the last char)
  vim.api.nvim_buf_set_lines(b, -2, -1, false, { "x @a" })
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(b), 3 })
  results.findstart = mentions.complete(1, "")
  results.offered = vim.tbl_map(function(i) return i.word end, mentions.complete(0, ""))
  results.fuzzy = vim.tbl_map(function(i) return i.word end, mentions.complete(0, "shps"))
end

-- `@symbol:Circ` then <C-x><C-o>: the other language server's workspace symbols
function S.complete_symbol()
  local b = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(b, -2, -1, false, { results.after_file })
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(b), 0 })
  vim.api.nvim_feedkeys(vim.keycode("A using @symbol:Circ<C-x><C-o><C-n><C-y><Esc>"), "x", false)
  results.after_symbol = input_line()
end

function S.send()
  local b = vim.api.nvim_get_current_buf()
  local line = input_line() .. ", see @problems and @plan and @notes.md"
  vim.api.nvim_buf_set_lines(b, -2, -1, false, { line })
  results.prompt = line
  results.resolved = mentions.resolve(line)
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(b), 0 })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  wait(30000, function() return has("mentions seen") end, "the answer")
  wait(10000, idle, "idle")
  -- still unsaved: the mention read the buffer, it did not save it
  results.still_modified = vim.bo[vim.fn.bufnr(file)].modified
end

-- a mention outside the workspace: the server's error, nothing sent
function S.outside()
  local errors = {}
  local notify = vim.notify
  vim.notify = function(msg, ...)
    table.insert(errors, tostring(msg))
    return notify(msg, ...)
  end
  local b = vim.fn.bufnr(chat.NAME)
  vim.api.nvim_set_current_win(chat_win())
  vim.api.nvim_buf_set_lines(b, -2, -1, false, { "read @" .. os.getenv("NDOMO_TEST_OUTSIDE") })
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(b), 0 })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  wait(20000, function() return #errors > 0 end, "the refusal")
  vim.notify = notify
  results.outside_errors = errors
end

for _, name in ipairs({ "setup", "complete_file", "complete_symbol", "send", "outside" }) do
  local ok, err = pcall(S[name])
  if not ok then results.errors[name] = tostring(err) end
  save()
  if not ok then break end
end
save()
for _, c in ipairs(vim.lsp.get_clients({ name = "jedi" })) do c:stop(true) end
vim.cmd("qa!")
