// The file and folder names the path patterns of .dependency-cruiser.cjs name, checked
// against src/: a rule whose pattern names a file that does not exist checks nothing
// for it, and says so to no one. Used by scripts/architecture.mjs (the figure
// `missing`) and test/unit/architecture.test.ts.
'use strict';

/** A group of plain names, `(a|b|c)` or `(?:a|b|c)`: word characters, dots (escaped or not), slashes and dashes. */
const NAME_GROUP = /\((?:\?:)?([\w./\\-]+(?:\|[\w./\\-]+)+)\)/;

/** Splits `pattern` at its top-level `|` (outside groups and character classes). */
function branches(pattern) {
  const out = [];
  let depth = 0;
  let inClass = false;
  let start = 0;
  for (let i = 0; i < pattern.length; i += 1) {
    const c = pattern[i];
    if (c === '\\') i += 1;
    else if (inClass) inClass = c !== ']';
    else if (c === '[') inClass = true;
    else if (c === '(') depth += 1;
    else if (c === ')') depth -= 1;
    else if (c === '|' && depth === 0) {
      out.push(pattern.slice(start, i));
      start = i + 1;
    }
  }
  out.push(pattern.slice(start));
  return out;
}

/** The end of the group opened at `open` (the index of its `(`). */
function closing(pattern, open) {
  let depth = 0;
  for (let i = open; i < pattern.length; i += 1) {
    if (pattern[i] === '\\') i += 1;
    else if (pattern[i] === '(') depth += 1;
    else if (pattern[i] === ')' && (depth -= 1) === 0) return i;
  }
  return pattern.length;
}

/**
 * One pattern per name `pattern` names, each of which should match some file: every
 * alternative of a group of names in turn, and what a negative lookahead exempts
 * (`^src/(?!upstream/)` names `^src/upstream/`) as a pattern of its own.
 */
function namedAlternatives(pattern) {
  const out = [];
  for (let branch of branches(pattern)) {
    let look;
    while ((look = branch.indexOf('(?!')) !== -1) {
      const end = closing(branch, look);
      const prefix = branch.slice(0, look).replace(/\(\?!.*?\)/g, '');
      out.push(...namedAlternatives(prefix + branch.slice(look + 3, end)));
      branch = branch.slice(0, look) + branch.slice(end + 1);
    }
    const group = NAME_GROUP.exec(branch);
    if (!group) {
      out.push(branch);
      continue;
    }
    for (const name of group[1].split('|')) out.push(...namedAlternatives(branch.slice(0, group.index) + name + branch.slice(group.index + group[0].length)));
  }
  return [...new Set(out)];
}

/** The names among `patterns` that match none of `files` (paths like `src/upstream/client.ts`). */
function missingNames(patterns, files) {
  return patterns.flatMap(namedAlternatives).filter((named) => {
    const regex = new RegExp(named);
    return !files.some((file) => regex.test(file));
  });
}

module.exports = { namedAlternatives, missingNames };
