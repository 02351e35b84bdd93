--- :Ndomo notes — the notes agents remembered: pick one to delete it (Esc keeps them all).
local client = require("ndomo.client")

local M = {}

function M.format(n)
  return ("#%d [%s] %s"):format(n.id, n.category, (n.content or ""):gsub("%s+", " "))
end

function M.run(query)
  local args = (query and query ~= "") and { query = query } or {}
  client.execute("ndomo.memory.list", args, function(err, notes)
    if err then return vim.notify("ndomo: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR) end
    if type(notes) ~= "table" or #notes == 0 then return vim.notify("ndomo: no notes") end
    vim.ui.select(notes, { prompt = "Delete which note? (Esc keeps them all)", kind = "ndomo_notes", format_item = M.format },
      function(choice)
        if not choice then return end
        client.execute("ndomo.memory.delete", { id = choice.id }, function(e)
          if e then return vim.notify("ndomo: " .. (e.message or vim.inspect(e)), vim.log.levels.ERROR) end
          vim.notify("ndomo: deleted note #" .. choice.id)
        end)
      end)
  end)
end

return M
