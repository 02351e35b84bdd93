--- :checkhealth ndomo
local M = {}

local h = vim.health

function M.check()
  h.start("ndomo")
  if vim.fn.has("nvim-0.10") == 1 then
    h.ok("Neovim " .. tostring(vim.version()))
  else
    h.error("Neovim 0.10 or newer is needed, this is " .. tostring(vim.version()))
  end

  local ndomo = require("ndomo")
  local opts = ndomo.opts
  if not opts then
    h.error('setup() was not called', { 'Add require("ndomo").setup({}) to your config' })
    return
  end
  h.ok("setup() called")

  local exe = opts.cmd[1]
  if vim.fn.executable(exe) == 1 then
    h.ok(("server executable found: %s"):format(vim.fn.exepath(exe)))
  else
    h.error(("server executable not found: %s"):format(exe),
      { "pip install ndomo, or set cmd = { '/path/to/python', '-m', 'ndomo', 'serve' }" })
  end

  local client = require("ndomo.client").get()
  if not client then
    h.warn("no ndomo client is running", {
      "Open a file inside a project (a folder with .git, pyproject.toml, … or the cwd; never $HOME or /)",
      ":checkhealth vim.lsp or :lua =vim.lsp.get_clients() shows the running clients",
    })
    return
  end
  h.ok(("client %d attached (root %s)"):format(client.id, client.root_dir or client.config.root_dir or "?"))

  -- Without the model probe: the report comes back in milliseconds and the UI is not held
  -- while a model server takes seconds to answer. :Ndomo health probes it, asynchronously.
  local res, err = require("ndomo.client").execute_sync("ndomo.health", { probe_model = false }, 3000)
  if err then
    h.error("ndomo.health failed: " .. (err.message or vim.inspect(err)))
    return
  end
  local function line(ok, text)
    if ok == true then h.ok(text) elseif ok == false then h.error(text) else h.info(text) end
  end
  line(true, ("server %s, workspace %s"):format(res.version or "?", res.workspace or "?"))
  line(res.config and res.config.ok, "configuration" .. ((res.config and res.config.ok) and " OK" or " has problems"))
  if res.config and type(res.config.problems) == "table" then
    for _, p in ipairs(res.config.problems) do h.warn(("%s: %s"):format(p.key or "?", p.message or "")) end
  end
  if res.database then line(res.database.ok, ("database %s (%s)"):format(res.database.path, res.database.detail)) end
  if res.model then
    local ok = res.model.ok
    if ok == vim.NIL then ok = nil end
    line(ok, ("model %s %s %s (%s)"):format(res.model.provider, res.model.url, res.model.name, res.model.detail))
    h.info("the model endpoint was not asked (that can take seconds): :Ndomo health probes it")
  end
  if res.agents then
    line(#(res.agents.problems or {}) == 0, ("%d agents: %s"):format(res.agents.loaded or 0, table.concat(res.agents.names or {}, ", ")))
  end
  if res.ok then h.ok("ndomo server OK") else h.error("ndomo server reports problems (see above)") end
end

return M
