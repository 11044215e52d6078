// The operator's Markdown as DOM nodes: headings, paragraphs, lists, fenced code, inline code,
// bold, italics and http(s) links. Every piece of text is set as text (never parsed as HTML), and a
// link is kept only when its URL is http(s): nothing in the docs can run as script or style.
import { h } from "../dom";

type Inline = Array<Node | string>;

/** Inline Markdown: `code`, **bold**, *italics*, [text](http(s) URL). */
function inline(text: string): Inline {
  const out: Inline = [];
  const pattern = /`([^`]+)`|\*\*([^*]+)\*\*|\*([^*]+)\*|\[([^\]]+)\]\(([^)\s]+)\)/g;
  let last = 0;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[1] !== undefined) out.push(h("code", {}, m[1]));
    else if (m[2] !== undefined) out.push(h("strong", {}, m[2]));
    else if (m[3] !== undefined) out.push(h("em", {}, m[3]));
    else out.push(safeUrl(m[5]!) ? h("a", { href: m[5]!, rel: "noopener noreferrer", target: "_blank" }, m[4]!) : m[4]!);
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

function safeUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === "https:" || u.protocol === "http:";
  } catch {
    return false;
  }
}

/** The blocks of a Markdown text, as elements (headings start at h2: the page has its h1). */
export function markdown(source: string): HTMLElement[] {
  const blocks: HTMLElement[] = [];
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  let para: string[] = [];
  let list: HTMLElement | undefined;
  const flush = () => {
    if (para.length > 0) blocks.push(h("p", {}, inline(para.join(" "))));
    para = [];
    list = undefined;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith("```")) {
      flush();
      const code: string[] = [];
      for (i++; i < lines.length && !lines[i]!.startsWith("```"); i++) code.push(lines[i]!);
      blocks.push(h("pre", {}, h("code", {}, code.join("\n"))));
      continue;
    }
    const heading = /^(#{1,4})\s+(.*)$/.exec(line);
    const item = /^\s*[-*]\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      const tag = (["h2", "h3", "h4", "h4"] as const)[heading[1]!.length - 1]!;
      blocks.push(h(tag, {}, inline(heading[2]!)));
    } else if (item) {
      if (para.length > 0) flush();
      if (!list) blocks.push((list = h("ul")));
      list.append(h("li", {}, inline(item[1]!)));
    } else if (line.trim() === "") flush();
    else {
      list = undefined;
      para.push(line.trim());
    }
  }
  flush();
  return blocks;
}
