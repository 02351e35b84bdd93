--- `ndomo/saveDocuments {uris}` (server → client request): save those buffers with :write,
--- so agent edits stay in the undo history and `bash` sees them on disk. The server sends it
--- because the client announces `capabilities.experimental.ndomo.saveDocuments`.
local M = {}

local function key(path) return vim.fs.normalize(vim.fn.fnamemodify(path, ":p")) end

--- Returns `{saved = [uri]}`: the uris whose buffer now matches the disk (saved, or not
--- modified in the first place). Unloaded, read-only or failing buffers are left out.
--- Never asks the user anything: the server waits for the answer.
function M.handler(_, params, _)
  local want = {}
  for _, uri in ipairs(type(params) == "table" and type(params.uris) == "table" and params.uris or {}) do
    local ok, fname = pcall(vim.uri_to_fname, uri)
    if ok then want[key(fname)] = uri end
  end
  local saved = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(b)
    local uri = name ~= "" and vim.api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == "" and want[key(name)]
    if uri then
      want[key(name)] = nil
      if vim.bo[b].modified and not vim.bo[b].readonly then
        -- `write!`: a plain :write asks "file changed since reading it (y/n)?" when the disk
        -- moved meanwhile, and a question inside a request stalls the server, which would then
        -- write this very text through itself. 'readonly' buffers are left alone (above).
        local ok, err = pcall(vim.api.nvim_buf_call, b, function() vim.cmd("silent keepalt write!") end)
        if not ok then
          vim.notify(("ndomo: could not save %s: %s"):format(name, err), vim.log.levels.WARN, { title = "ndomo" })
        end
      end
      if not vim.bo[b].modified then table.insert(saved, uri) end
    end
  end
  return { saved = saved }
end

return M
