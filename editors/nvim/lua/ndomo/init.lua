--- ndomo for Neovim: starts the ndomo language server, exposes :Ndomo and a statusline.
local M = {}

M.opts = nil
--- The latest `ndomo/status` of any client (kept for statuslines and tests).
M.last_status = nil
--- client id → its latest `ndomo/status`.
M.statuses = {}
local tick = 0

--- Spinner frame period while a turn runs.
M.SPIN_MS = 120
local spinner -- uv timer, alive only while some client is busy

--- Statusline text, e.g. "ndomo: <agent> · <mode> · 2/5" ("" before the first status).
--- The status of the current buffer's server when it has one, else the latest.
function M.status()
  local s = M.last_status
  local ok, c = pcall(function()
    local clients = vim.lsp.get_clients({ name = "ndomo", bufnr = vim.api.nvim_get_current_buf() })
    return clients[1]
  end)
  if ok and c and M.statuses[c.id] then s = M.statuses[c.id] end
  return require("ndomo.status").format(s, tick)
end

--- The chat window's statusline: the status and the session's token usage (and cost).
function M.chat_statusline()
  local s = M.last_status
  local usage = require("ndomo.status").usage(s)
  local text = require("ndomo.status").format(s, tick)
  return (text ~= "" and text or "ndomo chat") .. (usage ~= "" and (" · " .. usage) or "")
end

local function redraw()
  vim.cmd("redrawstatus!") -- every window: `redrawstatus` redraws only the current buffer's
end

local function any_busy()
  for _, s in pairs(M.statuses) do
    if s.busy == true then return true end
  end
  return false
end

--- The spinner's timer is created when a turn starts and closed when none is busy: an idle
--- editor runs no timer for ndomo.
local function spin()
  if any_busy() then
    if not spinner then
      spinner = assert(vim.uv.new_timer())
      spinner:start(M.SPIN_MS, M.SPIN_MS, vim.schedule_wrap(function()
        if not spinner then return end
        tick = tick + 1
        redraw()
      end))
    end
  elseif spinner then
    spinner:stop()
    spinner:close()
    spinner = nil
  end
end

--- For tests and :checkhealth: is the spinner timer running?
function M.spinning() return spinner ~= nil and spinner:is_active() end

--- Files the server rewrites on disk (plan views, session transcripts under `<root>/.ndomo/`)
--- are reloaded when they changed, unless the buffer holds unsaved edits. `only`: that path.
function M.reload_owned(root, only)
  if not root then return end
  local dir = vim.fs.normalize(root):gsub("/+$", "") .. "/.ndomo/"
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == "" and not vim.bo[b].modified then
      local name = vim.fs.normalize(vim.api.nvim_buf_get_name(b))
      if vim.startswith(name, dir) and (not only or name == only) then
        vim.bo[b].autoread = true -- reload without asking: the server owns the file
        pcall(vim.cmd.checktime, b)
      end
    end
  end
end

local function on_status(_, result, ctx)
  if type(result) ~= "table" then return end
  local id = ctx and ctx.client_id or 0
  M.statuses[id] = result
  M.last_status = result
  tick = tick + 1
  vim.schedule(function()
    spin()
    local c = ctx and vim.lsp.get_client_by_id(id)
    -- the status names its workspace folder (a server may serve several)
    local folder = type(result.folder) == "string" and vim.uri_to_fname(result.folder) or nil
    M.reload_owned(folder or (c and c.root_dir))
    vim.api.nvim_exec_autocmds("User", { pattern = "NdomoStatus", modeline = false, data = result })
    redraw()
  end)
end

--- Run in order, at once: vim.lsp already schedules notification handlers, and an extra
--- vim.schedule would let the `ndomo.turn` result overtake its own turn_finished event.
local function on_event(_, result, ctx)
  require("ndomo.ui").on_event(result)
  require("ndomo.turns").on_event(result, ctx and ctx.client_id)
  if type(result) == "table" then
    vim.api.nvim_exec_autocmds("User", { pattern = "NdomoTurnEvent", modeline = false, data = result })
  end
end

