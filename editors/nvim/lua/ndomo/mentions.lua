--- Mentions in the chat buffer's input: `@` completes files (fuzzy), `@plan`, `@problems` and
--- `@symbol:Name` (the workspace symbols of the other language servers attached here); on
--- send, each mention is resolved for the server: a modified buffer's text wins over the disk,
--- `@problems` is what vim.diagnostic shows (ndomo's own diagnostics left out), a symbol is
--- its location.
local client = require("ndomo.client")

local M = {}

M.MAX_FILES = 5000 -- files listed for completion (a huge tree is cut, not walked to the end)
M.MAX_PROBLEMS = 500
M.SKIP = { [".git"] = true, [".ndomo"] = true, node_modules = true }

local symbols = {} -- name → { path, range }, from the last symbol completions

local function root()
  local c = client.get()
  local dir = c and (c.root_dir or (c.config and c.config.root_dir)) or vim.fn.getcwd()
  return vim.fs.normalize(dir)
end

--- The workspace's files, relative to the root: `git ls-files` in a repository, else a walk.
function M.files(dir)
  dir = dir or root()
  local out = {}
  if vim.fn.isdirectory(dir .. "/.git") == 1 and vim.fn.executable("git") == 1 then
    local r = vim.system({ "git", "ls-files", "--cached", "--others", "--exclude-standard" }, { cwd = dir, text = true }):wait(5000)
    if r and r.code == 0 then
      for name in vim.gsplit(r.stdout or "", "\n", { plain = true, trimempty = true }) do
        local top = name:match("^[^/]+")
        if not M.SKIP[top] then table.insert(out, name) end
        if #out >= M.MAX_FILES then break end
      end
      return out
    end
  end
  for name, kind in vim.fs.dir(dir, { depth = 20, skip = function(d) return not M.SKIP[vim.fs.basename(d)] end }) do
    if kind == "file" and not M.SKIP[name:match("^[^/]+")] then table.insert(out, name) end
    if #out >= M.MAX_FILES then break end
  end
  return out
end

local function path_of(uri)
  return vim.uri_to_fname(uri)
end

local function request_sync(c, method, params, timeout)
  local ok, resp = pcall(function()
    if vim.fn.has("nvim-0.11") == 1 then return c:request_sync(method, params, timeout or 3000) end
    return c.request_sync(method, params, timeout or 3000)
  end)
  return ok and resp and resp.result or nil
end

local function contains(r, pos)
  local after = pos.line > r.start.line or (pos.line == r.start.line and pos.character >= r.start.character)
  local before = pos.line < r["end"].line or (pos.line == r["end"].line and pos.character <= r["end"].character)
  return after and before
end

--- The symbol's whole extent: workspace/symbol often gives only its name's range; the
--- document's symbols (textDocument/documentSymbol) give the declaration's.
local function full_range(c, uri, s)
  local caps = c.server_capabilities or {}
  if not caps.documentSymbolProvider then return s.range end
  local tree = request_sync(c, "textDocument/documentSymbol", { textDocument = { uri = uri } })
  local best
  local function walk(list)
    for _, d in ipairs(list or {}) do
      if d.selectionRange and d.range and d.name == s.name and contains(d.range, s.range.start) then best = d.range end
      walk(d.children)
    end
  end
  if type(tree) == "table" then walk(tree) end
  return best or s.range
end

--- Workspace symbols matching `query` from every attached client but ndomo's.
function M.symbols(query, timeout)
  local found = {}
  for _, c in ipairs(vim.lsp.get_clients()) do
    if c.name ~= client.NAME and c.server_capabilities and c.server_capabilities.workspaceSymbolProvider then
      local result = request_sync(c, "workspace/symbol", { query = query }, timeout)
      for _, s in ipairs(type(result) == "table" and result or {}) do
        local loc = s.location
        if loc and loc.uri and loc.range then
          table.insert(found, { name = s.name, path = path_of(loc.uri), uri = loc.uri, range = loc.range, client = c.id })
        end
      end
    end
  end
  return found
end

--- The symbol `s` (from M.symbols) with its whole declaration's range.
function M.located(s)
  local c = vim.lsp.get_client_by_id(s.client)
  local range = c and full_range(c, s.uri, s) or s.range
  return { kind = "symbol", name = s.name, path = s.path, range = range }
end

--- The omnifunc of the chat buffer: completes the `@word` before the cursor.
function M.complete(findstart, base)
  if findstart == 1 then
    local line = vim.api.nvim_get_current_line():sub(1, vim.api.nvim_win_get_cursor(0)[2])
    local at = line:match(".*()@[^%s@]*$")
    if not at then return -3 end -- not in a mention: no completion, stay in insert mode
    return at -- 0-based column just after the `@`
  end
  local items = {}
  for _, w in ipairs({ { "plan", "the committed plan" }, { "problems", "the problems the editor shows" } }) do
    if base == "" or vim.startswith(w[1], base) then table.insert(items, { word = w[1], menu = w[2] }) end
  end
  local query = base:gsub("^symbol:", "")
  if base ~= "" then
    for _, s in ipairs(M.symbols(query)) do
      symbols[s.name] = s
      local rel = vim.fs.relpath and vim.fs.relpath(root(), s.path) or s.path
      table.insert(items, { word = "symbol:" .. s.name, menu = ("symbol · %s:%d"):format(rel or s.path, s.range.start.line + 1) })
    end
  end
  if not vim.startswith(base, "symbol:") then
    local files = M.files()
    if base ~= "" then files = vim.fn.matchfuzzy(files, base) end
    for i, f in ipairs(files) do
      if i > 200 then break end
      table.insert(items, { word = f, menu = "file" })
    end
  end
  return items
end

local function buffer_text(b)
  local lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
  local text = table.concat(lines, "\n")
  if vim.bo[b].eol and #lines > 0 then text = text .. "\n" end
  return text
end

--- A loaded, modified buffer's text for `path`, or nil.
local function unsaved(path)
  path = vim.fs.normalize(path)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do -- by name, not bufnr()'s file pattern
    if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].modified
      and vim.fs.normalize(vim.api.nvim_buf_get_name(b)) == path then
      return buffer_text(b)
    end
  end
  return nil
