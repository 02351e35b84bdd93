--- :Ndomo rewind and `R` in the chat buffer: back to before one of the session's prompts —
--- its files, its conversation, or both (the server's `ndomo.session.rewind`). Files changed
--- since by both you and the agent are named; overwriting them is asked first.
local client = require("ndomo.client")

local M = {}

M.WHAT = { "both", "code", "conversation" }
M.LABELS = {
  both = "files and conversation",
  code = "files only (the conversation stays)",
  conversation = "conversation only (the files stay)",
}
M.OVERWRITE, M.KEEP = "Overwrite them", "Keep my changes"
local RECORDS = { rewind = true, undo = true, review = true } -- ndomo's own file operations, not prompts

local function notify(msg, level) vim.notify(msg, level or vim.log.levels.INFO, { title = "ndomo" }) end

--- The session's prompts, oldest first, from an `ndomo.session.open` result. Pure.
--- @return table[]  {id = turn id, label = "2. first line of the prompt"}
function M.prompts(view)
  local out = {}
  for _, t in ipairs(type(view) == "table" and type(view.turns) == "table" and view.turns or {}) do
    if type(t.id) == "number" and not RECORDS[t.agent] then
      local first = vim.split(type(t.prompt) == "string" and t.prompt or "", "\n", { plain = true })[1]
      if #first > 80 then first = first:sub(1, 77) .. "..." end
      table.insert(out, { id = t.id, label = ("%d. %s"):format(#out + 1, first) })
    end
  end
  return out
end

--- Rewind to before turn `id`; `done(result)` after it worked.
function M.to(id, done)
  vim.ui.select(M.WHAT, {
    prompt = "Rewind what?",
    kind = "ndomo_rewind_what",
    format_item = function(w) return M.LABELS[w] end,
  }, function(what)
    if not what then return end
    local function go(force)
      client.execute("ndomo.session.rewind", { turn = id, what = what, force = force or nil }, function(err, res)
        if err then
          local msg = type(err) == "table" and err.message or tostring(err)
          if not force and msg:find("force overwrites", 1, true) then
            return vim.ui.select({ M.OVERWRITE, M.KEEP }, { prompt = msg, kind = "ndomo_rewind_force" },
              function(choice) if choice == M.OVERWRITE then go(true) end end)
          end
          return notify("ndomo: " .. msg, vim.log.levels.ERROR)
        end
        notify("ndomo: " .. (type(res) == "table" and res.message or "rewound"))
        if done then done(res) end
      end)
    end
    go(false)
  end)
end

--- Pick a prompt of the session, then rewind to before it.
function M.pick(done)
  client.execute("ndomo.session.open", { limit = 200 }, function(err, view)
    if err then return notify("ndomo: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR) end
    local prompts = M.prompts(view)
    if #prompts == 0 then return notify("ndomo: this session has no prompt to rewind to", vim.log.levels.WARN) end
    vim.ui.select(prompts, {
      prompt = "Rewind to before which prompt?",
      kind = "ndomo_rewind",
      format_item = function(p) return p.label end,
    }, function(p) if p then M.to(p.id, done) end end)
  end)
end

return M
