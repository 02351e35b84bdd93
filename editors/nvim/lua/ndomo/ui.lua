--- Server → user: questions/approvals through vim.ui.select, and the turn transcript.
local M = {}

--- `window/showMessageRequest` through vim.ui.select. Neovim ≥ 0.11 runs server requests
--- in a coroutine, so we wait for the pick without blocking; 0.10 falls back to inputlist.
function M.show_message_request(_, params, _)
  local actions = params.actions or {}
  if #actions == 0 then
    vim.notify(params.message, vim.log.levels.INFO)
    return vim.NIL
  end
  local co, is_main = coroutine.running()
  if co and not is_main then
    local titles = vim.tbl_map(function(a) return a.title end, actions)
    local answered = require("ndomo.chat").question(params.message, titles) -- shown in the chat too
    vim.ui.select(actions, {
      prompt = params.message,
      kind = "ndomo_request",
      format_item = function(a) return a.title end,
    }, function(choice)
      answered()
      vim.schedule(function() coroutine.resume(co, choice or vim.NIL) end)
    end)
    return coroutine.yield()
  end
  local lines = { params.message }
  for i, a in ipairs(actions) do table.insert(lines, ("%d. %s"):format(i, a.title)) end
  local n = vim.fn.inputlist(lines)
  return actions[n] or vim.NIL
end

--- `ndomo/approve` (server → client, sent because the client announces
--- `experimental.ndomo.approvals`): the approval's parts in the chat buffer (reason, the
--- command as a fenced block, the choices), the short question as vim.ui.select's prompt, and
--- the server records the answer (its `decision` event). Answers `{choice = <id>}`; a dismissal denies.
function M.approve(_, params, _)
  local choices = type(params) == "table" and params.choices or {}
  if type(choices) ~= "table" or #choices == 0 then return { choice = vim.NIL } end
  local chat = require("ndomo.chat")
  local answered = chat.approval(params)
  local co, is_main = coroutine.running()
  if co and not is_main then
    vim.ui.select(choices, {
      prompt = params.message,
      kind = "ndomo_approval",
      format_item = M.format_choice,
    }, function(choice)
      local id = type(choice) == "table" and choice.id or nil
      answered(id)
      vim.schedule(function() coroutine.resume(co, { choice = id or vim.NIL }) end)
    end)
    return coroutine.yield()
  end
  local lines = { params.message }
  for i, c in ipairs(choices) do table.insert(lines, ("%d. %s"):format(i, M.format_choice(c))) end
  local picked = choices[vim.fn.inputlist(lines)]
  answered(picked and picked.id or nil)
  return { choice = picked and picked.id or vim.NIL }
end

--- A choice as the picker lists it: "Always — allow `pytest *` in this project".
function M.format_choice(c)
  if type(c) ~= "table" then return tostring(c) end
  local detail = type(c.detail) == "string" and c.detail ~= "" and (" — " .. c.detail) or ""
  return tostring(c.label) .. detail
end

-- transcript -------------------------------------------------------------------------------

M.TRANSCRIPT = "ndomo://transcript"
local buf

local function transcript_buf()
  if buf and vim.api.nvim_buf_is_valid(buf) then return buf end
  buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, M.TRANSCRIPT)
  vim.bo[buf].filetype = "markdown"
  vim.bo[buf].bufhidden = "hide"
  return buf
end

--- Append text (may hold newlines; a partial last line is continued by the next call).
function M.append(text)
  if text == nil or text == "" then return end
  local b = transcript_buf()
  local n = vim.api.nvim_buf_line_count(b)
  local last = vim.api.nvim_buf_get_lines(b, n - 1, n, false)[1] or ""
  local chunks = vim.split(last .. text, "\n", { plain = true })
  vim.api.nvim_buf_set_lines(b, n - 1, n, false, chunks)
end

--- `ndomo/turn/event` → transcript text; nil for events with nothing to read.
function M.describe(e)
  if type(e) ~= "table" then return nil end
  if e.kind == "turn_started" then
    return ("\n## %s · %s: %s\n"):format(e.agent, e.mode, e.prompt)
  elseif e.kind == "text" then
    return e.text
  elseif e.kind == "tool_started" then
    return ("\n- %s…"):format(e.name)
  elseif e.kind == "tool_finished" then
    return (" %s %s\n"):format(e.status == "done" and "✓" or "✗", e.summary or e.status)
  elseif e.kind == "notice" then
    return ("\n> [%s] %s\n"):format(e.level or "info", e.message)
  elseif e.kind == "turn_finished" then
    return ("\n_%s%s_\n"):format(e.status, e.error and e.error ~= vim.NIL and (": " .. e.error) or "")
  end
  return nil
end

function M.on_event(event)
  local text = M.describe(event)
  if text then M.append(text) end
end

function M.open_transcript()
  local b = transcript_buf()
  local win = vim.fn.bufwinid(b)
  if win == -1 then
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, b)
  else
    vim.api.nvim_set_current_win(win)
  end
end

--- A scratch buffer with `lines` in a split (plans, health); returns the buffer.
function M.show(title, lines)
  local old = vim.fn.bufnr("^ndomo://" .. title .. "$")
  if old > 0 then pcall(vim.api.nvim_buf_delete, old, { force = true }) end -- one list, the newest
  local b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].bufhidden = "wipe"
  vim.bo[b].modifiable = false
  vim.cmd("botright split")
  vim.api.nvim_win_set_buf(0, b)
  pcall(vim.api.nvim_buf_set_name, b, "ndomo://" .. title)
  return b
end

return M
