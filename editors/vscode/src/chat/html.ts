/**
 * The conversation view's page. Its Content Security Policy allows nothing remote: only the
 * extension's own script (by nonce) and styles; colours are the theme's CSS variables.
 * Pure, so the policy is unit-tested.
 */

export function nonce(): string {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let out = "";
  for (let i = 0; i < 32; i++) out += chars[Math.floor(Math.random() * chars.length)];
  return out;
}

export function csp(cspSource: string, n: string): string {
  return [
    "default-src 'none'",
    `style-src ${cspSource} 'nonce-${n}'`,
    `script-src 'nonce-${n}'`,
    `img-src ${cspSource} data:`,
    `font-src ${cspSource}`,
  ].join("; ");
}

const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground);
  background: var(--vscode-sideBar-background); margin: 0; padding: 0; display: flex; flex-direction: column; height: 100vh; }
#head { padding: 4px 8px; border-bottom: 1px solid var(--vscode-panel-border); }
#log { flex: 1; overflow-y: auto; padding: 6px 8px; }
.turn { border-bottom: 1px solid var(--vscode-panel-border); padding: 6px 0; }
.prompt { font-weight: 600; white-space: pre-wrap; }
.turn > button.rewind { float: right; font-size: 0.85em; padding: 0 6px; opacity: 0.6; }
.turn > button.rewind:hover, .turn > button.rewind:focus { opacity: 1; }
.meta { color: var(--vscode-descriptionForeground); font-size: 0.9em; }
.text { margin: 4px 0; overflow-wrap: anywhere; }
.markdown > :first-child { margin-top: 0; }
.markdown > :last-child { margin-bottom: 0; }
.markdown p, .markdown ul, .markdown ol { margin: 4px 0; }
.markdown h1, .markdown h2, .markdown h3, .markdown h4 { margin: 8px 0 4px; font-weight: 600; }
.markdown h1 { font-size: 1.3em; } .markdown h2 { font-size: 1.2em; } .markdown h3 { font-size: 1.1em; }
.markdown code { font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); }
.markdown :not(pre) > code { background: var(--vscode-textCodeBlock-background); padding: 0 3px; border-radius: 3px; }
.markdown blockquote { margin: 4px 0; padding-left: 8px; border-left: 3px solid var(--vscode-textBlockQuote-border); color: var(--vscode-textBlockQuote-foreground, inherit); }
.markdown table { border-collapse: collapse; } .markdown th, .markdown td { border: 1px solid var(--vscode-panel-border); padding: 2px 6px; }
a.link, a.file { color: var(--vscode-textLink-foreground); cursor: pointer; text-decoration: none; }
a.link:hover, a.file:hover { color: var(--vscode-textLink-activeForeground); text-decoration: underline; }
a.link:focus, a.file:focus { outline: 1px solid var(--vscode-focusBorder); }
.image { color: var(--vscode-descriptionForeground); }
.codeblock { margin: 4px 0; border: 1px solid var(--vscode-panel-border); }
.codeblock pre { margin: 0; white-space: pre; }
/* VS Code's default webview style gives every code element the preformat colours (white on a
   high-contrast theme): a block's code is painted by the block and the token colours alone */
pre code { background: none; color: var(--vscode-foreground); padding: 0; border-radius: 0; }
.codebar { display: flex; gap: 2px; align-items: center; padding: 0 0 0 6px; background: var(--vscode-editorGroupHeader-tabsBackground, var(--vscode-sideBar-background)); }
.codebar .lang { flex: 1; color: var(--vscode-descriptionForeground); font-size: 0.9em; }
.codebar button { padding: 1px 6px; margin: 1px; }
/* code colours from the theme's debug-value and symbol colours (defined for light, dark and
   high contrast): keywords as Default Dark+/Light+ show them, strings, numbers, names */
