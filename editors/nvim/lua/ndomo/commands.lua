--- :Ndomo ask|fix|plan|mode|agent|cancel|undo|plans|health|new|transcript|chat|notes, with completion.
local client = require("ndomo.client")
local ui = require("ndomo.ui")

local M = {}

M.MODES = { "discussion", "brainstorming", "autopilot" }
M.DEFAULT_AGENTS = { "foreman", "craftsman" }
-- The same wording as the server's code actions.
M.FIX_PROMPT = "Fix the problems in the selected code."
M.PLAN_PROMPT = "Plan the change to the selected code as an atomic plan."

local function notify(msg, level) vim.notify(msg, level or vim.log.levels.INFO, { title = "ndomo" }) end

local function fail(err)
  notify("ndomo: " .. (type(err) == "table" and (err.message or vim.inspect(err)) or tostring(err)), vim.log.levels.ERROR)
end

--- uri + LSP range of lines l1..l2 (1-based, inclusive) of the current buffer.
function M.selection(l1, l2)
  local bufnr = vim.api.nvim_get_current_buf()
  local last = vim.api.nvim_buf_get_lines(bufnr, l2 - 1, l2, false)[1] or ""
  return {
    uri = vim.uri_from_bufnr(bufnr),
    range = { start = { line = l1 - 1, character = 0 }, ["end"] = { line = l2 - 1, character = #last } },
  }
end

--- Run a turn; the answer lands in the transcript (and vim.notify).
function M.turn(args, on_done)
  local opts = require("ndomo").opts or {}
  client.execute("ndomo.turn", args, function(err, result)
    if err then
      fail(err)
    elseif type(result) == "table" then
      local e = result.error
      if e and e ~= vim.NIL then
        notify("ndomo: " .. e, vim.log.levels.WARN)
      elseif opts.notify_answers ~= false and type(result.answer) == "string" and result.answer ~= "" then
        notify(result.answer)
      end
    end
    if on_done then on_done(err, result) end
  end)
end

local function with_prompt(given, prompt, fn)
  if given and vim.trim(given) ~= "" then return fn(vim.trim(given)) end
  vim.ui.input({ prompt = prompt }, function(text)
    if text and vim.trim(text) ~= "" then fn(vim.trim(text)) end
  end)
end

local function set(command, key, value)
  client.execute(command, { [key] = value }, function(err)
    if err then fail(err) end
  end)
end

--- Agent names: ndomo.agents.list when the server has it, else the health report, else the pair.
local agents_cache

function M.agents()
  if agents_cache then return agents_cache end
  local res = client.execute_sync("ndomo.agents.list", {}, 3000)
  local raw = type(res) == "table" and (res.agents or res) or nil
  local names = {}
  if type(raw) == "table" then
    for _, a in ipairs(raw) do
      local name = type(a) == "table" and a.name or a
      -- sub-agents only run delegated tasks: not a session agent to switch to
      if type(name) == "string" and not (type(a) == "table" and a.mode == "subagent") then table.insert(names, name) end
    end
  end
  if #names == 0 then return M.DEFAULT_AGENTS end
  agents_cache = names
  return names
end

local function pick(items, prompt, fn)
  vim.ui.select(items, { prompt = prompt, kind = "ndomo" }, function(choice)
    if choice then fn(choice) end
  end)
end

M.subcommands = {
  ask = function(a)
    with_prompt(a.rest, "Ask ndomo: ", function(prompt)
      local args = { prompt = prompt }
      if a.range > 0 then args = vim.tbl_extend("force", args, M.selection(a.line1, a.line2)) end
      M.turn(args)
    end)
  end,
  fix = function(a)
    local args = M.selection(a.line1, a.line2)
    args.prompt = (a.rest ~= "" and a.rest) or M.FIX_PROMPT
    args.agent, args.mode = "craftsman", "autopilot"
    M.turn(args)
  end,
  plan = function(a)
    local function go(prompt)
      local args = { prompt = prompt, agent = "foreman", mode = "discussion" }
      if a.range > 0 then args = vim.tbl_extend("force", args, M.selection(a.line1, a.line2)) end
      M.turn(args)
    end
    if a.rest == "" and a.range > 0 then return go(M.PLAN_PROMPT) end
    with_prompt(a.rest, "Plan with foreman: ", go)
  end,
  mode = function(a)
    if a.rest ~= "" then return set("ndomo.mode.set", "mode", a.rest) end
    pick(M.MODES, "ndomo mode", function(m) set("ndomo.mode.set", "mode", m) end)
  end,
  agent = function(a)
    if a.rest ~= "" then return set("ndomo.agent.set", "agent", a.rest) end
    pick(M.agents(), "ndomo agent", function(name) set("ndomo.agent.set", "agent", name) end)
  end,
  cancel = function()
    client.execute("ndomo.cancel", {}, function(err, res)
      if err then return fail(err) end
      notify(type(res) == "table" and res.cancelled and "ndomo: turn cancelled" or "ndomo: no turn is running")
    end)
  end,
  undo = function()
    client.execute("ndomo.undo", {}, function(err, res)
      if err then return fail(err) end
      local msg = type(res) == "table" and type(res.message) == "string" and res.message or "last turn undone"
      notify("ndomo: " .. msg)
    end)
  end,
  plans = function()
    client.execute("ndomo.plan.list", {}, function(err, res)
      if err then return fail(err) end
      ui.show("plans", M.format_plans(res))
    end)
  end,
  health = function()
    client.execute("ndomo.health", {}, function(err, res)
      if err then return fail(err) end
      ui.show("health", vim.split(vim.inspect(res), "\n"))
    end)
  end,
  new = function()
    client.execute("ndomo.session.new", {}, function(err)
      if err then return fail(err) end
      notify("ndomo: new session")
    end)
  end,
  transcript = function() ui.open_transcript() end,
  chat = function(a) require("ndomo.chat").open(a.rest) end,
  notes = function(a) require("ndomo.notes").run(a.rest) end,
}

function M.format_plans(res)
  local list = type(res) == "table" and (res.plans or res) or {}
  if #list == 0 then return { "No plans yet." } end
  local lines = {}
  for _, p in ipairs(list) do
    local plan = p.plan or p
    local prog = p.progress
    local count = type(prog) == "table" and prog.total and (" %d/%d"):format(prog.done or 0, prog.total) or ""
    table.insert(lines, ("%-10s %s%s  %s"):format(plan.status or "", plan.slug or plan.id or "?", count, plan.title or ""))
  end
  return lines
end

function M.names()
  local names = vim.tbl_keys(M.subcommands)
  table.sort(names)
  return names
end

function M.complete(arglead, cmdline, _)
  local words = vim.split(cmdline:gsub("^%S*Ndomo!?%s*", ""), "%s+", { trimempty = false })
  local function match(list)
    return vim.tbl_filter(function(x) return vim.startswith(x, arglead) end, list)
  end
  if #words <= 1 then return match(M.names()) end
  if words[1] == "mode" and #words == 2 then return match(M.MODES) end
  if words[1] == "agent" and #words == 2 then return match(M.agents()) end
  return {}
end

function M.run(a)
  local sub, rest = a.args:match("^%s*(%S+)%s*(.-)%s*$")
  local fn = sub and M.subcommands[sub]
  if not fn then
    return fail(("unknown subcommand %q (one of: %s)"):format(sub or "", table.concat(M.names(), ", ")))
  end
  fn({ rest = rest or "", range = a.range, line1 = a.line1, line2 = a.line2 })
end

function M.create()
  vim.api.nvim_create_user_command("Ndomo", M.run, {
    nargs = "+",
    range = true,
    complete = M.complete,
    desc = "ndomo: ask|fix|plan|mode|agent|cancel|undo|plans|health|new|transcript|chat|notes",
  })
end

return M
