-- Plugin logic without a server: statusline text, options, completion, request handler.
local out_path = assert(os.getenv("NDOMO_TEST_OUT"))
local r = {}
local status = require("ndomo.status")

r.idle = status.format({ session = "s", mode = "discussion", agent = "foreman", busy = false, state = "idle", plan = vim.NIL })
r.plan = status.format({ session = "s", mode = "autopilot", agent = "craftsman", busy = false, state = "idle",
  plan = { id = "p", slug = "x", done = 2, total = 5 } })
r.state = status.format({ session = "s", mode = "autopilot", agent = "craftsman", busy = false, state = "failed", plan = vim.NIL })
r.busy = status.format({ session = "s", mode = "autopilot", agent = "craftsman", busy = true, state = "idle", plan = vim.NIL }, 0)
r.none = status.format(nil)
r.before_setup = require("ndomo").status()

local cfg = require("ndomo.config")
local o = cfg.merge({ cmd = { "python", "-m", "ndomo", "serve" }, init_options = { model = { name = "m" } } })
r.cmd = o.cmd
r.keymaps_default = o.keymaps
r.init_options = o.init_options
r.bad_cmd = select(2, pcall(cfg.merge, { cmd = {} }))
r.bad_keymaps = select(2, pcall(cfg.merge, { keymaps = "yes" }))

require("ndomo").setup({ cmd = { "ndomo-does-not-exist" } })
r.has_command = vim.fn.exists(":Ndomo") == 2
local cmds = require("ndomo.commands")
r.complete_all = cmds.complete("", "Ndomo ", 6)
r.complete_mode = cmds.complete("b", "Ndomo mode b", 12)
r.complete_agent = cmds.complete("", "Ndomo agent ", 12)
r.no_keymaps = vim.fn.maparg("<leader>na", "n") == ""

-- vim.ui.select answers a server request from inside a coroutine (as Neovim ≥ 0.11 runs them).
vim.ui.select = function(items, opts, cb)
  r.select_prompt = opts.prompt
  cb(items[3])
end
local co = coroutine.create(function()
  local picked = require("ndomo.ui").show_message_request(nil, {
    type = 3,
    message = "ndomo · craftsman (autopilot) wants bash: rm x",
    actions = { { title = "Allow once" }, { title = "Allow for this session" }, { title = "Always allow in this project" }, { title = "Deny" } },
  }, {})
  r.picked = picked.title
end)
local _, first = coroutine.resume(co)
r.yielded = coroutine.status(co) == "suspended" and first == nil
vim.wait(1000, function() return coroutine.status(co) == "dead" end)
r.co_dead = coroutine.status(co) == "dead"

-- transcript text from turn events
local ui = require("ndomo.ui")
ui.on_event({ kind = "turn_started", agent = "craftsman", mode = "autopilot", prompt = "fix" })
ui.on_event({ kind = "text", text = "hello " })
ui.on_event({ kind = "text", text = "world\nsecond" })
ui.on_event({ kind = "turn_finished", status = "done", error = vim.NIL })
r.transcript = vim.api.nvim_buf_get_lines(vim.fn.bufnr(ui.TRANSCRIPT), 0, -1, false)

-- an unknown subcommand is an error message, not a crash
local msgs = {}
vim.notify = function(m) table.insert(msgs, m) end
vim.cmd("Ndomo frobnicate")
r.unknown = msgs[1]
-- no server: a clear message
vim.cmd("Ndomo cancel")
r.no_server = msgs[2]

-- the empty argument goes out as an object, not a list
r.empty_dict = vim.json.encode({ arguments = { vim.empty_dict() } })

local f = assert(io.open(out_path, "w"))
f:write(vim.json.encode(r))
f:close()
vim.cmd("qa!")
