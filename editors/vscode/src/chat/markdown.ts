/**
 * Answers as markdown, for the conversation view: markdown-it with raw HTML off (a model's
 * `<img onerror>` or `<script>` stays text), links kept only when they go to the web (http,
 * https) or to a workspace file — the extension opens both itself, so an anchor carries its
 * target in `data-href`, never in `href` — images never loaded (their alt text is shown), and
 * code blocks highlighted by highlight.js with a bar of actions (copy, insert at cursor).
 * Pure: no DOM, no `vscode`, so the rules are unit-tested under node.
 */

import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import MarkdownIt from "markdown-it";

const LANGUAGES = { bash, c, cpp, css, diff, go, ini, java, javascript, json, markdown, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, lang] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, lang);

/** Where a link goes, as the extension opens it; null: not a link we follow. */
export type LinkTarget = { kind: "web"; url: string } | { kind: "file"; path: string; line?: number };

const SCHEME = /^([a-z][a-z0-9+.-]*):/i;

/**
 * The link policy, shared by the webview (what becomes a link) and the extension (what it
 * opens; it checks again, and keeps file paths inside the workspace): http(s) URLs, and
 * paths without a scheme (or `file:` URIs), with a line as `#L12`, `#12` or `:12`.
 */
export function linkTarget(href: string): LinkTarget | null {
  const raw = href.trim();
  if (!raw || raw.startsWith("#") || /[\u0000-\u001f]/.test(raw)) return null;
  // "calc.py:7" is a path and a line, not a scheme
  const scheme = /^[^:/]+:\d+(?::\d+)?$/.test(raw) ? undefined : SCHEME.exec(raw)?.[1]?.toLowerCase();
  if (scheme === "http" || scheme === "https") {
    try {
      return { kind: "web", url: new URL(raw).href };
    } catch {
      return null;
    }
  }
  let path = raw;
  if (scheme === "file") {
    try {
      const u = new URL(raw);
      path = decodeURIComponent(u.pathname) + u.hash;
    } catch {
      return null;
    }
  } else if (scheme !== undefined && !/^[a-z]:[\\/]/i.test(raw)) {
    return null; // command:, javascript:, vscode:, data:, mailto: … (a Windows drive is a path)
  } else {
    try {
      path = decodeURIComponent(raw);
    } catch {
      // a literal % in a file name
    }
  }
  let line: number | undefined;
  const hash = /#L?(\d+)(?:[-:,].*)?$/i.exec(path);
  if (hash) {
    line = Number(hash[1]);
    path = path.slice(0, hash.index);
  } else {
    path = path.replace(/#.*$/, "");
    const colon = /:(\d+)(?::\d+)?$/.exec(path);
    if (colon) {
      line = Number(colon[1]);
      path = path.slice(0, colon.index);
    }
  }
  if (!path) return null;
  return line ? { kind: "file", path, line } : { kind: "file", path };
}

function escape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** `code` highlighted as HTML (every piece escaped by highlight.js); `lang` unknown: escaped only. */
export function highlight(code: string, lang: string): string {
  const name = lang.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
  if (name && hljs.getLanguage(name)) {
    try {
      return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
    } catch {
      // fall through: shown plain
    }
  }
  return escape(code);
}

/** The actions bar of a code block; the webview binds `data-action` by delegation (no inline handlers under the CSP). */
export function codeBar(lang: string): string {
  return (
    `<div class="codebar"><span class="lang">${escape(lang)}</span>` +
    `<button class="secondary" data-action="copy" title="Copy the code">Copy</button>` +
    `<button class="secondary" data-action="insert" title="Insert the code at the cursor of the active editor">Insert at cursor</button></div>`
  );
}

function makeRenderer(): InstanceType<typeof MarkdownIt> {
  const md = new MarkdownIt({ html: false, linkify: true, typographer: false, breaks: false });
  // only links written out (https://…, www.…): "calc.py" is a file name, not Paraguay's domain
  md.linkify.set({ fuzzyLink: false, fuzzyEmail: false });
  // the policy decides, not markdown-it's own list (which drops file: links, keeps others)
  md.validateLink = (url: string) => linkTarget(url) !== null;
  md.renderer.rules.link_open = (tokens, idx) => {
    const href = String(tokens[idx].attrGet("href") ?? "");
    const ok = linkTarget(href) !== null;
    open.push(ok);
    return ok ? `<a class="link" data-href="${escape(href)}" title="${escape(href)}" tabindex="0">` : "<span>";
  };
  md.renderer.rules.link_close = () => (open.pop() ? "</a>" : "</span>");
  md.renderer.rules.image = (tokens, idx) => {
    // never loaded: the strict CSP would block a remote image anyway; the alt text says what it was
    const t = tokens[idx];
    const alt = t.content || "image";
    return `<span class="image" title="${escape(String(t.attrGet("src") ?? ""))}">[image: ${escape(alt)}]</span>`;
  };
  md.renderer.rules.fence = (tokens, idx) => {
    const t = tokens[idx];
    const lang = t.info.trim().split(/\s+/)[0] ?? "";
    const cls = lang ? ` language-${escape(lang)}` : "";
    return `<div class="codeblock">${codeBar(lang)}<pre><code class="hljs${cls}">${highlight(t.content, lang)}</code></pre></div>\n`;
  };
  md.renderer.rules.code_block = (tokens, idx) =>
    `<div class="codeblock">${codeBar("")}<pre><code class="hljs">${escape(tokens[idx].content)}</code></pre></div>\n`;
  return md;
}

const open: boolean[] = []; // links do not nest: a stack pairs each close with its open
const renderer = makeRenderer();

/** An answer's markdown as HTML that holds no HTML of the model's own. */
export function renderMarkdown(text: string): string {
  open.length = 0;
  return renderer.render(text);
}
