--- Starting the ndomo server with vim.lsp and talking to it (workspace/executeCommand).
local M = {}

M.NAME = "ndomo"
local has_011 = vim.fn.has("nvim-0.11") == 1

--- The ndomo client for a buffer (else any running one).
function M.get(bufnr)
  local clients = vim.lsp.get_clients({ name = M.NAME, bufnr = bufnr or vim.api.nvim_get_current_buf() })
  if #clients == 0 then clients = vim.lsp.get_clients({ name = M.NAME }) end
  return clients[1]
end

local function root_dir(bufnr, markers)
  local root = vim.fs.root(bufnr, markers)
  return root or vim.fn.getcwd()
end

local function wanted(bufnr, opts)
  if vim.bo[bufnr].buftype ~= "" then return false end
  if vim.api.nvim_buf_get_name(bufnr) == "" then return false end
  if opts.filetypes then return vim.tbl_contains(opts.filetypes, vim.bo[bufnr].filetype) end
  return true
end

--- Attach (starting the server when needed) to one buffer.
function M.attach(bufnr, opts, handlers)
  if not vim.api.nvim_buf_is_valid(bufnr) or not wanted(bufnr, opts) then return nil end
  return vim.lsp.start({
    name = M.NAME,
    cmd = opts.cmd,
    cmd_env = opts.cmd_env,
    root_dir = root_dir(bufnr, opts.root_markers),
    init_options = opts.init_options,
    handlers = handlers,
  }, { bufnr = bufnr })
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

--- Blocking form for :checkhealth and tests; returns result, err.
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
