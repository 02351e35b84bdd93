--- `ndomo/diagnostics {uris}` (server → client request) → `{items = [{uri, diagnostics}]}`:
--- after an agent's edit, the diagnostics Neovim now shows for the edited files (the other
--- language servers' and linters', from `vim.diagnostic.get`), in LSP's spelling, worst
--- first. The server asks because the client announces `experimental.ndomo.diagnostics`.
local M = {}

M.MAX_PER_FILE = 50

local function key(path) return vim.fs.normalize(vim.fn.fnamemodify(path, ":p")) end

local function loaded_buffers()
  local by_path = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(b)
    if name ~= "" and vim.api.nvim_buf_is_loaded(b) then by_path[key(name)] = b end
  end
  return by_path
end

--- One `vim.diagnostic` item as an LSP Diagnostic (lines 0-based in both).
function M.to_lsp(d)
  local item = {
    message = tostring(d.message or ""),
    severity = d.severity,
    range = {
      start = { line = d.lnum or 0, character = d.col or 0 },
      ["end"] = { line = d.end_lnum or d.lnum or 0, character = d.end_col or d.col or 0 },
    },
  }
  if d.source ~= nil then item.source = tostring(d.source) end
  if type(d.code) == "string" or type(d.code) == "number" then item.code = d.code end
  return item
end

--- A file that is not loaded in a buffer has no diagnostics here: an empty list.
function M.handler(_, params, _)
  local uris = type(params) == "table" and type(params.uris) == "table" and params.uris or {}
  local bufs = loaded_buffers()
  local items = {}
  for _, uri in ipairs(uris) do
    local ok, fname = pcall(vim.uri_to_fname, uri)
    local b = ok and bufs[key(fname)]
    local found = b and vim.diagnostic.get(b) or {}
    table.sort(found, function(x, y) return (x.severity or 1) < (y.severity or 1) end)
    local list = {}
    for i = 1, math.min(#found, M.MAX_PER_FILE) do table.insert(list, M.to_lsp(found[i])) end
    table.insert(items, { uri = uri, diagnostics = list })
  end
  return { items = items }
end

return M
