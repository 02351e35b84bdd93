-- The review of a turn from the chat buffer (V on a turn) and :Ndomo review, in a real
-- headless Neovim against the real server (real bubblewrap for the turn's command) and the
-- scripted fake model. Results go to the JSON file named by $NDOMO_TEST_OUT.
local out_path = assert(os.getenv("NDOMO_TEST_OUT"))
local file = assert(os.getenv("NDOMO_TEST_FILE"))
local python = assert(os.getenv("NDOMO_TEST_PYTHON"))
local base_url = assert(os.getenv("NDOMO_BASE_URL"))
local workspace = vim.fs.dirname(file)
local results = { errors = {}, asked = {} }

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
local review = require("ndomo.review")

local function lines_of(name)
  local b = vim.fn.bufnr(name)
  return b > 0 and vim.api.nvim_buf_get_lines(b, 0, -1, false) or {}
end
local function line_of(name, pattern)
  for i, l in ipairs(lines_of(name)) do
    if l:find(pattern, 1, true) then return i end
  end
end
local function chat_win() return vim.fn.win_findbuf(vim.fn.bufnr(chat.NAME))[1] end -- in any tab
local function idle() return ndomo.last_status and not ndomo.last_status.busy end
local function read(rel)
  local f = io.open(workspace .. "/" .. rel)
  if not f then return vim.NIL end
  local text = f:read("*a")
  f:close()
  return text
end

vim.ui.select = function(items, opts, on_choice)
  local labels = vim.tbl_map(function(it) return opts.format_item and opts.format_item(it) or (type(it) == "table" and it.title or it) end, items)
  table.insert(results.asked, { prompt = opts.prompt, kind = opts.kind, items = labels })
  vim.schedule(function()
    for i, label in ipairs(labels) do
      if label:find("Run once", 1, true) or label == "Once" then return on_choice(items[i]) end
    end
    on_choice(nil)
  end)
end
local notes = {}
local notify = vim.notify
vim.notify = function(msg, ...)
  table.insert(notes, tostring(msg))
  return notify(msg, ...)
end
local function noted(pattern)
  for _, n in ipairs(notes) do
    if n:find(pattern, 1, true) then return n end
  end
end

local function send(prompt)
  vim.api.nvim_set_current_win(chat_win())
  local b = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(b, -2, -1, false, { prompt })
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(b), 0 })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
end

-- in the review buffer: the cursor on the line naming `id`, then `key`
local function on(id, key)
  local l = assert(line_of(review.NAME, id), "no line for " .. id)
  vim.api.nvim_set_current_win(vim.fn.bufwinid(vim.fn.bufnr(review.NAME)))
  vim.api.nvim_win_set_cursor(0, { l, 0 })
  vim.api.nvim_feedkeys(vim.keycode(key), "x", false)
end

local ok, err = pcall(function()
  vim.cmd.edit(file)
  wait(20000, function() return require("ndomo.client").get(0) ~= nil end, "client")
  wait(20000, function() return ndomo.last_status ~= nil end, "first ndomo/status")
  vim.cmd("Ndomo agent craftsman")
  wait(10000, function() return ndomo.last_status.agent == "craftsman" end, "agent craftsman")
  vim.cmd("Ndomo chat")
  send("change the files")
  wait(60000, function() return line_of(chat.NAME, "Changed them.") ~= nil end, "the answer")
  wait(10000, idle, "idle")
  results.changed = { a = read("a.txt"), gone = read("gone.txt"), made = read("made.txt") }
  -- V on the turn's prompt line opens its review
  vim.api.nvim_set_current_win(chat_win())
  vim.api.nvim_win_set_cursor(0, { line_of(chat.NAME, "> change the files"), 0 })
  vim.api.nvim_feedkeys("V", "x", false)
  wait(30000, function() return line_of(review.NAME, "made.txt#1") ~= nil end, "the review buffer")
  results.review = lines_of(review.NAME)
  -- reject a.txt's first hunk, the created and the deleted file, and b.txt's hunk; keep the rest
  on("a.txt#1", "r")
  on("made.txt#1", "r")
  on("gone.txt#1", "r")
  on("b.txt#1", "r")
  on("a.txt#2", "r")
  on("a.txt#2", "a") -- changed my mind: kept
  results.marked = lines_of(review.NAME)
  -- the user edits b.txt after the review: its rejection is refused, the file left alone
  local f = assert(io.open(workspace .. "/b.txt", "w"))
  f:write("B1\nmine\n")
  f:close()
  on("a.txt#1", "A")
  wait(30000, function() return noted("put back") ~= nil end, "the apply")
  results.applied = noted("put back")
  results.after = { a = read("a.txt"), b = read("b.txt"), gone = read("gone.txt"), made = read("made.txt") }
  results.review_closed = vim.fn.bufnr(review.NAME) == -1
  -- :Ndomo review: the last turn's review again, with what is left; <CR> opens the file
  vim.cmd("Ndomo review")
  wait(30000, function() return line_of(review.NAME, "a.txt#1") ~= nil end, "the second review")
  results.second = lines_of(review.NAME)
  on("a.txt#1", "<CR>")
  results.jumped = { name = vim.api.nvim_buf_get_name(0), line = vim.api.nvim_win_get_cursor(0)[1] }
  -- review_after_turn: the next turn that changes a file opens its review by itself
  ndomo.opts.review_after_turn = true
  vim.api.nvim_buf_delete(vim.fn.bufnr(review.NAME), { force = true })
  send("one more file")
  wait(60000, function() return line_of(review.NAME, "again.txt#1") ~= nil end, "the review after the turn")
  results.after_turn = lines_of(review.NAME)
end)
if not ok then results.errors.run = tostring(err) end
results.notes = notes
save()
vim.cmd("qa!")
