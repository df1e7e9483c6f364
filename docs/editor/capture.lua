-- Renders what `shape-lint server` shows in Neovim 0.7+ for docs/editor/capture.sh: the
-- diagnostic, inlay hints (drawn as virtual text: Neovim before 0.10 has no inlay-hint UI),
-- and the hover over a name. Runs inside tmux; capture.sh saves the screen as text.
local bufnr = vim.api.nvim_get_current_buf()
local client_id = vim.lsp.start_client({
  name = "shape-lint",
  cmd = vim.fn.json_decode(vim.env.SHAPE_LINT_CMD),
  root_dir = vim.fn.expand("%:p:h"),
})
vim.lsp.buf_attach_client(bufnr, client_id)
vim.wait(60000, function() return #vim.diagnostic.get(bufnr) > 0 end, 20)
vim.diagnostic.config({ virtual_text = { prefix = "●" }, signs = true })

local ns = vim.api.nvim_create_namespace("shape-lint-hints")
local params = { textDocument = vim.lsp.util.make_text_document_params(bufnr),
                 range = { start = { line = 0, character = 0 }, ["end"] = { line = vim.api.nvim_buf_line_count(bufnr), character = 0 } } }
local resp = vim.lsp.buf_request_sync(bufnr, "textDocument/inlayHint", params, 30000) or {}
for _, r in pairs(resp) do
  for _, h in ipairs(r.result or {}) do
    vim.api.nvim_buf_set_extmark(bufnr, ns, h.position.line, 0, { virt_text = { { "  " .. h.label:gsub("^: ", ""), "Comment" } }, virt_text_pos = "eol" })
  end
end

local row, col = tonumber(vim.env.HOVER_LINE), tonumber(vim.env.HOVER_COL)
vim.api.nvim_win_set_cursor(0, { row, col })
local hover = vim.lsp.buf_request_sync(bufnr, "textDocument/hover", vim.lsp.util.make_position_params(), 30000) or {}
for _, r in pairs(hover) do
  if r.result then
    local lines = vim.lsp.util.convert_input_to_markdown_lines(r.result.contents)
    vim.lsp.util.open_floating_preview(lines, "markdown", { border = "single" })
  end
end
-- quieter colours than Neovim 0.7's defaults (a pink float, a grey sign column) for the image
vim.cmd("hi NormalFloat ctermbg=236 ctermfg=252 | hi FloatBorder ctermbg=236 ctermfg=244 | hi SignColumn ctermbg=NONE")
vim.cmd("redraw!")
vim.fn.writefile({ "ready" }, vim.env.READY_FILE)
