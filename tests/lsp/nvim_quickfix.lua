-- Headless Neovim 0.11 as an independent LSP client: open a model file, wait for Adopter's
-- diagnostics, hover a class, apply the preferred quick fix for one rule, wait for re-analysis,
-- and write what happened as JSON. Usage: nvim --headless --clean -l nvim_quickfix.lua FILE OUT PYTHON RULE
local file, out, python, rule = arg[1], arg[2], arg[3], arg[4]
local result = { steps = {} }
local timeout = 120000

local function finish()
  vim.fn.writefile({ vim.json.encode(result) }, out)
  for _, c in ipairs(vim.lsp.get_clients()) do
    c:stop()
  end
  vim.wait(5000, function() return #vim.lsp.get_clients() == 0 end, 50)
  vim.cmd("qa!")
end

local function step(name) table.insert(result.steps, name) end

local function diagnostics_for(bufnr, code)
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.code == code then table.insert(found, d) end
  end
  table.sort(found, function(a, b) return a.lnum < b.lnum end)
  return found
end

vim.cmd("edit " .. vim.fn.fnameescape(file))
local bufnr = vim.api.nvim_get_current_buf()
local client_id = vim.lsp.start({
  name = "adopter",
  cmd = { python, "-m", "adopter", "lsp" },
  root_dir = vim.fn.fnamemodify(file, ":h"),
  init_options = { debounce_ms = 0 },
}, { bufnr = bufnr })
local client = vim.lsp.get_client_by_id(client_id)
step("started")

if not vim.wait(timeout, function() return #diagnostics_for(bufnr, rule) > 0 end, 20) then
  result.error = "no " .. rule .. " diagnostic"
  result.all_codes = vim.tbl_map(function(d) return d.code end, vim.diagnostic.get(bufnr))
  return finish()
end
local before = diagnostics_for(bufnr, rule)
result.count_before = #before
result.codes = vim.tbl_map(function(d) return d.code end, vim.diagnostic.get(bufnr))
local target = before[1]
result.line = target.lnum
local lsp_diag = target.user_data.lsp
result.source = lsp_diag.source
result.href = lsp_diag.codeDescription and lsp_diag.codeDescription.href
step("diagnostics")

-- Hover on the name of the class that holds the finding.
vim.api.nvim_win_set_cursor(0, { target.lnum + 1, 0 })
local class_line = vim.fn.search("^class ", "bnW")
local hover = client:request_sync("textDocument/hover", {
  textDocument = { uri = vim.uri_from_bufnr(bufnr) },
  position = { line = class_line - 1, character = 7 },
}, timeout, bufnr)
result.hover = hover and hover.result and hover.result.contents.value or vim.NIL
step("hover")

local actions = client:request_sync("textDocument/codeAction", {
  textDocument = { uri = vim.uri_from_bufnr(bufnr) },
  range = lsp_diag.range,
  context = { diagnostics = { lsp_diag }, only = { "quickfix" } },
}, timeout, bufnr)
local chosen
for _, action in ipairs((actions and actions.result) or {}) do
  if action.isPreferred then chosen = action end
end
if not chosen then
  result.error = "no preferred quick fix"
  return finish()
end
result.action = chosen.title
if not chosen.edit then
  local resolved = client:request_sync("codeAction/resolve", chosen, timeout, bufnr)
  chosen = resolved and resolved.result or chosen
end
if not chosen.edit then
  result.error = "resolve gave no edit"
  return finish()
end
vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding)
step("applied")

-- Neovim sends the edit as incremental didChange; wait until the server re-analysed it.
vim.wait(timeout, function() return #diagnostics_for(bufnr, rule) < #before end, 20)
result.count_after = #diagnostics_for(bufnr, rule)
result.text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n"
step("reanalysed")
finish()
