--- Options for require("ndomo").setup(): defaults and validation.
local M = {}

M.defaults = {
  -- Command that runs the language server (stdio).
  cmd = { "ndomo", "serve" },
  -- Extra environment for the server process (e.g. { NDOMO_BASE_URL = "..." }).
  cmd_env = nil,
  -- The nearest folder holding one of these is the workspace root; else the cwd when the file
  -- lies under it. Never / nor $HOME: a file outside any root starts no server.
  root_markers = { ".ndomo", ".git", "pyproject.toml", "package.json", "go.mod", "Cargo.toml" },
  -- Sent as initializationOptions, in the .ndomo/config.yaml shape:
  -- { model = { base_url = ..., name = ..., api_key_env = ... }, modes = { default = ... } }
  -- Empty (the default) goes out as the JSON object {}.
  init_options = {},
  -- Live settings in the same shape, sent as `settings = { ndomo = ... }`: the server pulls
  -- them (workspace/configuration) and applies them without a restart. Change them later
  -- with require("ndomo").set_settings({ model = { name = ... } }).
  settings = nil,
  -- nil = attach to every file buffer under a root; or a list of filetypes.
  filetypes = nil,
  -- Extra client capabilities (e.g. from a completion plugin), merged over Neovim's own.
  capabilities = nil,
  -- On quit, how long (ms) to wait for the server to exit before it is sent SIGTERM.
  exit_timeout = 3000,
  -- Keymaps are off unless set: { ask = "<leader>na", fix = "<leader>nf", plan = "<leader>np",
  --   mode = "<leader>nm", agent = "<leader>ng", cancel = "<leader>nc", undo = "<leader>nu" }
  keymaps = false,
  -- Answers of :Ndomo ask/fix/plan also go to vim.notify.
  notify_answers = true,
  -- Approvals and other server questions through vim.ui.select.
  ui_select_requests = true,
  -- After a turn that changed files, open its review (:Ndomo review) at once.
  review_after_turn = false,
}

local function check(opts)
  vim.validate({
    cmd = { opts.cmd, "table" },
    root_markers = { opts.root_markers, "table" },
    init_options = { opts.init_options, "table" },
    settings = { opts.settings, "table", true },
    filetypes = { opts.filetypes, "table", true },
    cmd_env = { opts.cmd_env, "table", true },
    capabilities = { opts.capabilities, "table", true },
    exit_timeout = { opts.exit_timeout, "number" },
    review_after_turn = { opts.review_after_turn, "boolean" },
  })
  if #opts.cmd == 0 then
    error("ndomo: cmd must name the server executable, e.g. { 'ndomo', 'serve' }", 0)
  end
  if opts.keymaps ~= false and type(opts.keymaps) ~= "table" then
    error("ndomo: keymaps must be false or a table of action = lhs", 0)
  end
end

function M.merge(user)
  local opts = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), user or {})
  -- lists are replaced, not merged index by index
  if user and user.cmd then opts.cmd = vim.deepcopy(user.cmd) end
  if user and user.root_markers then opts.root_markers = vim.deepcopy(user.root_markers) end
  check(opts)
  return opts
end

return M
