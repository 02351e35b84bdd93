--- Starting the ndomo server with vim.lsp and talking to it (workspace/executeCommand).
local M = {}

M.NAME = "ndomo"
local has_011 = vim.fn.has("nvim-0.11") == 1

--- Clients whose server process is still alive (id → true), cleared by on_exit.
--- Quitting Neovim waits on this set (see M.stop_all).
M.running = {}
local exited = {}

--- The ndomo client for a buffer (else any running one).
function M.get(bufnr)
  local clients = vim.lsp.get_clients({ name = M.NAME, bufnr = bufnr or vim.api.nvim_get_current_buf() })
  if #clients == 0 then clients = vim.lsp.get_clients({ name = M.NAME }) end
  return clients[1]
end

local function norm(path)
  return vim.fs.normalize(path)
end

--- `path` is `dir` or inside it.
function M.under(path, dir)
  if not dir then return false end
  dir = dir:gsub("/+$", "")
  return path == dir or vim.startswith(path, dir .. "/")
end

--- A folder that may hold `.ndomo/`: never `/` nor the home folder (the server refuses them too).
local function allowed_root(dir)
  if not dir or dir == "" then return false end
  dir = norm(dir)
  local home = vim.uv.os_homedir()
  return dir ~= "/" and not (home and dir == norm(home))
end

--- The workspace root for a buffer's file, or nil when the file belongs to none.
--- The nearest folder with a root marker; else the cwd when the file lies under it. Neither
--- may be `/` or `$HOME`, so opening ~/.bashrc starts no server and creates no ~/.ndomo.
function M.root_for(bufnr, opts)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or name:match("^%a[%w+.-]*://") then return nil end -- not a file (fugitive://, oil://…)
  local path = norm(vim.fn.fnamemodify(name, ":p"))
  if path:find("/.git/", 1, true) then return nil end -- git's own files (COMMIT_EDITMSG…)
  local root = vim.fs.root(path, opts.root_markers)
  if not allowed_root(root) then root = nil end
  if not root then
    local cwd = norm(vim.fn.getcwd())
    if allowed_root(cwd) and M.under(path, cwd) then root = cwd end
  end
  return root and norm(root) or nil
end

local function wanted(bufnr, opts)
  if vim.bo[bufnr].buftype ~= "" then return false end
  if opts.filetypes then return vim.tbl_contains(opts.filetypes, vim.bo[bufnr].filetype) end
  return true
end

--- JSON object for initializationOptions: an empty Lua table would go out as `[]`.
function M.object(t)
  if t == nil or (type(t) == "table" and next(t) == nil) then return vim.empty_dict() end
  return t
end

--- What this client announces on top of Neovim's defaults (and the user's `capabilities`).
--- `approvals`: this client answers `ndomo/approve` (with `ui_select_requests`, the default).
function M.capabilities(extra, approvals)
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps = vim.tbl_deep_extend("force", caps, extra or {})
  caps.experimental = caps.experimental or {}
  local own = { saveDocuments = true, diagnostics = true, approvals = approvals or nil }
  caps.experimental.ndomo = vim.tbl_extend("force", caps.experimental.ndomo or {}, own)
  return caps
end

--- Attach (starting the server when needed) to one buffer; only files under a root.
function M.attach(bufnr, opts, handlers)
  if not vim.api.nvim_buf_is_valid(bufnr) or not wanted(bufnr, opts) then return nil end
  local root = M.root_for(bufnr, opts)
  if not root then return nil end
  local id = vim.lsp.start({
    name = M.NAME,
    cmd = opts.cmd,
    cmd_env = opts.cmd_env,
    root_dir = root,
    init_options = M.object(opts.init_options),
    settings = opts.settings and { ndomo = opts.settings } or nil,
    capabilities = M.capabilities(opts.capabilities, handlers and handlers["ndomo/approve"] ~= nil),
    handlers = handlers,
    -- the folder's trust: asked once, on the first attach (ndomo.trust)
    on_init = function(c) require("ndomo.trust").check(c, root) end,
    on_exit = function(_, _, cid)
      M.running[cid], exited[cid] = nil, true
      local ok, ndomo = pcall(require, "ndomo")
      if ok then ndomo.on_exit(cid) end
    end,
  }, { bufnr = bufnr })
  if id and not exited[id] then M.running[id] = true end
  return id
end

--- Replace the live settings (config.yaml shape) of every running ndomo server: each gets
--- `workspace/didChangeConfiguration`, pulls `ndomo` (answered from `client.settings`) and
--- applies it without a restart.
function M.set_settings(settings)
  for _, c in ipairs(vim.lsp.get_clients({ name = M.NAME })) do
    c.settings = { ndomo = settings or vim.empty_dict() }
    if has_011 then
      c:notify("workspace/didChangeConfiguration", { settings = c.settings })
    else
      c.notify("workspace/didChangeConfiguration", { settings = c.settings })
    end
  end
end

--- Stop every ndomo server and wait until their processes are gone (bounded by `timeout`
--- ms), then SIGTERM the ones still running. Called on VimLeavePre: Neovim alone sends
--- `shutdown` and exits without waiting, which left servers behind.
function M.stop_all(timeout)
  local ids = vim.tbl_keys(M.running)
  if #ids == 0 then return end
  for _, id in ipairs(ids) do
    local c = vim.lsp.get_client_by_id(id)
    if c then pcall(function() if has_011 then c:stop() else c.stop() end end) else M.running[id] = nil end
  end
  if vim.wait(timeout, function() return next(M.running) == nil end, 20) then return end
  for id in pairs(M.running) do
    local c = vim.lsp.get_client_by_id(id)
    if c and c.rpc then pcall(c.rpc.terminate) end
  end
  vim.wait(1000, function() return next(M.running) == nil end, 20)
end

local function request(client, method, params, handler, bufnr)
  if has_011 then return client:request(method, params, handler, bufnr) end
  return client.request(method, params, handler, bufnr)
end

local function request_sync(client, method, params, timeout, bufnr)
  if has_011 then return client:request_sync(method, params, timeout, bufnr) end
  return client.request_sync(method, params, timeout, bufnr)
end

--- An object argument for the server: an empty Lua table must go out as {} not [].
local function arg(args)
  if args == nil or next(args) == nil then return vim.empty_dict() end
  return args
end

--- Run `command` with its one object argument; `cb(err, result)` on the main loop.
function M.execute(command, args, cb, bufnr)
  local client = M.get(bufnr)
  cb = cb or function() end
  if not client then
    cb({ message = "the server is not running (open a file, see :checkhealth ndomo)" }, nil)
    return
  end
  local params = { command = command, arguments = { arg(args) } }
  request(client, "workspace/executeCommand", params, function(err, result)
    cb(err, result)
  end, bufnr)
end

--- `command` on one given client (not the current buffer's): `cb(err, result)`.
function M.execute_on(c, command, args, cb)
  request(c, "workspace/executeCommand", { command = command, arguments = { arg(args) } }, function(err, result)
    cb(err, result)
  end)
end

--- Blocking form, for :checkhealth only (it must return its report); returns result, err.
function M.execute_sync(command, args, timeout_ms, bufnr)
  local client = M.get(bufnr)
  if not client then return nil, { message = "no ndomo client" } end
  local resp, err = request_sync(client, "workspace/executeCommand",
    { command = command, arguments = { arg(args) } }, timeout_ms or 10000, bufnr)
  if not resp then return nil, { message = err or "timed out" } end
  if resp.err then return nil, resp.err end
  return resp.result, nil
end

return M