.hljs-keyword, .hljs-selector-tag, .hljs-tag, .hljs-name, .hljs-built_in, .hljs-literal { color: var(--vscode-debugTokenExpression-boolean, var(--vscode-foreground)); }
.hljs-string, .hljs-regexp, .hljs-char.escape_, .hljs-symbol { color: var(--vscode-debugTokenExpression-string, var(--vscode-foreground)); }
.hljs-number { color: var(--vscode-debugTokenExpression-number, var(--vscode-foreground)); }
.hljs-comment, .hljs-quote { color: var(--vscode-descriptionForeground); font-style: italic; }
.hljs-title, .hljs-title.function_, .hljs-section { color: var(--vscode-symbolIcon-functionForeground, var(--vscode-foreground)); }
.hljs-title.class_, .hljs-type { color: var(--vscode-textLink-foreground, var(--vscode-foreground)); }
.hljs-variable, .hljs-params, .hljs-attr, .hljs-attribute, .hljs-property { color: var(--vscode-debugTokenExpression-name, var(--vscode-foreground)); }
.hljs-meta, .hljs-doctag { color: var(--vscode-symbolIcon-constantForeground, var(--vscode-foreground)); }
.hljs-addition { color: var(--vscode-gitDecoration-addedResourceForeground, var(--vscode-foreground)); }
.hljs-deletion { color: var(--vscode-gitDecoration-deletedResourceForeground, var(--vscode-foreground)); }
.hljs-emphasis { font-style: italic; } .hljs-strong { font-weight: bold; }
pre.diff { white-space: pre; padding: 2px 0; font-family: var(--vscode-editor-font-family); }
pre.diff > div { padding: 0 4px; }
pre.diff .add { background: var(--vscode-diffEditor-insertedLineBackground, var(--vscode-diffEditor-insertedTextBackground)); }
pre.diff .del { background: var(--vscode-diffEditor-removedLineBackground, var(--vscode-diffEditor-removedTextBackground)); }
pre.diff .ctx { color: var(--vscode-descriptionForeground); }
.cardhead { display: flex; gap: 4px; align-items: center; flex-wrap: wrap; margin: 2px 0; }
.cardhead .counts, .tool .subject { color: var(--vscode-descriptionForeground); }
.exit { color: var(--vscode-descriptionForeground); } .exit.bad { color: var(--vscode-errorForeground); }
.tool .sandbox { color: var(--vscode-descriptionForeground); font-size: 0.9em; margin-left: 6px; }
.tool .sandbox::before { content: "· "; } .tool .sandbox.bad { color: var(--vscode-editorWarning-foreground); }
.filekind { color: var(--vscode-descriptionForeground); font-style: italic; }
details.outbox > summary { color: var(--vscode-descriptionForeground); cursor: pointer; }
.hits { font-family: var(--vscode-editor-font-family); font-size: 0.95em; }
.hit-text { color: var(--vscode-descriptionForeground); white-space: pre; }
details.tool { margin: 3px 0; border-left: 2px solid var(--vscode-textLink-foreground); padding-left: 6px; }
details.tool.refused, details.tool.failed { border-left-color: var(--vscode-errorForeground); }
.tool .status { color: var(--vscode-descriptionForeground); }
.tool.refused .status, .tool.failed .status { color: var(--vscode-errorForeground); }
pre { background: var(--vscode-textCodeBlock-background); padding: 4px; white-space: pre-wrap; overflow-x: auto; margin: 2px 0;
  font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); }
.notice { color: var(--vscode-editorWarning-foreground); }
.outcome { color: var(--vscode-descriptionForeground); font-style: italic; }
.outcome.blocked, .outcome.failed { color: var(--vscode-errorForeground); font-style: normal; }
.approval { border: 1px solid var(--vscode-focusBorder); padding: 6px; margin: 6px 8px; }
.approval .reason { font-weight: 600; }
.approval .actions { display: flex; gap: 4px; align-items: center; flex-wrap: wrap; }
.approval select.more { color: var(--vscode-dropdown-foreground); background: var(--vscode-dropdown-background); border: 1px solid var(--vscode-dropdown-border, transparent); padding: 2px; }
.approval details.approval-details > summary { color: var(--vscode-descriptionForeground); cursor: pointer; }
.approval dl { margin: 2px 0 0 12px; }
.approval .fact { display: flex; gap: 6px; }
.approval dt { color: var(--vscode-descriptionForeground); min-width: 5em; }
.approval dd { margin: 0; }
.decision { color: var(--vscode-descriptionForeground); font-style: italic; margin: 2px 0; }
button { color: var(--vscode-button-foreground); background: var(--vscode-button-background); border: none; padding: 3px 8px; margin: 2px; cursor: pointer; }
button.secondary { color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); }
#input { border-top: 1px solid var(--vscode-panel-border); padding: 6px 8px; }
#prompt { width: 100%; box-sizing: border-box; min-height: 3em; color: var(--vscode-input-foreground);
  background: var(--vscode-input-background); border: 1px solid var(--vscode-input-border, transparent); font-family: inherit; }
