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
.meta { color: var(--vscode-descriptionForeground); font-size: 0.9em; }
.text { white-space: pre-wrap; margin: 4px 0; }
details.tool { margin: 3px 0; border-left: 2px solid var(--vscode-textLink-foreground); padding-left: 6px; }
details.tool.refused, details.tool.failed { border-left-color: var(--vscode-errorForeground); }
.tool .status { color: var(--vscode-descriptionForeground); }
.tool.refused .status, .tool.failed .status { color: var(--vscode-errorForeground); }
pre { background: var(--vscode-textCodeBlock-background); padding: 4px; white-space: pre-wrap; overflow-x: auto; margin: 2px 0; }
.notice { color: var(--vscode-editorWarning-foreground); }
.outcome { color: var(--vscode-descriptionForeground); font-style: italic; }
.outcome.blocked, .outcome.failed { color: var(--vscode-errorForeground); font-style: normal; }
.approval { border: 1px solid var(--vscode-focusBorder); padding: 6px; margin: 6px 8px; }
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
  <div class="row">
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
