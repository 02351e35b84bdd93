--- :Ndomo ask|fix|plan|mode|agent|cancel|undo|rewind|review|plans|health|new|transcript|chat|notes|trust, with completion.
local client = require("ndomo.client")
local ui = require("ndomo.ui")

local M = {}

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

--- Run a turn. Its answer is shown when the turn's `turn_finished` event arrives (as for code
--- actions, see ndomo.turns); the result only reports what no event showed.
function M.turn(args, on_done)
  client.execute("ndomo.turn", args, function(err, result)
    if err then
      fail(err)
    else
      require("ndomo.turns").on_result(result)
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

--- Modes and agents come from the server, never from this plugin: the initialize result's
--- `capabilities.experimental.ndomo` and, fresh, `ndomo.catalog` ({modes, agents}, each
--- entry {name, description, default, ...}). The last answer is cached for completion,
--- which must not wait.
local catalog_cache

local function valid(cat)
  return type(cat) == "table" and type(cat.modes) == "table" and type(cat.agents) == "table"
end

--- What the server advertised at initialize (nil before it did).
function M.advertised()
  local c = client.get()
  local exp = c and c.server_capabilities and c.server_capabilities.experimental
  local cat = type(exp) == "table" and exp.ndomo or nil
  return valid(cat) and cat or nil
end

--- Asynchronous: `cb(catalog)` on the main loop, fresh from ndomo.catalog, else the last
--- one known, else the initialize result's, else empty lists.
function M.catalog(cb)
  client.execute("ndomo.catalog", {}, function(err, res)
    if not err and valid(res) then catalog_cache = res end
    if cb then cb(catalog_cache or M.advertised() or { modes = {}, agents = {} }) end
  end)
end

--- The catalog known now (cache, else the initialize result's), refreshed in the background.
function M.known()
  if client.get() then M.catalog() end
  return catalog_cache or M.advertised() or { modes = {}, agents = {} }
end

--- Mode names, in the server's order.
function M.mode_names(cat)
  return vim.tbl_map(function(m) return m.name end, cat.modes)
end

--- Agents a session can switch to (sub-agents only run delegated tasks).
function M.agent_names(cat)
  local names = {}
  for _, a in ipairs(cat.agents) do
    if a.primary ~= false then table.insert(names, a.name) end
  end
  return names
end

--- {agent, mode} for a job by purpose (the server's rule, ndomo.catalog.pick): the default
--- agent with `agent_role`, else the first session agent with it; the first mode with
--- `mode_role`, else that agent's own default mode. nil when no agent has the role.
function M.by_role(cat, agent_role, mode_role)
  local found
  for _, a in ipairs(cat.agents) do
    if a.primary ~= false and a.role == agent_role and (not found or (a.default and not found.default)) then found = a end
  end
  if not found then return nil end
  local mode = found.default_mode
  for _, m in ipairs(cat.modes) do
    if m.role == mode_role then mode = m.name break end
  end
  if type(mode) ~= "string" then return nil end
  return { agent = found.name, mode = mode }
end

local function with_role(agent_role, mode_role, fn)
  M.catalog(function(cat)
    local who = M.by_role(cat, agent_role, mode_role)
    if not who then return fail(("no %s agent (agents are .ndomo/agents/*.md files; :Ndomo agent lists them)"):format(agent_role)) end
    fn(who)
  end)
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
    with_role("builder", "build", function(who)
      args.agent, args.mode = who.agent, who.mode
      M.turn(args)
    end)
  end,
  plan = function(a)
    local sel = a.range > 0 and M.selection(a.line1, a.line2) or nil
    with_role("planner", "plan", function(who)
      local function go(prompt)
        local args = { prompt = prompt, agent = who.agent, mode = who.mode }
        if sel then args = vim.tbl_extend("force", args, sel) end
        M.turn(args)
      end
      if a.rest == "" and sel then return go(M.PLAN_PROMPT) end
      with_prompt(a.rest, ("Plan with %s: "):format(who.agent), go)
    end)
  end,
  mode = function(a)
    if a.rest ~= "" then return set("ndomo.mode.set", "mode", a.rest) end
    M.catalog(function(cat)
      pick(M.mode_names(cat), "ndomo mode", function(m) set("ndomo.mode.set", "mode", m) end)
    end)
  end,
  agent = function(a)
    if a.rest ~= "" then return set("ndomo.agent.set", "agent", a.rest) end
    M.catalog(function(cat)
      pick(M.agent_names(cat), "ndomo agent", function(name) set("ndomo.agent.set", "agent", name) end)
    end)
  end,
  cancel = function()
    client.execute("ndomo.cancel", {}, function(err, res)
      if err then return fail(err) end
      notify(type(res) == "table" and res.cancelled and "ndomo: turn cancelled" or "ndomo: no turn is running")
    end)
  end,
  rewind = function()
    require("ndomo.rewind").pick(function()
      local chat = require("ndomo.chat")
      if vim.fn.bufnr(chat.NAME) > 0 then chat.reload() end
    end)
  end,
  review = function(a)
    local turn = tonumber(a.rest)
    if a.rest ~= "" and not turn then return notify("ndomo: :Ndomo review [turn id]", vim.log.levels.WARN) end
    require("ndomo.review").open(turn)
  end,
  undo = function()
    client.execute("ndomo.undo", {}, function(err, res)
      if err then return fail(err) end
      local msg = type(res) == "table" and type(res.message) == "string" and res.message or "last turn undone"
      notify("ndomo: " .. msg)
    end)
  end,
  plans = function(a)
    if a.rest ~= "" then return M.open_plan(a.rest) end
    M.list_plans()
  end,
  health = function()
    client.execute("ndomo.health", { probe_model = true }, function(err, res)
      if err then return fail(err) end
      ui.show("health", M.format_health(res))
    end)
  end,
  new = function(a)
    local function go()
      client.execute("ndomo.session.new", {}, function(err)
        if err then return fail(err) end
        notify("ndomo: new session (:Ndomo undo now reaches only its turns)")
      end)
    end
    if a.bang then return go() end
    pick({ "Start a new session", "Keep this session" },
      "New ndomo session? :Ndomo undo will no longer reach this session's turns", function(choice)
        if choice == "Start a new session" then go() end
      end)
  end,
  transcript = function() ui.open_transcript() end,
  chat = function(a) require("ndomo.chat").open(a.rest) end,
  notes = function(a) require("ndomo.notes").run(a.rest) end,
  trust = function(a) require("ndomo.trust").command(a.rest) end,
}

--- One line per plan: status, slug, done/total, title. `progress` maps plan id → Progress.
function M.format_plans(list, progress)
  list = type(list) == "table" and (list.plans or list) or {}
  if #list == 0 then return { "No plans yet." } end
  local lines = {}
  for _, p in ipairs(list) do
    local plan = p.plan or p
    local prog = (progress or {})[plan.id] or p.progress
    local count = type(prog) == "table" and tonumber(prog.total) and (" %d/%d"):format(tonumber(prog.done) or 0, tonumber(prog.total)) or ""
    table.insert(lines, ("%-10s %s%s  %s"):format(plan.status or "", plan.slug or plan.id or "?", count, plan.title or ""))
  end
  return lines
end

--- Open a plan's markdown view (`ndomo.plan.open` writes it and shows it without focus):
--- focus its window, or split it open when the server could not show it.
function M.open_plan(ref)
  local c = client.get()
  client.execute("ndomo.plan.open", { plan = ref }, function(err, res)
    if err then return fail(err) end
    local path = type(res) == "table" and res.path
    if type(path) ~= "string" then return fail("the server named no plan view") end
    if c and c.root_dir and not vim.startswith(path, "/") then path = c.root_dir .. "/" .. path end
    local b = vim.fn.bufnr(path)
    local win = b > 0 and vim.fn.bufwinid(b) or -1
    if win ~= -1 then
      vim.api.nvim_set_current_win(win)
    else
      vim.cmd("botright split " .. vim.fn.fnameescape(path))
    end
  end)
end

--- `:Ndomo plans`: the list with each plan's progress (one ndomo.plan.progress per plan, all
--- in flight at once); <CR> on a line opens that plan's view.
function M.list_plans()
  client.execute("ndomo.plan.list", {}, function(err, res)
    if err then return fail(err) end
    local list = type(res) == "table" and (res.plans or res) or {}
    local progress, waiting = {}, #list
    local function show()
      local b = ui.show("plans", M.format_plans(list, progress))
      local slugs = {}
      for i, p in ipairs(list) do slugs[i] = (p.plan or p).slug or (p.plan or p).id end
      vim.keymap.set("n", "<CR>", function()
        local slug = slugs[vim.api.nvim_win_get_cursor(0)[1]]
        if slug then M.open_plan(slug) end
      end, { buffer = b, desc = "ndomo: open this plan" })
    end
    if waiting == 0 then return show() end
    for _, p in ipairs(list) do
      local id = (p.plan or p).id
      client.execute("ndomo.plan.progress", { id = id }, function(perr, prog)
        if not perr then progress[id] = prog end
        waiting = waiting - 1
        if waiting == 0 then show() end
      end)
    end
  end)
end

--- `ndomo.health` report → lines (shared with :checkhealth's wording).
function M.format_health(res)
  if type(res) ~= "table" then return { vim.inspect(res) } end
  local lines = {}
  local function mark(ok) return ok == true and "OK   " or ok == false and "FAIL " or "     " end
  table.insert(lines, ("%sserver %s, workspace %s"):format(mark(res.ok), res.version or "?", res.workspace or "?"))
  local cfg = type(res.config) == "table" and res.config or {}
  table.insert(lines, mark(cfg.ok) .. "configuration")
  for _, p in ipairs(type(cfg.problems) == "table" and cfg.problems or {}) do
    table.insert(lines, ("       %s: %s"):format(p.key or "?", p.message or ""))
  end
  if type(res.database) == "table" then
    table.insert(lines, ("%sdatabase %s (%s)"):format(mark(res.database.ok), res.database.path or "?", res.database.detail or ""))
  end
  if type(res.model) == "table" then
    local m = res.model
    table.insert(lines, ("%smodel %s %s %s (%s)"):format(mark(m.ok ~= vim.NIL and m.ok or nil), m.provider or "?", m.url or "?", m.name or "?", m.detail or ""))
  end
  if type(res.agents) == "table" then
    local ag = res.agents
    table.insert(lines, ("%s%d agents: %s"):format(mark(#(ag.problems or {}) == 0), ag.loaded or 0, table.concat(ag.names or {}, ", ")))
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
  if words[1] == "mode" and #words == 2 then return match(M.mode_names(M.known())) end
  if words[1] == "agent" and #words == 2 then return match(M.agent_names(M.known())) end
  if words[1] == "trust" and #words == 2 then return match({ "revoke" }) end
  return {}
end

function M.run(a)
  local sub, rest = a.args:match("^%s*(%S+)%s*(.-)%s*$")
  local ctx = { rest = rest or "", range = a.range, line1 = a.line1, line2 = a.line2, bang = a.bang }
  if not sub then -- `:Ndomo` alone: pick a subcommand
    return pick(M.names(), "ndomo", function(name) M.subcommands[name](ctx) end)
  end
  local fn = M.subcommands[sub]
  if not fn then
    return fail(("unknown subcommand %q (one of: %s)"):format(sub, table.concat(M.names(), ", ")))
  end
  fn(ctx)
end

function M.create()
  vim.api.nvim_create_user_command("Ndomo", M.run, {
    nargs = "*",
    range = true,
    bang = true,
    complete = M.complete,
    desc = "ndomo: ask|fix|plan|mode|agent|cancel|undo|rewind|review|plans|health|new|transcript|chat|notes|trust",
  })
end

return M