.mentions { max-height: 12em; overflow-y: auto; border: 1px solid var(--vscode-focusBorder); margin-bottom: 2px;
  background: var(--vscode-editorSuggestWidget-background, var(--vscode-input-background)); }
.mention { padding: 1px 6px; cursor: pointer; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.mention.selected { color: var(--vscode-list-activeSelectionForeground); background: var(--vscode-list-activeSelectionBackground); }
.mention .detail { color: var(--vscode-descriptionForeground); }
select { color: var(--vscode-dropdown-foreground); background: var(--vscode-dropdown-background); border: 1px solid var(--vscode-dropdown-border); }
.row { display: flex; gap: 4px; align-items: center; flex-wrap: wrap; margin-top: 4px; }
/* the "↓ New messages" pill floats over the log's lower edge, above the send box */
#newmessages { position: fixed; left: 50%; transform: translateX(-50%); z-index: 2; border-radius: 10px;
  padding: 2px 10px; box-shadow: 0 1px 4px var(--vscode-widget-shadow, rgba(0, 0, 0, 0.4)); }
#newmessages[hidden] { display: none; }
/* the controls stay on one line: the pickers shrink, Send and Stop keep their size */
.row.controls { flex-wrap: nowrap; }
.row.controls select { flex: 1 1 0; min-width: 0; max-width: 12em; text-overflow: ellipsis; }
.row.controls button { flex: none; white-space: nowrap; }
.welcome { padding: 4px 0 8px; }
.welcome h3 { margin: 2px 0 6px; font-size: 1.1em; }
.welcome .facts { color: var(--vscode-descriptionForeground); margin-bottom: 4px; }
.welcome .trust.untrusted { color: var(--vscode-editorWarning-foreground); }
.welcome-title { font-weight: 600; margin: 8px 0 2px; }
.welcome dl { margin: 0; display: grid; grid-template-columns: max-content 1fr; gap: 1px 8px; }
.welcome dt { font-weight: 600; } .welcome dd { margin: 0; color: var(--vscode-descriptionForeground); }
.welcome button.example { display: block; text-align: left; width: 100%; margin: 3px 0; white-space: normal; }
details.tool > button.retry { display: block; margin: 4px 0; }
#stop:disabled { opacity: 0.45; cursor: default; }
#stop.running { color: var(--vscode-button-foreground); background: var(--vscode-button-background); font-weight: 600;
  outline: 1px solid var(--vscode-focusBorder); }
/* a code action's turn: the file:lines it is about and its selected text, under the prompt */
.chip { display: flex; gap: 6px; align-items: baseline; margin: 2px 0; font-size: 0.9em; min-width: 0; }
.chip[hidden] { display: none; }
.chip .selected { color: var(--vscode-descriptionForeground); white-space: nowrap; overflow: hidden; text-overflow: ellipsis;
  font-family: var(--vscode-editor-font-family); }
`;

export function chatHtml(cspSource: string, scriptUri: string, n: string = nonce()): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp(cspSource, n)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>ndomo</title>
<style nonce="${n}">${STYLE}</style>
</head>
<body>
<div id="head" class="meta"></div>
<div id="log" aria-live="polite"></div>
<div id="approvals"></div>
<div id="input">
  <textarea id="prompt" placeholder="Ask ndomo… (Ctrl+Enter sends; @ mentions a file, symbol, @problems or @plan; /help for commands)"></textarea>
  <div id="note" class="notice" role="status"></div>
  <div class="row controls">
    <select id="agent" title="agent"></select>
    <select id="mode" title="mode"></select>
    <button id="send">Send</button>
    <button id="stop" class="secondary">Stop</button>
  </div>
</div>
<script nonce="${n}" src="${scriptUri}"></script>
</body>
</html>`;
}
