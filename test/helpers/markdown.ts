import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The repository's root, for tests that read its documents. */
export const repoRoot = path.resolve(__dirname, '../..');

/** The manual: the README and every page of docs/, as paths relative to the root. */
export function manualPages(): string[] {
  return ['README.md', ...readdirSync(path.join(repoRoot, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
}

/** A document's text, relative to the root. */
export function readDoc(file: string): string {
  return readFileSync(path.join(repoRoot, file), 'utf8');
}

/** The text without fenced code blocks (their `#` lines are no headings, their brackets no links). */
export function withoutCode(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '');
}

/**
 * GitHub's anchor for a heading: lower case, punctuation dropped (hyphens and
 * underscores kept), spaces as hyphens; a repeated heading gets `-1`, `-2`, ...
 */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of withoutCode(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = match[1]!
      .toLowerCase()
      .replace(/<[^>]+>/g, '')
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  for (const match of text.matchAll(/<a id="([^"]+)"><\/a>/g)) anchors.add(match[1]!);
  return anchors;
}

/** The text of one section: from its heading to the next heading of the same or a higher level. */
export function section(text: string, heading: string): string {
  const lines = text.split('\n');
  let fence = false;
  let start = -1;
  let level = 0;
  for (const [index, line] of lines.entries()) {
    if (line.startsWith('```')) fence = !fence;
    const match = fence ? null : /^(#{1,6})\s+(.+?)\s*$/.exec(line);
    if (!match) continue;
    if (start < 0 && match[2] === heading) {
      start = index;
      level = match[1]!.length;
    } else if (start >= 0 && match[1]!.length <= level) {
      return lines.slice(start, index).join('\n');
    }
  }
  if (start < 0) throw new Error(`no heading "${heading}"`);
  return lines.slice(start).join('\n');
}

/** The `(target)` of every inline markdown link outside code. */
export function links(text: string): string[] {
  return [...withoutCode(text).matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!);
}

/** Every markdown file of the README, docs/ and examples/, at any depth, relative to the root. */
export function markdownFiles(): string[] {
  const under = (dir: string): string[] =>
    readdirSync(path.join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
      const relative = `${dir}/${entry.name}`;
      if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === '__generated__' ? [] : under(relative);
      return entry.name.endsWith('.md') ? [relative] : [];
    });
  return ['README.md', ...under('docs'), ...under('examples')];
}

/** The fenced blocks of a shell language (sh, bash, shell, console, zsh), as their text. */
export function shellBlocks(text: string): string[] {
  return [...text.matchAll(/^```(?:sh|bash|shell|console|zsh)[^\n]*\n([\s\S]*?)^```/gm)].map((match) => match[1]!);
}

/** The text of every inline code span outside fenced blocks. */
export function inlineCode(text: string): string[] {
  return [...withoutCode(text).matchAll(/(`+)([^`][\s\S]*?)\1/g)].map((match) => match[2]!);
}

/**
 * The shell commands of a block: continuation lines (`\` at the end) joined, comments
 * and blank lines dropped; each command as the shell reads it.
 */
export function shellCommands(block: string): string[] {
  return block
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}
