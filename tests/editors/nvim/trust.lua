-- Folder trust in a real headless Neovim against the real server: the question on first
-- attach, its answer, :Ndomo trust [revoke]. Results go to $NDOMO_TEST_OUT as JSON.
local out_path = assert(os.getenv("NDOMO_TEST_OUT"))
local file = assert(os.getenv("NDOMO_TEST_FILE"))
local python = assert(os.getenv("NDOMO_TEST_PYTHON"))
local answer = os.getenv("NDOMO_TEST_TRUST_PICK") -- what the user picks (nil: dismiss)
local agent = os.getenv("NDOMO_TEST_AGENT") -- the workspace's own agent (shows only when trusted)
local steps = vim.split(os.getenv("NDOMO_TEST_STEPS") or "", ",", { trimempty = true })

local results = { errors = {}, selects = {}, notices = {} }

local function save()
  local f = assert(io.open(out_path, "w"))
  f:write(vim.json.encode(results))
  f:close()
end

local function wait(ms, cond, what)
  if not vim.wait(ms, cond, 50) then error("timed out waiting for " .. what) end
end

vim.notify = function(msg, level)
  table.insert(results.notices, { msg = tostring(msg), level = level or vim.log.levels.INFO })
end

vim.ui.select = function(items, opts, on_choice)
  table.insert(results.selects, { prompt = opts.prompt, items = items, kind = opts.kind })
  if opts.kind == "ndomo_trust" and answer then
    for _, it in ipairs(items) do
      if it == answer then return on_choice(it) end
    end
  end
  on_choice(nil)
end

local ndomo = require("ndomo")
ndomo.setup({ cmd = { python, "-m", "ndomo", "serve", "--log-level", "debug", "--log-file", os.getenv("NDOMO_TEST_LOG") } })
local trust = require("ndomo.trust")
local client = require("ndomo.client")

local root
local function has_agent()
  local cat = client.execute_sync("ndomo.catalog", {}, 10000)
  for _, a in ipairs(cat and cat.agents or {}) do
    if a.name == agent then return true end
  end
  return false
end

local function snapshot(prefix)
  results[prefix .. "_status"] = ndomo.status()
  results[prefix .. "_state"] = trust.info[root] and trust.info[root].state
  results[prefix .. "_agent"] = has_agent()
end

local S = {}

function S.attach()
  vim.cmd.edit(file)
  wait(20000, function() return client.get(0) ~= nil end, "client")
  root = client.get(0).root_dir
  results.root = root
  wait(20000, function() return trust.checked[root] end, "the trust check")
  results.info = trust.initial[root]
  -- the status after the answer: the server reloaded the folder and sent its new trust
  local asked = #vim.tbl_filter(function(s) return s.kind == "ndomo_trust" end, results.selects) > 0
  local want = asked and answer == trust.TRUST and "trusted" or nil
  wait(20000, function()
    local s = ndomo.last_status
    return s ~= nil and type(s.trust) == "string" and (want == nil or s.trust == want)
  end, "a status with the folder's trust")
  snapshot("attach")
end

function S.revoke()
  vim.cmd("Ndomo trust revoke")
  wait(20000, function()
    return ndomo.last_status and ndomo.last_status.trust == "untrusted" and trust.info[root].state == "untrusted"
  end, "untrusted status and answer")
  snapshot("revoke")
end

function S.trust()
  vim.cmd("Ndomo trust")
  wait(20000, function()
    return ndomo.last_status and ndomo.last_status.trust == "trusted" and trust.info[root].state == "trusted"
  end, "trusted status and answer")
  snapshot("trust")
end

for _, name in ipairs(steps) do
  local ok, err = pcall(S[name])
  if not ok then results.errors[name] = tostring(err) end
  save()
end
save()
vim.cmd("qa!")
