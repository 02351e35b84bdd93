--- `ndomo/status` payload → statusline text. Pure, so it is tested on its own.
local M = {}

local QUIET = { [""] = true, idle = true, done = true, answered = true, none = true }

M.spinner = { "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏" }

--- @param s table|nil  {session, mode, agent, busy, state, plan = {id, slug, done, total}|nil, trust}
--- @param tick integer|nil  spinner frame while busy
--- @return string
function M.format(s, tick)
  if type(s) ~= "table" or type(s.mode) ~= "string" or type(s.agent) ~= "string" then
    return ""
  end
  local parts = { ("ndomo: %s · %s"):format(s.agent, s.mode) }
  local state = type(s.state) == "string" and vim.trim(s.state) or ""
  if not QUIET[state] then table.insert(parts, state) end
  local plan = s.plan
  if type(plan) == "table" and tonumber(plan.total) and tonumber(plan.total) > 0 then
    table.insert(parts, ("%d/%d"):format(tonumber(plan.done) or 0, tonumber(plan.total)))
  end
  -- the folder's trust ("trusted" | "untrusted" | "unknown"; absent from older servers)
  if type(s.trust) == "string" and s.trust ~= "trusted" then table.insert(parts, "untrusted") end
  -- sandbox.auto_allow: sandboxed, offline commands run without asking
  if s.auto_allow == true then table.insert(parts, "auto-allow") end
  local text = table.concat(parts, " · ")
  if s.busy == true then
    local frame = M.spinner[((tick or 0) % #M.spinner) + 1]
    text = frame .. " " .. text
  end
  return text
end

local function short(n)
  n = tonumber(n) or 0
  if n >= 1e6 then return ("%.1fM"):format(n / 1e6) end
  if n >= 1e4 then return ("%dk"):format(math.floor(n / 1e3 + 0.5)) end
  if n >= 1e3 then return ("%.1fk"):format(n / 1e3) end
  return tostring(math.floor(n))
end

--- The status's `usage` as statusline text: "tokens 7.5k+300 (last turn 1.2k+56) · $0.0195"
--- (the session's prompt+completion tokens, the last turn's, the session's cost with a price).
--- @param s table|nil  an `ndomo/status` payload
--- @return string  "" when the server reports no usage
function M.usage(s)
  local u = type(s) == "table" and s.usage or nil
  if type(u) ~= "table" or type(u.session) ~= "table" then return "" end
  local text = ("tokens %s+%s"):format(short(u.session.prompt), short(u.session.completion))
  if type(u.turn) == "table" then
    text = text .. (" (last turn %s+%s)"):format(short(u.turn.prompt), short(u.turn.completion))
  end
  if type(u.cost) == "table" and tonumber(u.cost.session) then
    local cur = type(u.cost.currency) == "string" and u.cost.currency or "$"
    text = text .. (" · %s%.4f"):format(cur, tonumber(u.cost.session))
  end
  return text
end

return M
