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
  local text = table.concat(parts, " · ")
  if s.busy == true then
    local frame = M.spinner[((tick or 0) % #M.spinner) + 1]
    text = frame .. " " .. text
  end
  return text
end

return M