end

local function problems()
  local items = {}
  for _, d in ipairs(vim.diagnostic.get()) do
    if d.source ~= "ndomo" and vim.api.nvim_buf_is_valid(d.bufnr) then
      local path = vim.api.nvim_buf_get_name(d.bufnr)
      if path ~= "" then
        local item = {
          path = path, message = d.message, severity = d.severity,
          range = { start = { line = d.lnum, character = d.col },
                    ["end"] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col } },
        }
        if d.source ~= nil then item.source = tostring(d.source) end
        if d.code ~= nil then item.code = type(d.code) == "number" and d.code or tostring(d.code) end
        table.insert(items, item)
      end
    end
  end
  -- the worst first, at most M.MAX_PROBLEMS (the server takes up to 1000)
  table.sort(items, function(a, b) return (a.severity or 4) < (b.severity or 4) end)
  return vim.list_slice(items, 1, M.MAX_PROBLEMS)
end

--- The mentions of `prompt`, resolved for `ndomo.turn` (empty when it mentions nothing).
function M.resolve(prompt)
  local out, seen = {}, {}
  local dir = root()
  if vim.startswith(vim.trim(prompt), "/") then return out end -- a slash command's words are its arguments
  -- a word starting with `@` (not inside one: me@example.com stays text), as the server reads it
  for _, word in (" " .. prompt):gmatch("([^%w_@])@([%w_%./~+%-][^%s]*)") do
    word = word:gsub("[%.,;:!%?%)]+$", "")
    if word ~= "" and not seen[word] then
      seen[word] = true
      if word == "plan" then
        table.insert(out, { kind = "plan" })
      elseif word == "problems" then
        table.insert(out, { kind = "problems", items = problems() })
      elseif vim.startswith(word, "symbol:") then
        local name = word:sub(8)
        local s = symbols[name]
        if not s then
          for _, found in ipairs(M.symbols(name)) do
            if found.name == name then s = found break end
          end
        end
        if s then
          local m = M.located(s)
          m.text = unsaved(s.path)
          table.insert(out, m)
        end
      else
        local path = vim.fs.normalize(word:sub(1, 1) == "/" and word or (dir .. "/" .. word))
        local text = unsaved(path)
        if text or vim.fn.filereadable(path) == 1 then
          table.insert(out, { kind = "file", path = path, text = text })
        end
      end
    end
  end
  return out
end

--- The chat buffer's mentions: the omnifunc, and `@` opens the completion in insert mode.
function M.setup(buf)
  vim.bo[buf].omnifunc = "v:lua.require'ndomo.mentions'.complete"
  pcall(function() vim.bo[buf].completeopt = "menuone,noinsert,noselect" end) -- buffer-local since 0.11
  vim.keymap.set("i", "@", "@<C-x><C-o>", { buffer = buf, desc = "ndomo chat: mention (files, @plan, @problems, symbols)" })
end

return M
