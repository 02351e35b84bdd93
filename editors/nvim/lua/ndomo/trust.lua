--- Folder trust. Until a folder is trusted the server ignores what it would configure (its
--- .ndomo/config.yaml, agents, reflexes, instruction files, MCP servers). On the first attach to
--- a folder the server does not know yet (`ndomo.trust.get` → state "unknown") and that
--- configures something, the user is asked once through vim.ui.select; the answer goes to
--- `ndomo.trust.set`, which records it in the user's data directory (so a restart does not
--- ask again) and reloads the folder live. `:Ndomo trust` / `:Ndomo trust revoke` change it.
local M = {}

M.TRUST = "Trust"
M.DONT = "Don't trust"

--- root → the last `ndomo.trust.get`/`set` answer {root, state, configures}.
M.info = {}
--- root → the `ndomo.trust.get` answer of the first attach (what the question was about).
M.initial = {}
--- root → true once the first-attach check finished (asked and answered, or nothing to ask).
M.checked = {}
--- Roots asked about in this Neovim (a second client on the same root does not ask again).
local asked = {}

local function notify(msg, level) vim.notify(msg, level or vim.log.levels.INFO, { title = "ndomo" }) end

--- The question's prompt: what trusting would let the folder configure.
function M.prompt(info)
  local lines = { ("ndomo: trust %s? It would configure the agent that reads it:"):format(info.root or "this folder") }
  for _, c in ipairs(info.configures or {}) do table.insert(lines, "  • " .. tostring(c)) end
  table.insert(lines, "Until you trust it, ndomo ignores all of these (:Ndomo trust / :Ndomo trust revoke change it).")
  return table.concat(lines, "\n")
end

--- Whether to ask: the server does not know the folder and it configures something.
function M.should_ask(info)
  return type(info) == "table" and info.state == "unknown"
    and type(info.configures) == "table" and #info.configures > 0
end

--- Record the answer for `root` on client `c`; `cb(err, info)`.
function M.set(c, root, trusted, cb)
  require("ndomo.client").execute_on(c, "ndomo.trust.set", { trusted = trusted, uri = vim.uri_from_fname(root) }, function(err, res)
    if not err and type(res) == "table" then M.info[root] = res end
    if cb then cb(err, res) end
  end)
end

--- The first-attach check of `root` on client `c` (vim.lsp's on_init).
function M.check(c, root)
  if not root then return end
  require("ndomo.client").execute_on(c, "ndomo.trust.get", { uri = vim.uri_from_fname(root) }, function(err, info)
    if err or type(info) ~= "table" then
      M.checked[root] = true
      return
    end
    M.info[root] = info
    M.initial[root] = info
    if asked[root] or not M.should_ask(info) then
      M.checked[root] = true
      return
    end
    asked[root] = true
    vim.ui.select({ M.TRUST, M.DONT }, { prompt = M.prompt(info), kind = "ndomo_trust" }, function(choice)
      if choice ~= M.TRUST and choice ~= M.DONT then
        M.checked[root] = true -- dismissed: nothing recorded, asked again at the next start
        return
      end
      M.set(c, root, choice == M.TRUST, function(serr)
        M.checked[root] = true
        if serr then
          notify("ndomo: could not record the folder's trust: " .. (serr.message or vim.inspect(serr)), vim.log.levels.ERROR)
        end
      end)
    end)
  end)
end

--- `:Ndomo trust [revoke]` for the current buffer's server and root.
function M.command(rest)
  local c = require("ndomo.client").get()
  if not c or not c.root_dir then return notify("ndomo: the server is not running (open a file, see :checkhealth ndomo)", vim.log.levels.ERROR) end
  local word = vim.trim(rest or "")
  if word ~= "" and word ~= "revoke" then
    return notify(("ndomo: :Ndomo trust takes no argument or `revoke` (got %q)"):format(word), vim.log.levels.ERROR)
  end
  local trusted = word == ""
  local root = c.root_dir
  M.set(c, root, trusted, function(err)
    if err then return notify("ndomo: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR) end
    notify(trusted and ("ndomo: %s is trusted: its .ndomo/ settings and agents apply"):format(root)
      or ("ndomo: %s is no longer trusted: its .ndomo/ settings and agents are ignored"):format(root))
  end)
end

return M