--- A server went away: forget its status (a crashed busy server must not spin forever).
function M.on_exit(client_id)
  vim.schedule(function()
    M.statuses[client_id] = nil
    require("ndomo.turns").forget(client_id)
    spin()
    redraw()
  end)
end

--- Plan diagnostics are republished right after the server rewrote a plan's view (a task
--- changed by the CLI, another editor or a command does not always come with a status).
local function on_diagnostics(err, result, ctx, config)
  vim.lsp.handlers["textDocument/publishDiagnostics"](err, result, ctx, config)
  local uri = type(result) == "table" and result.uri
  if type(uri) ~= "string" or not uri:find("/.ndomo/", 1, true) then return end
  vim.schedule(function()
    local path = vim.fs.normalize(vim.uri_to_fname(uri))
    M.reload_owned(path:match("^(.*)/%.ndomo/"), path) -- the folder that holds the view
  end)
end

function M.handlers()
  local h = {
    ["textDocument/publishDiagnostics"] = on_diagnostics,
    ["ndomo/status"] = on_status,
    ["ndomo/turn/event"] = on_event,
    ["ndomo/saveDocuments"] = require("ndomo.save").handler,
    ["ndomo/diagnostics"] = require("ndomo.problems").handler,
  }
  if M.opts.ui_select_requests then
    h["window/showMessageRequest"] = require("ndomo.ui").show_message_request
    h["ndomo/approve"] = require("ndomo.ui").approve -- announced only with this handler
  end
  return h
end

--- New live settings for the running servers, applied without a restart (see config.lua).
function M.set_settings(settings)
  M.opts.settings = settings
  require("ndomo.client").set_settings(settings)
end

--- Attach the current (or given) buffer, starting the server when needed.
function M.attach(bufnr)
  return require("ndomo.client").attach(bufnr or vim.api.nvim_get_current_buf(), M.opts, M.handlers())
end

local KEYMAP_CMDS = {
  ask = { "n", "<cmd>Ndomo ask<cr>", "x", ":Ndomo ask<cr>" },
  fix = { "n", "<cmd>Ndomo fix<cr>", "x", ":Ndomo fix<cr>" },
  plan = { "n", "<cmd>Ndomo plan<cr>", "x", ":Ndomo plan<cr>" },
  mode = { "n", "<cmd>Ndomo mode<cr>" },
  agent = { "n", "<cmd>Ndomo agent<cr>" },
  cancel = { "n", "<cmd>Ndomo cancel<cr>" },
  undo = { "n", "<cmd>Ndomo undo<cr>" },
  plans = { "n", "<cmd>Ndomo plans<cr>" },
  transcript = { "n", "<cmd>Ndomo transcript<cr>" },
}

local function set_keymaps(maps)
  for action, lhs in pairs(maps) do
    local spec = KEYMAP_CMDS[action]
    if not spec then error(("ndomo: no keymap action %q"):format(action)) end
    for i = 1, #spec, 2 do
      vim.keymap.set(spec[i], lhs, spec[i + 1], { desc = "ndomo " .. action, silent = true })
    end
  end
end

function M.setup(user)
  if vim.fn.has("nvim-0.10") ~= 1 then
    vim.notify("ndomo needs Neovim 0.10 or newer", vim.log.levels.ERROR)
    return
  end
  M.opts = require("ndomo.config").merge(user)
  require("ndomo.commands").create()
  require("ndomo.chat").setup()
  if M.opts.keymaps then set_keymaps(M.opts.keymaps) end

  local group = vim.api.nvim_create_augroup("ndomo", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufEnter", "FileType" }, {
    group = group,
    callback = function(ev) M.attach(ev.buf) end,
  })
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = "NdomoAnswer",
    callback = function(ev) if M.opts.review_after_turn then require("ndomo.review").after_turn(ev.data) end end,
  })
  -- Quit: wait for the servers to exit (shutdown, exit), SIGTERM the ones that do not.
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = group,
    callback = function() require("ndomo.client").stop_all(M.opts.exit_timeout) end,
  })
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) then M.attach(b) end
  end
end

return M
