--- A tool call in the chat buffer, as lines under its head line: an edit as a diff hunk, a
--- write as the lines it writes, a patch as its diff, a command as a fenced block, other
--- calls as their arguments. Pure (no buffer): each line comes with its highlight group and,
--- for a file line, the file and line it jumps to (gf / <CR> in the chat buffer).
local M = {}

M.INDENT = "    " -- the chat folds indented lines: a card's body folds under its head
M.WRITE_LINES = 20 -- lines of a written file shown (before the server's diff arrives)
M.DIFF_LINES = 80 -- lines of one changed file's hunks shown

-- highlight groups (linked to the colour scheme's diff and diagnostic groups in setup())
M.GROUPS = {
  NdomoChatAdd = "Added",
  NdomoChatDelete = "Removed",
  NdomoChatHunk = "DiffChange",
  NdomoChatPath = "Directory",
  NdomoChatCommand = "Special",
  NdomoChatOk = "DiagnosticOk",
  NdomoChatFail = "DiagnosticError",
  NdomoChatPrompt = "Title",
  NdomoChatNotice = "DiagnosticWarn",
  NdomoChatDecision = "Comment", -- how an approval was decided
  NdomoChatSandbox = "Comment", -- what a command ran in ("sandboxed · offline")
  NdomoChatUnsandboxed = "DiagnosticWarn", -- "not sandboxed"
}

local KIND_WORDS = { create = " (new file)", delete = " (deleted)", move = " (moved here)" }

function M.setup()
  for name, target in pairs(M.GROUPS) do
    -- older colour schemes have no Added/Removed: fall back to the diff groups
    local fallback = ({ Added = "DiffAdd", Removed = "DiffDelete" })[target]
    local exists = vim.fn.hlexists(target) == 1
    vim.api.nvim_set_hl(0, name, { link = (exists or not fallback) and target or fallback, default = true })
  end
end

local function str(v) return (v == nil or v == vim.NIL) and "" or tostring(v) end

local function split(text) return vim.split(str(text), "\n", { plain = true }) end

local diff = (vim.text and vim.text.diff) or vim.diff

--- The unified diff of two texts, without its file headers.
local function hunks(old, new)
  local ok, out = pcall(diff, str(old) .. "\n", str(new) .. "\n", { result_type = "unified", ctxlen = 1 })
  if not ok or type(out) ~= "string" then return {} end
  local lines = vim.split(out, "\n", { plain = true })
  if lines[#lines] == "" then table.remove(lines) end
  return lines
end

--- The 1-based line where `needle`'s first line is in `path` (nil when not found once).
local function line_in(path, needle)
  local first = split(needle)[1]
  if first == "" or vim.fn.filereadable(path) ~= 1 then return nil end
  local found
  for i, l in ipairs(vim.fn.readfile(path, "", 100000)) do
    if l:find(first, 1, true) then
      if found then return found end
      found = i
    end
  end
  return found
end

--- @param it table  {name, args, status, output}
--- @param root string|nil  the workspace, to resolve relative paths
--- @return table[]  {text, hl = group|nil, file = {path, lnum}|nil}
function M.body(it, root)
  local a = type(it.args) == "table" and it.args or {}
  local out = {}
  local function add(text, hl, file) table.insert(out, { text = M.INDENT .. text, hl = hl, file = file }) end
  local function abs(p)
    p = str(p)
    if p:sub(1, 1) == "/" or not root then return p end
    return root .. "/" .. p
  end
  local name = it.name
  if type(it.files) == "table" and #it.files > 0 and name ~= "edit" then
    -- the server's diff of each file the call changed (write, apply_patch): its path at the
    -- first changed line, then its hunks
    for _, f in ipairs(it.files) do
      local lnum = tonumber(f.line) or 1
      add(("%s:%d%s"):format(str(f.path), lnum, KIND_WORDS[f.kind] or ""), "NdomoChatPath", { path = abs(f.path), lnum = lnum })
      local shown = 0
      local body = split(f.diff)
      if body[#body] == "" then table.remove(body) end
      for _, l in ipairs(body) do
        if not (l:match("^%-%-%- ") or l:match("^%+%+%+ ")) then
          shown = shown + 1
          if shown > M.DIFF_LINES then
            add(("… %d more lines"):format(#body - M.DIFF_LINES - 2))
            break
          end
          local c = l:sub(1, 1)
          add(l, c == "+" and "NdomoChatAdd" or c == "-" and "NdomoChatDelete" or c == "@" and "NdomoChatHunk" or nil)
        end
      end
      if f.cut == true then add("… the rest of this diff was too long to keep") end
    end
  elseif name == "edit" and a.path then
    local lnum = line_in(abs(a.path), a.new_text) or 1
    add(("%s:%d"):format(str(a.path), lnum), "NdomoChatPath", { path = abs(a.path), lnum = lnum })
    for _, l in ipairs(hunks(a.old_text, a.new_text)) do
      local c = l:sub(1, 1)
      add(l, c == "+" and "NdomoChatAdd" or c == "-" and "NdomoChatDelete" or c == "@" and "NdomoChatHunk" or nil)
    end
  elseif name == "write" and a.path then
    add(str(a.path), "NdomoChatPath", { path = abs(a.path), lnum = 1 })
    local lines = split(a.content)
    if lines[#lines] == "" then table.remove(lines) end
    for i = 1, math.min(#lines, M.WRITE_LINES) do add("+" .. lines[i], "NdomoChatAdd") end
    if #lines > M.WRITE_LINES then add(("… %d more lines"):format(#lines - M.WRITE_LINES)) end
  elseif name == "apply_patch" and (a.patch or a.input) then
    for _, l in ipairs(split(a.patch or a.input)) do
      local c = l:sub(1, 1)
      local file = l:match("^%+%+%+ b/(.+)$") or l:match("^%*%*%* %a+ File: (.+)$")
      if file then
        add(l, "NdomoChatPath", { path = abs(file), lnum = 1 })
      else
        add(l, c == "+" and "NdomoChatAdd" or c == "-" and "NdomoChatDelete" or c == "@" and "NdomoChatHunk" or nil)
      end
    end
  elseif (name == "bash" or name == "serve") and a.command then
    add("```sh", "NdomoChatCommand")
    for _, l in ipairs(split(a.command)) do add(l, "NdomoChatCommand") end
    add("```", "NdomoChatCommand")
    if type(it.sandbox) == "string" and it.sandbox ~= "" then
      add(it.sandbox, it.sandbox:find("^sandboxed") and "NdomoChatSandbox" or "NdomoChatUnsandboxed")
    end
  else
    for k, v in pairs(a) do
      local text = type(v) == "table" and vim.json.encode(v) or str(v)
      local file = (k == "path" or k == "file") and type(v) == "string" and { path = abs(v), lnum = tonumber(a.line or a.start_line) or 1 } or nil
      add(("%s: %s"):format(k, text), file and "NdomoChatPath" or nil, file)
    end
    table.sort(out, function(x, y) return x.text < y.text end)
  end
  return out
end

return M
