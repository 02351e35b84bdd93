--- Turn ends → the answer, for every turn: :Ndomo ask/fix/plan and code actions alike
--- (a code action's `ndomo.turn` result goes to Neovim's core, which drops it).
---
--- The outermost `turn_finished` of a client (delegated sub-agent turns nest inside it) fires
--- `User NdomoAnswer` with data `{client_id, turn_id, status, answer, error}` and, with
--- `notify_answers`, goes to vim.notify — unless the chat buffer is on screen: it shows the
--- answer already, and a multi-line message would stop Neovim at "Press ENTER". A chat
--- buffer hooks in through that autocmd.
local M = {}

local depth = {} -- client id → open turns (sub-agent turns nest)
local reported = {} -- turn id → true: its answer was shown (so :Ndomo ask does not repeat it)

local function notify(msg, level) vim.notify(msg, level or vim.log.levels.INFO, { title = "ndomo" }) end

local function present(v) return v ~= nil and v ~= vim.NIL and v ~= "" end

--- Show one finished turn; `e` is a turn_finished event or an `ndomo.turn` result.
function M.show(e, client_id)
  local data = {
    client_id = client_id,
    turn_id = present(e.turn_id) and e.turn_id or nil,
    status = e.status,
    answer = type(e.answer) == "string" and e.answer or "",
    error = present(e.error) and e.error or nil,
  }
  if data.turn_id then reported[data.turn_id] = true end
  vim.api.nvim_exec_autocmds("User", { pattern = "NdomoAnswer", modeline = false, data = data })
  local opts = require("ndomo").opts or {}
  if opts.notify_answers == false then return end
  local chat = package.loaded["ndomo.chat"]
  if chat and chat.visible() then return end -- the chat shows the answer (and the error)
  if data.error then
    notify(("ndomo: %s: %s"):format(data.status or "failed", data.error), vim.log.levels.WARN)
  elseif data.status == "blocked" then -- a hand-back: the agent needs the user
    notify("ndomo: handed back: " .. (data.answer ~= "" and data.answer or "the agent is blocked"), vim.log.levels.WARN)
  elseif data.answer ~= "" then
    notify(data.answer)
  elseif present(data.status) and data.status ~= "done" then
    notify("ndomo: turn " .. data.status)
  end
end

--- `ndomo/turn/event` from client `client_id`.
function M.on_event(e, client_id)
  if type(e) ~= "table" then return end
  local key = client_id or 0
  if e.kind == "turn_started" then
    depth[key] = (depth[key] or 0) + 1
  elseif e.kind == "turn_finished" then
    depth[key] = math.max(0, (depth[key] or 1) - 1)
    if depth[key] == 0 then M.show(e, client_id) end
  end
end

--- The `ndomo.turn` result: shown only when no turn_finished event already showed it
--- (events come before the result; a server that streams none still gets its answer seen).
function M.on_result(result)
  if type(result) ~= "table" then return end
  local id = result.turn_id
  if present(id) and reported[id] then
    reported[id] = nil
    return
  end
  M.show(result)
end

--- A client went away: its open turns will not finish.
function M.forget(client_id) depth[client_id or 0] = nil end

return M
