--- :Ndomo review [turn] and `V` in the chat buffer: a turn's changes (its edits and its
--- commands' effects, from the server's `ndomo.review.show`) in one buffer, as a unified diff
--- per file, each hunk kept or put back.
---
--- Keys in the review buffer: a keeps the hunk under the cursor, r rejects it (on a file's
--- header line: every hunk of the file), <CR> opens the file at the hunk's line, A or :w
--- applies (`ndomo.review.apply`: the rejected hunks go back, the kept ones stay; a file
--- changed since the review is refused and left as it is), q closes without applying.
local client = require("ndomo.client")

local M = {}

M.NAME = "ndomo://review"
M.HEADER = "# a keep · r reject · <CR> open the file · A (or :w) apply · q close"

local function notify(msg, level) vim.notify(msg, level or vim.log.levels.INFO, { title = "ndomo" }) end

--- The review buffer's lines and, per line, the hunk ids it stands for (a hunk's lines: its
--- id; a file's header: every hunk of the file). `rejected`: id → true. Pure.
--- @return string[] lines, table<integer, string[]> ids, table<integer, {path: string, line: integer}> targets
function M.render(review, rejected)
  local lines, ids, targets = {}, {}, {}
  local function add(line, hunk_ids, target)
    table.insert(lines, line)
    ids[#lines] = hunk_ids
    targets[#lines] = target
  end
  local first = vim.split(type(review.prompt) == "string" and review.prompt or "", "\n", { plain = true })[1]
  add(("# Review of turn %s: %s"):format(tostring(review.turn_id), first))
  add(M.HEADER)
  for _, f in ipairs(review.files or {}) do
    local all = vim.tbl_map(function(h) return h.id end, f.hunks or {})
    add("", nil)
    add(("diff %s (%s)"):format(f.path, f.status), all, { path = f.path, line = 1 })
    add("--- a/" .. f.path, all, { path = f.path, line = 1 })
    add("+++ b/" .. f.path, all, { path = f.path, line = 1 })
    for _, h in ipairs(f.hunks or {}) do
      local mark = rejected[h.id] and "[REJECT]" or "[keep]"
      local target = { path = f.path, line = math.max(h.new_start, 1) }
      local head = f.status == "binary" and "@@ binary file @@" or
        ("@@ -%d,%d +%d,%d @@"):format(h.old_start, h.old_lines, h.new_start, h.new_lines)
      add(("%s %s %s"):format(head, mark, h.id), { h.id }, target)
      for _, l in ipairs(h.removed or {}) do add("-" .. l, { h.id }, target) end
      for _, l in ipairs(h.added or {}) do add("+" .. l, { h.id }, target) end
    end
  end
  return lines, ids, targets
end

--- The `ndomo.review.apply` arguments for `review` with `rejected` (id → true). Pure.
function M.apply_args(review, rejected)
  local reject, hashes = {}, {}
  for _, f in ipairs(review.files or {}) do
    hashes[f.path] = f.hash
    for _, h in ipairs(f.hunks or {}) do
      if rejected[h.id] then table.insert(reject, h.id) end
    end
  end
  return { turn = review.turn_id, reject = reject, hashes = hashes }
end

local state = {} -- buf → { review, rejected, ids, targets }

local function draw(buf)
  local s = state[buf]
  local lines
  lines, s.ids, s.targets = M.render(s.review, s.rejected)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

--- Mark the hunk(s) under the cursor kept (`reject` false) or rejected.
function M.mark(reject)
  local buf = vim.api.nvim_get_current_buf()
  local s = state[buf]
  if not s then return end
  local ids = s.ids[vim.api.nvim_win_get_cursor(0)[1]]
  if not ids then return notify("ndomo: no hunk on this line", vim.log.levels.WARN) end
  for _, id in ipairs(ids) do s.rejected[id] = reject or nil end
  draw(buf)
end

--- Open the file of the hunk under the cursor at the hunk's line, in another window.
function M.jump()
  local buf = vim.api.nvim_get_current_buf()
  local s = state[buf]
  local target = s and s.targets[vim.api.nvim_win_get_cursor(0)[1]]
  if not target then return notify("ndomo: no file on this line", vim.log.levels.WARN) end
  vim.cmd("wincmd p")
  if vim.api.nvim_get_current_buf() == buf then vim.cmd("aboveleft split") end
  vim.cmd.edit(vim.fn.fnameescape(s.root and (s.root .. "/" .. target.path) or target.path))
  pcall(vim.api.nvim_win_set_cursor, 0, { target.line, 0 })
end

--- Apply the review: the rejected hunks go back. `done(result)` after the server answered.
function M.apply(done)
  local buf = vim.api.nvim_get_current_buf()
  local s = state[buf]
  if not s then return end
  local args = M.apply_args(s.review, s.rejected)
  client.execute_on(s.client, "ndomo.review.apply", args, function(err, res)
    if err then
      return notify("ndomo: " .. (type(err) == "table" and err.message or tostring(err)), vim.log.levels.ERROR)
    end
    local refused = type(res) == "table" and type(res.refused) == "table" and next(res.refused) ~= nil
    notify("ndomo: " .. (type(res) == "table" and res.message or "review applied"),
      refused and vim.log.levels.WARN or vim.log.levels.INFO)
    vim.cmd("checktime") -- buffers of the files put back read them again
    if vim.api.nvim_buf_is_valid(buf) then vim.api.nvim_buf_delete(buf, { force = true }) end
    state[buf] = nil
    if done then done(res) end
  end)
end

local function show(review, c)
  local old = vim.fn.bufnr(M.NAME)
  if old > 0 then vim.api.nvim_buf_delete(old, { force = true }) end
  local buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, buf, M.NAME)
  vim.bo[buf].buftype = "acwrite" -- :w applies
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "diff"
  state[buf] = { review = review, rejected = {}, client = c, root = c.root_dir or (c.config and c.config.root_dir) }
  draw(buf)
  local map = function(lhs, fn, desc) vim.keymap.set("n", lhs, fn, { buffer = buf, desc = "ndomo review: " .. desc, nowait = true }) end
  map("a", function() M.mark(false) end, "keep the hunk under the cursor")
  map("r", function() M.mark(true) end, "reject the hunk under the cursor (put it back)")
  map("<CR>", M.jump, "open the file at the hunk")
  map("A", function() M.apply() end, "apply: put back the rejected hunks")
  map("q", function() vim.api.nvim_buf_delete(buf, { force = true }) end, "close without applying")
  vim.api.nvim_create_autocmd("BufWriteCmd", { buffer = buf, callback = function() M.apply() end })
  vim.api.nvim_create_autocmd("BufWipeout", { buffer = buf, callback = function() state[buf] = nil end })
  vim.cmd("tab sbuffer " .. buf)
  return buf
end

--- Open the review of turn `turn` (nil: the session's last turn that changed files).
--- `quiet`: say nothing when there is nothing to review (the review after each turn).
function M.open(turn, done, quiet)
  local c = client.get()
  if not c then return notify("ndomo: the server is not running", vim.log.levels.ERROR) end
  client.execute_on(c, "ndomo.review.show", turn and { turn = turn } or {}, function(err, review)
    if err then
      if quiet then return end
      return notify("ndomo: " .. (type(err) == "table" and err.message or tostring(err)), vim.log.levels.ERROR)
    end
    if type(review) ~= "table" or type(review.files) ~= "table" or #review.files == 0 then
      if quiet then return end
      return notify("ndomo: " .. (type(review) == "table" and review.message or "nothing to review"))
    end
    local buf = show(review, c)
    if done then done(buf) end
  end)
end

--- `review_after_turn`: a top-level turn that ends done opens its review when it changed files.
function M.after_turn(data)
  if type(data) == "table" and data.turn_id and data.status == "done" then M.open(data.turn_id, nil, true) end
end

return M
