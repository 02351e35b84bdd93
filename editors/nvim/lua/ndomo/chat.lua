--- :Ndomo chat — the conversation buffer: streams every turn this Neovim runs (its own
--- prompts and the code actions'), folds each tool call, shows pending questions, and takes
--- the next prompt from the input area under the separator.
---
--- Keys (normal mode, in the chat buffer): <CR> sends the input area, q closes the window,
--- <C-c> cancels the turn, X stops the tool call under the cursor (the turn goes on), R rewinds
--- to before the turn under the cursor (ndomo.rewind: files, conversation or both), V opens
--- the review of the turn under the cursor (ndomo.review). In insert
--- mode `@` completes a mention (ndomo.mentions): a file, @plan, @problems, @symbol:Name.
--- Layout: require("ndomo").setup({ chat = { layout = "split" | "vsplit" | "float" } }).
local client = require("ndomo.client")

local M = {}

M.NAME = "ndomo://chat"
M.SEPARATOR = "──── <CR> send · q close · <C-c> cancel turn · X stop tool call · R rewind · V review ────"
M.OUTPUT_LINES = 200 -- live output lines kept per tool call

local state = { turns = {}, questions = {}, status = nil, loaded = false }
local buf, ns
local HL = vim.api.nvim_create_namespace("ndomo_chat") -- the log's highlights (cards.GROUPS)
local call_lines = {} -- line number (1-based) → tool-call id, for X
local turn_lines = {} -- line number (1-based) → the stored turn it belongs to, for R
local file_lines = {} -- line number (1-based) → {path, lnum} a tool card's file line jumps to
local redraw_pending = false

local function opts()
  local o = require("ndomo").opts or {}
  return vim.tbl_extend("force", { layout = "split", height = 15, width = 80 }, o.chat or {})
end

-- model -----------------------------------------------------------------------------------

local function turn_for(id)
  if id == nil or id == vim.NIL then return state.turns[#state.turns] end
  for i = #state.turns, 1, -1 do
    if state.turns[i].id == id then return state.turns[i] end
  end
  return nil
end

local function find_call(id)
  for i = #state.turns, 1, -1 do
    for _, it in ipairs(state.turns[i].items) do
      if it.kind == "tool" and it.id == id then return it end
    end
  end
  return nil
end

local function str(v) return (v == nil or v == vim.NIL) and "" or tostring(v) end

--- One `ndomo/turn/event` into the model. Sub-agent turns show inside the running turn.
function M.apply(e)
  if type(e) ~= "table" then return end
  local k = e.kind
  if k == "turn_started" then
    local running = state.turns[#state.turns]
    if turn_for(e.turn_id) and e.turn_id ~= vim.NIL and running and running.id == e.turn_id then return end
    if running and running.status == "running" and running.id ~= vim.NIL then
      table.insert(running.items, { kind = "notice", text = ("%s (%s): %s"):format(str(e.agent), str(e.mode), str(e.prompt)) })
      return
    end
    state.rewound = nil
    table.insert(state.turns, { id = e.turn_id, prompt = str(e.prompt), agent = str(e.agent), mode = str(e.mode),
      status = "running", items = {}, selection = M.selection_of(e.selection) })
  elseif k == "text" then
    local t = turn_for(e.turn_id) or state.turns[#state.turns]
    if not t then return end
    local last = t.items[#t.items]
    if last and last.kind == "text" then last.text = last.text .. str(e.text)
    else table.insert(t.items, { kind = "text", text = str(e.text) }) end
  elseif k == "tool_started" then
    local t = turn_for(e.turn_id) or state.turns[#state.turns]
    if not t then return end
    table.insert(t.items, { kind = "tool", id = e.call_id, name = str(e.name), args = e.arguments or {},
      status = "running", summary = "", output = "" })
  elseif k == "tool_output" then
    local c = find_call(e.call_id)
    if c then c.output = c.output .. str(e.text) end
  elseif k == "tool_finished" then
    local c = find_call(e.call_id)
    if c then
      c.status, c.summary = str(e.status), str(e.summary)
      if type(e.sandbox) == "string" and e.sandbox ~= "" then c.sandbox = e.sandbox end
      if type(e.files) == "table" and #e.files > 0 then c.files = e.files end
    end
  elseif k == "decision" then
    -- an approval of a running call was decided (by the user, or sandbox.auto_allow)
    local t = turn_for(e.turn_id) or state.turns[#state.turns]
    if t then table.insert(t.items, { kind = "decision", text = str(e.text) }) end
  elseif k == "notice" then
    local t = turn_for(e.turn_id) or state.turns[#state.turns]
    if t then table.insert(t.items, { kind = "notice", text = ("%s: %s"):format(str(e.level), str(e.message)) }) end
  elseif k == "turn_finished" then
    local t = turn_for(e.turn_id)
    if not t or t.status ~= "running" then return end
    t.status, t.error = str(e.status), str(e.error)
    for _, it in ipairs(t.items) do
      if it.kind == "tool" and it.status == "running" then it.status = "cancelled" end
    end
  end
end

--- A turn's selection (a code action's: file, lines, text), or nil.
function M.selection_of(s)
  if type(s) ~= "table" or type(s.path) ~= "string" or s.path == "" then return nil end
  local line = function(v) return type(v) == "number" and v > 0 and v or nil end
  return { path = s.path, start_line = line(s.start_line), end_line = line(s.end_line),
    text = type(s.text) == "string" and s.text or nil }
end

--- A selection's chip line: "@ calc.py:2–3 · return a - b" (the first selected line with text, cut).
function M.chip_text(s)
  local place = s.path
  if s.start_line then
    place = place .. ":" .. s.start_line .. ((s.end_line and s.end_line ~= s.start_line) and ("–" .. s.end_line) or "")
  end
  local first = ""
  for _, l in ipairs(vim.split(s.text or "", "\n", { plain = true })) do
    if vim.trim(l) ~= "" then first = vim.trim(l) break end
  end
  if #first > 60 then first = first:sub(1, 60) .. "…" end
  return "@ " .. place .. (first ~= "" and (" · " .. first) or "")
end

--- The `ndomo.session.open` result: the stored conversation.
function M.load_history(view)
  if type(view) ~= "table" then return end
  local turns = {}
  for _, t in ipairs(view.turns or {}) do
    local items = {}
    for _, i in ipairs(t.items or {}) do
      if i.kind == "tool" then
        local res = str(i.result)
        -- the status the turn saw (refused, failed …); rows stored before it was kept: by the result
        local status = type(i.status) == "string" and i.status or (i.result == vim.NIL and "cancelled" or "done")
        table.insert(items, { kind = "tool", id = i.call_id, name = str(i.name), args = i.arguments or {},
          status = status, summary = vim.split(res, "\n")[1] or "", output = res,
          sandbox = type(i.sandbox) == "string" and i.sandbox or nil,
          files = type(i.files) == "table" and #i.files > 0 and i.files or nil })
        -- how its approval was decided: the line the live chat showed after the card
        if type(i.decision) == "string" and i.decision ~= "" then
          table.insert(items, { kind = "decision", text = i.decision })
        end
      else
        table.insert(items, { kind = "text", text = str(i.text) })
      end
    end
    table.insert(turns, { id = t.id, prompt = str(t.prompt), agent = str(t.agent), mode = str(t.mode),
      status = str(t.status), error = str(t.error), items = items, selection = M.selection_of(t.selection) })
  end
  -- a turn that started before the history came back: the live one (with what it streamed
  -- so far) replaces its stored copy, whose status would stay "running" forever
  for _, t in ipairs(state.turns) do
    if t.status == "running" then
      local at
      for i, h in ipairs(turns) do
        if t.id ~= vim.NIL and h.id == t.id then at = i end
      end
      if at then turns[at] = t else table.insert(turns, t) end
    end
  end
  state.turns = turns
  if type(view.status) == "table" then state.status = view.status end
end

local OUTCOME = {
  running = "… working", done = "✓ done", cancelled = "✗ cancelled",
  interrupted = "✗ interrupted (the server stopped)",
}

local function outcome(t)
  if t.status == "blocked" then return "⚑ handed back: " .. (t.error ~= "" and t.error or "blocked") end
  -- the iteration cap, the output cap or a loop: the error says which
  if t.status == "capped" then return "✗ stopped: " .. (t.error ~= "" and t.error or "a cap was reached") end
  return OUTCOME[t.status] or ("✗ failed" .. (t.error ~= "" and (": " .. t.error) or ""))
end

local function push_text(lines, text, prefix)
  for _, l in ipairs(vim.split(text, "\n", { plain = true })) do table.insert(lines, (prefix or "") .. l) end
end

--- The log as lines (above the separator), which line shows which tool call, and which
--- stored turn each line belongs to.
function M.render()
  local lines, calls, turns, marks, files = {}, {}, {}, {}, {}
  local c = client.get()
  local root = c and c.config and c.config.root_dir or nil
  local cards = require("ndomo.cards")
  local s = state.status
  if type(s) == "table" then
    local extra = ""
    if s.state and s.state ~= vim.NIL and not ({ [""] = 1, idle = 1, done = 1 })[s.state] then extra = " · " .. s.state end
    if type(s.plan) == "table" then extra = extra .. (" · plan %s/%s"):format(str(s.plan.done), str(s.plan.total)) end
    table.insert(lines, ("# ndomo · %s · %s%s%s"):format(str(s.agent), str(s.mode), s.busy and " · working" or "", extra))
  else
    table.insert(lines, "# ndomo")
  end
  for _, t in ipairs(state.turns) do
    table.insert(lines, "")
    local first_line = #lines + 1
    table.insert(lines, ("## %s · %s"):format(t.agent, t.mode))
    marks[#lines] = "NdomoChatPrompt"
    push_text(lines, t.prompt, "> ")
    if t.selection then -- a code action's turn: the file and lines it is about (jumpable)
      table.insert(lines, M.chip_text(t.selection))
      marks[#lines] = "NdomoChatPath"
      local p = t.selection.path
      files[#lines] = { path = (p:sub(1, 1) == "/" or not root) and p or (root .. "/" .. p), lnum = t.selection.start_line or 1 }
    end
    for _, it in ipairs(t.items) do
      if it.kind == "text" then
        push_text(lines, it.text)
      elseif it.kind == "notice" then
        table.insert(lines, "! " .. it.text)
        marks[#lines] = "NdomoChatNotice"
      elseif it.kind == "decision" then
        table.insert(lines, "· " .. it.text)
        marks[#lines] = "NdomoChatDecision"
      else
        local mark = it.status == "running" and "⚙" or (it.status == "done" and "✓" or "✗")
        local head = ("%s %s %s%s"):format(mark, it.name, it.status, it.summary ~= "" and (": " .. it.summary) or "")
        table.insert(lines, head)
        calls[#lines] = it.id
        marks[#lines] = it.status == "done" and "NdomoChatOk" or (it.status ~= "running" and "NdomoChatFail" or nil)
        for _, b in ipairs(cards.body(it, root)) do
          table.insert(lines, b.text)
          marks[#lines], files[#lines] = b.hl, b.file
        end
        local out = vim.split(it.output, "\n", { plain = true })
        local first = math.max(1, #out - M.OUTPUT_LINES + 1)
        for i = first, #out do
          if not (i == #out and out[i] == "") then table.insert(lines, "    | " .. out[i]) end
        end
      end
    end
    table.insert(lines, outcome(t))
    marks[#lines] = (t.status == "done" and "NdomoChatOk") or (t.status ~= "running" and "NdomoChatFail") or nil
    if type(t.id) == "number" then
      for l = first_line, #lines do turns[l] = t.id end
    end
  end
  if state.rewound then
    table.insert(lines, "")
    table.insert(lines, "! " .. state.rewound)
  end
  for _, q in ipairs(state.questions) do
    table.insert(lines, "")
    if q.parts then
      for _, l in ipairs(M.approval_lines(q.parts)) do table.insert(lines, l) end
    else
      -- a buffer line holds no newline: an approval's message has one per checked command
      local parts = vim.split(q.message, "\n", { plain = true })
      for i, part in ipairs(parts) do
        local tail = i == #parts and (" — answer in the picker: " .. table.concat(q.choices, " / ")) or ""
        table.insert(lines, (i == 1 and "? " or "  ") .. part .. tail)
      end
    end
  end
  table.insert(lines, "")
  return lines, calls, turns, marks, files
end

-- buffer ----------------------------------------------------------------------------------

local function separator_line(b)
  local lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
  for i = #lines, 1, -1 do
    if lines[i] == M.SEPARATOR then return i end
  end
  return nil
end

--- Tool-call bodies (indented lines) fold; the folds start closed.
function M.foldexpr(lnum)
  local line = vim.fn.getline(lnum)
  return line:sub(1, 4) == "    " and "1" or "0"
end

function M.redraw()
  redraw_pending = false
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then return end
  local lines, calls, turns, marks, files = M.render()
  local sep = separator_line(buf)
  local log_end = sep and sep - 1 or vim.api.nvim_buf_line_count(buf)
  if not sep then
    lines[#lines + 1] = M.SEPARATOR
    lines[#lines + 1] = ""
    log_end = -1
  end
  local wins = vim.fn.win_findbuf(buf)
  local follow = {}
  for _, w in ipairs(wins) do -- windows reading the end of the log keep following it
    follow[w] = vim.api.nvim_win_get_cursor(w)[1] >= log_end - 1
  end
  vim.api.nvim_buf_set_lines(buf, 0, log_end, false, lines)
  call_lines = calls
  turn_lines = turns
  file_lines = files
  vim.api.nvim_buf_clear_namespace(buf, HL, 0, -1)
  for l, group in pairs(marks) do
    pcall(vim.api.nvim_buf_set_extmark, buf, HL, l - 1, 0, { line_hl_group = group, priority = 120 })
  end
  local new_sep = separator_line(buf)
  for _, w in ipairs(wins) do
    if follow[w] and new_sep then pcall(vim.api.nvim_win_set_cursor, w, { new_sep - 1, 0 }) end
  end
end

--- Redraws are merged: many events in one tick draw once.
local function schedule_redraw()
  if redraw_pending then return end
  redraw_pending = true
  vim.schedule(M.redraw)
end

--- The input area's text (everything under the separator).
function M.input()
  local sep = separator_line(buf)
  if not sep then return "" end
  return vim.trim(table.concat(vim.api.nvim_buf_get_lines(buf, sep, -1, false), "\n"))
end

local function notify_error(err)
  vim.notify("ndomo: " .. (type(err) == "table" and (err.message or vim.inspect(err)) or tostring(err)), vim.log.levels.ERROR)
end

function M.send()
  local prompt = M.input()
  if prompt == "" then return end
  local sep = separator_line(buf)
  vim.api.nvim_buf_set_lines(buf, sep, -1, false, { "" })
  local mentions = require("ndomo.mentions").resolve(prompt)
  client.execute("ndomo.turn", { prompt = prompt, mentions = #mentions > 0 and mentions or nil }, function(err, result)
    if err then return notify_error(err) end
    if type(result) == "table" and (result.turn_id == nil or result.turn_id == vim.NIL) then
      -- no turn ran: a slash command's payload, or a refusal (another turn is running …)
      local text = (result.error and result.error ~= vim.NIL) and result.error or vim.inspect(result.payload)
      table.insert(state.turns, { id = vim.NIL, prompt = prompt, agent = str(result.agent), mode = str(result.mode),
        status = str(result.status), error = str(result.error), items = { { kind = "text", text = text } } })
      schedule_redraw()
    end
  end)
end

function M.cancel()
  client.execute("ndomo.cancel", {}, function(err) if err then notify_error(err) end end)
end

--- Stop the tool call on (or above) the cursor line.
function M.stop_call()
  local lnum = vim.api.nvim_win_get_cursor(0)[1]
  for l = lnum, 1, -1 do
    local id = call_lines[l]
    if id then
      client.execute("ndomo.toolcall.cancel", { id = id }, function(err) if err then notify_error(err) end end)
      return id
    end
  end
  vim.notify("ndomo: no tool call here", vim.log.levels.WARN)
end

--- Open the file a tool card's line names (an edit's path at its line), in the previous
--- window; false when the cursor is on no such line.
function M.open_file()
  local target = file_lines[vim.api.nvim_win_get_cursor(0)[1]]
  if not target then return false end
  vim.cmd("wincmd p")
  if vim.api.nvim_get_current_buf() == buf then vim.cmd("aboveleft split") end
  vim.cmd.edit(vim.fn.fnameescape(target.path))
  pcall(vim.api.nvim_win_set_cursor, 0, { target.lnum, 0 })
  return true
end

--- <CR>: on a tool card's file line it opens the file; elsewhere it sends the input area.
function M.enter()
  local sep = separator_line(buf)
  if sep and vim.api.nvim_win_get_cursor(0)[1] < sep and M.open_file() then return end
  M.send()
end

--- Rewind to before the turn under the cursor (its files, its conversation or both), then
--- show the conversation as the server now has it.
function M.rewind_here()
  local id = turn_lines[vim.api.nvim_win_get_cursor(0)[1]]
  if not id then
    return vim.notify("ndomo: no stored turn here (R works on a turn of the log)", vim.log.levels.WARN)
  end
  require("ndomo.rewind").to(id, function(res)
    state.rewound = type(res) == "table" and res.message or "rewound"
    M.reload()
  end)
  return id
end

local function ensure_buf()
  if buf and vim.api.nvim_buf_is_valid(buf) then return buf end
  buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, buf, M.NAME)
  vim.bo[buf].filetype = "markdown"
  require("ndomo.cards").setup()
  -- answers are markdown: treesitter highlights them (and their fenced code) where it can
  pcall(vim.treesitter.start, buf, "markdown")
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  local map = function(lhs, fn, desc) vim.keymap.set("n", lhs, fn, { buffer = buf, desc = "ndomo chat: " .. desc, nowait = true }) end
  map("<CR>", M.enter, "send the input area (on a tool card's file: open it)")
  map("gf", function() if not M.open_file() then vim.notify("ndomo: no file on this line", vim.log.levels.WARN) end end,
    "open the file of the tool card line")
  map("q", M.close, "close")
  map("<C-c>", M.cancel, "cancel the turn")
  map("X", M.stop_call, "stop the tool call under the cursor")
  map("R", M.rewind_here, "rewind to before the turn under the cursor")
  map("V", function()
    local id = turn_lines[vim.api.nvim_win_get_cursor(0)[1]]
    if not id then return vim.notify("ndomo: no stored turn here (V works on a turn of the log)", vim.log.levels.WARN) end
    require("ndomo.review").open(id)
  end, "review the changes of the turn under the cursor")
  require("ndomo.mentions").setup(buf)
  M.redraw()
  return buf
end

local function set_window_options(win)
  vim.wo[win].foldmethod = "expr"
  vim.wo[win].foldexpr = "v:lua.require'ndomo.chat'.foldexpr(v:lnum)"
  vim.wo[win].foldlevel = 0
  vim.wo[win].wrap = true
  vim.wo[win].number = false
  -- the session's status and token usage, as plain text (%{}: not read as statusline items)
  vim.wo[win].statusline = "%{v:lua.require'ndomo'.chat_statusline()}"
end

--- Open (or focus) the chat window; `layout` overrides the configured one.
function M.open(layout)
  local b = ensure_buf()
  local win = vim.fn.bufwinid(b)
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
  else
    local o = opts()
    layout = (layout and layout ~= "") and layout or o.layout
    if layout == "float" then
      local w = math.min(o.width, vim.o.columns - 4)
      local h = math.max(5, vim.o.lines - 6)
      win = vim.api.nvim_open_win(b, true, { relative = "editor", width = w, height = h, row = 1,
        col = math.floor((vim.o.columns - w) / 2), border = "rounded", title = " ndomo ", style = "minimal" })
    else
      vim.cmd(layout == "vsplit" and "botright vsplit" or ("botright " .. o.height .. "split"))
      win = vim.api.nvim_get_current_win()
      vim.api.nvim_win_set_buf(win, b)
    end
    set_window_options(win)
  end
  M.load()
  local sep = separator_line(b)
  if sep then pcall(vim.api.nvim_win_set_cursor, 0, { sep + 1, 0 }) end
  return b
end

--- The session's stored conversation, once (again after the current session changed).
--- Read the conversation again from the server (after a rewind).
function M.reload()
  state.loaded = false
  M.load()
end

function M.load()
  if state.loaded then return end
  state.loaded = true
  client.execute("ndomo.session.open", {}, function(err, view)
    if err then
      state.loaded = false
      return notify_error(err)
    end
    M.load_history(view)
    schedule_redraw()
  end)
end

--- The chat buffer is shown in a window of this Neovim.
function M.visible() return buf ~= nil and vim.api.nvim_buf_is_valid(buf) and #vim.fn.win_findbuf(buf) > 0 end

function M.close()
  if not buf then return end
  for _, w in ipairs(vim.fn.win_findbuf(buf)) do
    if #vim.api.nvim_list_wins() > 1 then vim.api.nvim_win_close(w, true) end
  end
end

--- An `ndomo/approve` request as chat lines: "? <reason>", who wants what, the subject as a
--- fenced block, the choices (the first is the primary one) and the details, each on a line.
function M.approval_lines(p)
  local out = {}
  local reason = str(p.reason)
  table.insert(out, "? " .. (reason ~= "" and reason or ("approve " .. str(p.permission) .. "?")))
  table.insert(out, ("  %s (%s) wants %s:"):format(str(p.agent), str(p.mode), str(p.permission)))
  local shell = p.network ~= nil and p.network ~= vim.NIL
  table.insert(out, shell and "  ```bash" or "  ```")
  for _, l in ipairs(vim.split(str(p.subject), "\n", { plain = true })) do table.insert(out, "  " .. l) end
  table.insert(out, "  ```")
  local choices = {}
  for i, c in ipairs(type(p.choices) == "table" and p.choices or {}) do
    table.insert(choices, i == 1 and ("[" .. str(c.label) .. "]") or str(c.label))
  end
  table.insert(out, "  " .. table.concat(choices, " · ") .. " — answer in the picker")
  local details = {}
  if str(p.rule) ~= "" then table.insert(details, ("Always saves `%s`"):format(str(p.rule))) end
  if shell then
    table.insert(details, str(p.sandbox) ~= "" and str(p.sandbox) or "sandbox unknown")
    local dest = type(p.destinations) == "table" and #p.destinations > 0 and table.concat(p.destinations, ", ") or nil
    table.insert(details, dest and ("reaching only " .. dest) or (p.network and "WITH network" or "without network"))
  end
  if #details > 0 then table.insert(out, "  " .. table.concat(details, " · ")) end
  return out
end

--- An approval (`ndomo/approve`) is pending: shown in the chat until answered. How it was
--- decided comes from the server (a `decision` event: the turn's line, stored with the call).
function M.approval(params)
  local q = { parts = params, choices = {} }
  table.insert(state.questions, q)
  schedule_redraw()
  return function()
    for i, x in ipairs(state.questions) do
      if x == q then table.remove(state.questions, i) break end
    end
    schedule_redraw()
  end
end

--- A question (approval, ask_user) is pending: shown in the chat until answered.
function M.question(message, choices)
  local q = { message = message, choices = choices }
  table.insert(state.questions, q)
  schedule_redraw()
  return function()
    for i, x in ipairs(state.questions) do
      if x == q then table.remove(state.questions, i) break end
    end
    schedule_redraw()
  end
end

-- wiring ----------------------------------------------------------------------------------

function M.setup()
  ns = ns or vim.api.nvim_create_augroup("ndomo_chat", { clear = true })
  vim.api.nvim_create_autocmd("User", {
    group = ns, pattern = "NdomoTurnEvent",
    callback = function(ev)
      M.apply(ev.data)
      if buf and vim.api.nvim_buf_is_valid(buf) then schedule_redraw() end
    end,
  })
  vim.api.nvim_create_autocmd("User", {
    group = ns, pattern = "NdomoStatus",
    callback = function(ev)
      local s = ev.data
      if type(s) ~= "table" then return end
      if state.status and state.status.session ~= s.session then
        state.turns, state.loaded = {}, false -- another session became current
        if buf and #vim.fn.win_findbuf(buf) > 0 then M.load() end
      end
      state.status = s
      if buf and vim.api.nvim_buf_is_valid(buf) then schedule_redraw() end
    end,
  })
end

--- For tests: the whole model.
function M._state() return state end

return M
