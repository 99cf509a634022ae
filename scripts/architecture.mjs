// The drawing of src/'s imports, and its check: `npm run architecture`.
// Cruises src/ (and sees what it imports from tools/, bench/ and test/) with dependency-cruiser and the rules in .dependency-cruiser.cjs, prints
// the figures (rooms, floors, arrows, arrows running back up, circles), every rule
// broken and every file or folder the rules name that does not exist (namedPaths.cjs),
// and exits 1 when a rule is broken or names something missing. `--json` prints the figures as JSON (the test reads them);
// `--root DIR` checks the tree in DIR instead of this checkout (the test's own small trees that break a rule).
import { createRequire } from 'node:module';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { cruise } from 'dependency-cruiser';

const require = createRequire(import.meta.url);
const config = require('../.dependency-cruiser.cjs');
const { missingNames } = require('./namedPaths.cjs');
const rootAt = process.argv.indexOf('--root');
if (rootAt !== -1) process.chdir(process.argv[rootAt + 1]);
const floors = config.FLOORS.map((floor, level) => ({ ...floor, level, pattern: new RegExp(floor.path) }));
const floorOf = (file) => floors.find((floor) => floor.pattern.test(file));

const { output } = await cruise(['src'], { validate: true, ruleSet: { forbidden: config.forbidden }, ...config.options }, undefined, {
  tsConfig: require('typescript').readConfigFile('tsconfig.json', require('typescript').sys.readFile).config,
});

const modules = output.modules.filter((module) => module.source.startsWith('src/'));
const arrows = [];
for (const module of modules) {
  for (const dependency of module.dependencies) if (dependency.resolved.startsWith('src/')) arrows.push({ from: module.source, to: dependency.resolved, circular: dependency.circular });
}
const upward = arrows.filter(({ from, to }) => (floorOf(from)?.level ?? -1) < (floorOf(to)?.level ?? -1));
const circles = new Set();
for (const module of modules) {
  for (const dependency of module.dependencies) {
    if (!dependency.circular || !dependency.cycle) continue;
    const cycle = dependency.cycle.map((step) => (typeof step === 'string' ? step : step.name));
    circles.add([...cycle].sort().join(' '));
  }
}
const rooms = readdirSync('src', { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
const violations = output.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
const unplaced = modules.map((module) => module.source).filter((file) => !floorOf(file));
// The rules name files of src/ and of the folders beside it that src/ must not import (tools/, bench/, test/).
const sourceFiles = ['src', 'tools', 'bench', 'test'].flatMap((folder) =>
  readdirSync(folder, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).map((entry) => path.relative('.', path.join(entry.parentPath, entry.name)).split(path.sep).join('/')),
);
const namedPatterns = [
  ...config.FLOORS.map((floor) => floor.path),
  ...config.forbidden.flatMap((rule) => [rule.from.path, rule.from.pathNot, rule.to.path, rule.to.pathNot]),
  config.options.exclude.path,
].filter((pattern) => typeof pattern === 'string');
const missing = [...new Set(missingNames(namedPatterns, sourceFiles))];
const figures = {
  rooms: rooms.length,
  roomNames: rooms,
  floors: floors.length,
  modules: modules.length,
  arrows: arrows.length,
  upwardArrows: upward.map(({ from, to }) => `${from} -> ${to}`),
  circles: [...circles],
  violations,
  unplaced,
  missing,
};

if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(figures)}\n`);
else {
  process.stdout.write(`rooms (folders under src/): ${figures.rooms} (${rooms.join(', ')})\n`);
  process.stdout.write(`floors: ${figures.floors} (${floors.map((floor) => floor.name).join(' < ')})\n`);
  process.stdout.write(`modules: ${figures.modules}, arrows (imports): ${figures.arrows}\n`);
  process.stdout.write(`arrows running back up: ${upward.length}\n${upward.map(({ from, to }) => `  ${from} -> ${to}\n`).join('')}`);
  process.stdout.write(`circles: ${circles.size}\n${[...circles].map((circle) => `  ${circle}\n`).join('')}`);
  if (unplaced.length > 0) process.stdout.write(`modules on no floor: ${unplaced.join(', ')}\n`);
  process.stdout.write(`rules broken: ${violations.length}\n${violations.map((line) => `  ${line}\n`).join('')}`);
  process.stdout.write(`named by a rule but missing: ${missing.length}\n${missing.map((named) => `  ${named}\n`).join('')}`);
}
process.exitCode = violations.length > 0 || unplaced.length > 0 || missing.length > 0 ? 1 : 0;
