--- ndomo for Neovim: starts the ndomo language server, exposes :Ndomo and a statusline.
local M = {}

M.opts = nil
M.last_status = nil
local tick = 0

--- Statusline text, e.g. "ndomo: craftsman · autopilot · 2/5" ("" before the first status).
function M.status()
  return require("ndomo.status").format(M.last_status, tick)
end

local function on_status(_, result)
  if type(result) ~= "table" then return end
  M.last_status = result
  tick = tick + 1
  vim.schedule(function()
    vim.api.nvim_exec_autocmds("User", { pattern = "NdomoStatus", modeline = false, data = result })
    vim.cmd("redrawstatus")
  end)
end

local function on_event(_, result)
  vim.schedule(function()
    require("ndomo.ui").on_event(result)
    if type(result) == "table" then
      vim.api.nvim_exec_autocmds("User", { pattern = "NdomoTurnEvent", modeline = false, data = result })
    end
  end)
end

function M.handlers()
  local h = {
    ["ndomo/status"] = on_status,
    ["ndomo/turn/event"] = on_event,
  }
  if M.opts.ui_select_requests then
    h["window/showMessageRequest"] = require("ndomo.ui").show_message_request
  end
  return h
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
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) then M.attach(b) end
  end
end

return M
