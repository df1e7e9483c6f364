-- Runs the README's Neovim snippet (SHAPE_LINT_SNIPPET, a file holding it), then opens a
-- buggy Python file (SHAPE_LINT_FILE) as a user would, and writes what arrived to
-- SHAPE_LINT_OUT as JSON: the diagnostics, and the clients attached to the buffer.
local out = {}
local ok, err = pcall(function()
  vim.cmd("filetype on")
  dofile(vim.env.SHAPE_LINT_SNIPPET)
  vim.cmd("edit " .. vim.fn.fnameescape(vim.env.SHAPE_LINT_FILE))
  local bufnr = vim.api.nvim_get_current_buf()
  out.filetype = vim.bo[bufnr].filetype
  if not vim.wait(60000, function() return #vim.diagnostic.get(bufnr) > 0 end, 20) then
    out.error = "no diagnostic arrived"
  end
  out.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(out.diagnostics, { message = d.message, lnum = d.lnum, source = d.source })
  end
  out.clients = {}
  for _, c in pairs(vim.lsp.buf_get_clients(bufnr)) do table.insert(out.clients, c.name) end
end)
if not ok then out.error = tostring(err) end
local f = io.open(vim.env.SHAPE_LINT_OUT, "w")
f:write(vim.fn.json_encode(out))
f:close()
vim.cmd("qall!")
