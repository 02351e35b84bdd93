-- Rewind from the chat buffer (R on a turn) and :Ndomo rewind, in a real headless Neovim
-- against the real server (real bubblewrap for the turn's command) and the scripted fake
-- model. Results go to the JSON file named by $NDOMO_TEST_OUT.
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
end
local function chat_win() return vim.fn.bufwinid(vim.fn.bufnr(chat.NAME)) end
local function idle() return ndomo.last_status and not ndomo.last_status.busy end
local function exists(rel) return vim.uv.fs_stat(workspace .. "/" .. rel) ~= nil end

-- the user's answers: approvals "Once"; the rewind pickers as the test says
local answers = {}
vim.ui.select = function(items, opts, on_choice)
  local labels = vim.tbl_map(function(it) return opts.format_item and opts.format_item(it) or (type(it) == "table" and it.title or it) end, items)
  table.insert(results.asked, { prompt = opts.prompt, kind = opts.kind, items = labels })
  vim.schedule(function()
    local want = answers[opts.kind or ""] or (opts.kind == "ndomo_approval" and "Run once" or "Once")
    for i, label in ipairs(labels) do
      if label == want or label:find(want, 1, true) then return on_choice(items[i]) end
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

local function send(prompt)
  vim.api.nvim_set_current_win(chat_win())
  local b = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(b, -2, -1, false, { prompt })
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(b), 0 })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
end

local function rewound()
  for _, n in ipairs(notes) do
    if n:find("rewound to before turn", 1, true) then return n end
  end
end

local ok, err = pcall(function()
  vim.cmd.edit(file)
  wait(20000, function() return require("ndomo.client").get(0) ~= nil end, "client")
  wait(20000, function() return ndomo.last_status ~= nil end, "first ndomo/status")
  vim.cmd("Ndomo agent craftsman")
  wait(10000, function() return ndomo.last_status.agent == "craftsman" end, "agent craftsman")
  vim.cmd("Ndomo chat")
  send("make the files")
  wait(60000, function() return has("Made them.") end, "the first answer")
  wait(10000, idle, "idle")
  results.made = exists("made.txt") and exists("second.txt")
  send("now something else")
  wait(60000, function() return has("Something else.") end, "the second answer")
  wait(10000, idle, "idle")
  -- R on the first turn's prompt line: files and conversation go back
  answers.ndomo_rewind_what = "files and conversation"
  vim.api.nvim_set_current_win(chat_win())
  vim.api.nvim_win_set_cursor(0, { line_of("> make the files"), 0 })
  vim.api.nvim_feedkeys("R", "x", false)
  wait(30000, rewound, "the rewind")
  results.rewound = rewound()
  results.after_rewind = { made = exists("made.txt"), second = exists("second.txt") }
  wait(10000, function() return has("! rewound to before turn") end, "the rewind in the chat")
  results.chat_after_rewind = chat_lines()
  -- the next prompt continues from before the first one
  send("what now?")
  wait(60000, function() return has("Fresh start.") end, "the third answer")
  wait(10000, idle, "idle")
  -- :Ndomo rewind lists the prompts; files only, back before "what now?" (nothing to put back)
  notes = {}
  answers.ndomo_rewind = "what now?"
  answers.ndomo_rewind_what = "files only"
  vim.cmd("Ndomo rewind")
  wait(30000, rewound, "the second rewind")
  results.second_rewind = rewound()
end)
if not ok then results.errors.run = tostring(err) end
results.final = chat_lines()
save()
vim.cmd("qa!")
