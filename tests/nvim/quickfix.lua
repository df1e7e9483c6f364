-- Neovim (0.7 and later) as the LSP client of `shape-lint server`, run headless by
-- tests/test_server_nvim.py: open a buggy file, read the diagnostic, ask for code actions,
-- apply the chosen one, and wait for the diagnostic to clear. The outcome goes to a JSON file.
--
-- Environment: SHAPE_LINT_CMD (the server command, JSON list), SHAPE_LINT_FILE (the file),
-- SHAPE_LINT_OUT (where the JSON goes), SHAPE_LINT_ACTION ("preferred": the finding's own quick
-- fix; "noqa": the "Add `# noqa`" action).

local out = { steps = {} }
local function finish()
  local f = io.open(vim.env.SHAPE_LINT_OUT, "w")
  f:write(vim.fn.json_encode(out))
  f:close()
  vim.cmd("qall!")
end

local function step(name) table.insert(out.steps, name) end

local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(vim.env.SHAPE_LINT_FILE))
  local bufnr = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start_client({
    name = "shape-lint",
    cmd = vim.fn.json_decode(vim.env.SHAPE_LINT_CMD),
    root_dir = vim.fn.fnamemodify(vim.env.SHAPE_LINT_FILE, ":p:h"),
  })
  vim.lsp.buf_attach_client(bufnr, client_id)
  step("attached")

  if not vim.wait(60000, function() return #vim.diagnostic.get(bufnr) > 0 end, 20) then
    out.error = "no diagnostic arrived"
    return
  end
  local d = vim.diagnostic.get(bufnr)[1]
  out.diagnostic = { message = d.message, lnum = d.lnum, col = d.col, source = d.source,
                     code = (d.user_data and d.user_data.lsp and d.user_data.lsp.code) or d.code }
  step("diagnostic")

  local params = vim.lsp.util.make_range_params()
  params.range = { start = { line = d.lnum, character = d.col },
                   ["end"] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col } }
  params.context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(bufnr, d.lnum) }
  local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", params, 30000) or {}
  local actions = {}
  for _, resp in pairs(responses) do
    for _, a in ipairs(resp.result or {}) do table.insert(actions, a) end
  end
  out.titles = {}
  local chosen
  for _, a in ipairs(actions) do
    table.insert(out.titles, a.title)
    local want = vim.env.SHAPE_LINT_ACTION
    if (want == "preferred" and a.isPreferred) or (want == "noqa" and a.title:find("noqa", 1, true)) then
      chosen = chosen or a
    end
  end
  if not chosen then
    out.error = "no such code action"
    return
  end
  out.applied = chosen.title
  local client = vim.lsp.get_client_by_id(client_id)
  vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding)
  step("applied")

  out.cleared = vim.wait(60000, function() return #vim.diagnostic.get(bufnr) == 0 end, 20)
  out.lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  step("done")
end)
if not ok then out.error = tostring(err) end
finish()
