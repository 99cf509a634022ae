'use strict';
/**
 * Two conventions of the tests as ESLint rules (docs/development.md, "Conventions"):
 *
 * - `wfs/no-fixed-sleep`: no test waits a fixed time for something to have happened. On
 *   a loaded machine the thing may not have happened yet, and on a quiet one the wait is
 *   time lost: a test waits on the condition instead (test/helpers/waitFor.ts, whose own
 *   polling step is the mechanism and is left out). Timers that bound a wait (an abort, a
 *   kill after a grace) are not waits, and a duration passed in (`sleep(ms)`) is judged
 *   where it is written.
 * - `wfs/no-wall-clock-upper-bound`: no test bounds elapsed wall-clock time from above.
 *   On a loaded machine such a bound fails for no fault of the code, and speed is the
 *   benchmarks' subject (bench/README.md); a test waits on events, counters or an
 *   injected clock. Lower bounds (it did wait the second it was asked to) stay.
 *
 * Where time itself is the subject (a block that lasts its length, a deadline the router
 * enforces), a comment saying "time is the subject" on the line or just above it (two
 * lines for a sleep, one for a bound) keeps it. The rules are written here, in CommonJS,
 * so that eslint.config.mjs and the tests that check them (test/unit/lint.test.ts) load
 * the same module.
 */

const EXEMPT = /time is the subject/i;

/** The lines (1-based) on which a comment says time is the subject. */
function exemptLines(sourceCode) {
  const lines = new Set();
  for (const comment of sourceCode.getAllComments()) {
    comment.value.split('\n').forEach((text, index) => {
      if (EXEMPT.test(text)) lines.add(comment.loc.start.line + index);
    });
  }
  return lines;
}

/** Whether a comment says time is the subject on `node`'s lines or the `above` lines before them. */
function exempt(lines, node, above) {
  for (let line = node.loc.start.line - above; line <= node.loc.end.line; line += 1) if (lines.has(line)) return true;
  return false;
}

/** Every node under `node` (itself included), walked with the parser's visitor keys. */
function* nodesOf(node, visitorKeys) {
  if (!node || typeof node.type !== 'string') return;
  yield node;
  for (const key of visitorKeys[node.type] ?? []) {
    const child = node[key];
    if (Array.isArray(child)) for (const item of child) yield* nodesOf(item, visitorKeys);
    else yield* nodesOf(child, visitorKeys);
  }
}

/** The name a callee or an assignment target ends with: `sleep`, `x.sleep`, `this.during` → `during`. */
function lastName(node) {
  if (!node) return undefined;
  if (node.type === 'Identifier') return node.name;
  if (node.type === 'MemberExpression' && !node.computed && node.property.type === 'Identifier') return node.property.name;
  return undefined;
}

/** A duration written as a number: `50`, `2_100`, `1e3`, `2 * 1000`. */
function isLiteralDuration(node) {
  if (!node) return false;
  if (node.type === 'Literal') return typeof node.value === 'number';
  if (node.type === 'BinaryExpression' && ['+', '-', '*', '/'].includes(node.operator)) return isLiteralDuration(node.left) && isLiteralDuration(node.right);
  if (node.type === 'TSAsExpression' || node.type === 'TSNonNullExpression') return isLiteralDuration(node.expression);
  return false;
}

/** The names a timer's callback conventionally has when it ends a wait. */
const RESOLVER_NAMES = new Set(['resolve', 'r', 'done', 'res']);

/** Whether `identifier` is the resolve function of an enclosing `new Promise((resolve) => …)`. */
function isPromiseResolver(identifier) {
  for (let node = identifier.parent; node; node = node.parent) {
    const isFunction = node.type === 'ArrowFunctionExpression' || node.type === 'FunctionExpression';
    if (!isFunction) continue;
    const call = node.parent;
    const executor = call && call.type === 'NewExpression' && call.callee.type === 'Identifier' && call.callee.name === 'Promise' && call.arguments[0] === node;
    const first = node.params[0];
    if (executor && first && first.type === 'Identifier' && first.name === identifier.name) return true;
  }
  return false;
}

/** Whether a timer's callback ends a wait: `resolve`, or `() => resolve()`. */
function endsWait(callback) {
  if (!callback) return false;
  if (callback.type === 'Identifier') return RESOLVER_NAMES.has(callback.name) || isPromiseResolver(callback);
  if (callback.type === 'ArrowFunctionExpression' && callback.params.length === 0) {
    const body = callback.body.type === 'BlockStatement' && callback.body.body.length === 1 && callback.body.body[0].type === 'ExpressionStatement' ? callback.body.body[0].expression : callback.body;
    return body.type === 'CallExpression' && body.arguments.length === 0 && body.callee.type === 'Identifier' && endsWait(body.callee);
  }
  return false;
}

const noFixedSleep = {
  meta: {
    type: 'problem',
    docs: { description: 'Tests wait on a condition (test/helpers/waitFor.ts), not a fixed time, unless time is the subject' },
    messages: {
      fixed: 'A fixed wait of a literal duration: wait on the condition (test/helpers/waitFor.ts), or say on this line or the two above that time is the subject.',
    },
    schema: [],
  },
  create(context) {
    const sourceCode = context.sourceCode;
    let lines;
    /** Local names of `setTimeout` from node:timers/promises (`import { setTimeout as delay }`). */
    const promisedTimeouts = new Set();
    const report = (node) => {
      lines ??= exemptLines(sourceCode);
      if (!exempt(lines, node, 2)) context.report({ node, messageId: 'fixed' });
    };
    return {
      ImportDeclaration(node) {
        if (node.source.value !== 'node:timers/promises' && node.source.value !== 'timers/promises') return;
        for (const specifier of node.specifiers) {
          if (specifier.type === 'ImportSpecifier' && lastName(specifier.imported) === 'setTimeout') promisedTimeouts.add(specifier.local.name);
        }
      },
      CallExpression(node) {
        const name = lastName(node.callee);
        const [first, second] = node.arguments;
        // `await sleep(50)`
        if (name === 'sleep' && node.arguments.length === 1 && isLiteralDuration(first)) report(node);
        // `new Promise((resolve) => setTimeout(resolve, 100))`, `setTimeout(() => r(), 50)`
        else if (name === 'setTimeout' && isLiteralDuration(second) && endsWait(first)) report(node);
        // `await delay(100)` with `import { setTimeout as delay } from 'node:timers/promises'`
        else if (node.callee.type === 'Identifier' && promisedTimeouts.has(node.callee.name) && isLiteralDuration(first)) report(node);
      },
    };
  },
};

/** `Date.now() - started`, `performance.now() - t0`, or any use of `process.hrtime`. */
function isClockReading(node) {
  if (node.type === 'MemberExpression' && lastName(node) === 'hrtime' && node.object.type === 'Identifier' && node.object.name === 'process') return true;
  if (node.type !== 'BinaryExpression' || node.operator !== '-') return false;
  const left = node.left;
  return left.type === 'CallExpression' && left.arguments.length === 0 && left.callee.type === 'MemberExpression' && lastName(left.callee) === 'now' && left.callee.object.type === 'Identifier' && ['Date', 'performance'].includes(left.callee.object.name);
}

const UPPER = new Set(['toBeLessThan', 'toBeLessThanOrEqual']);
const LOWER = new Set(['toBeGreaterThan', 'toBeGreaterThanOrEqual']);

/**
 * The subject a matcher call bounds from above, if any: `x` in `expect(x).toBeLessThan(n)`
 * and in `expect(x).not.toBeGreaterThan(n)` (but not in `expect(x).not.toBeLessThan(n)`,
 * a lower bound).
 */
function boundedAbove(node) {
  if (node.callee.type !== 'MemberExpression') return undefined;
  const matcher = lastName(node.callee);
  let target = node.callee.object;
  const negated = target.type === 'MemberExpression' && lastName(target) === 'not';
  if (negated) target = target.object;
  if (!(negated ? LOWER : UPPER).has(matcher)) return undefined;
  if (target.type !== 'CallExpression' || target.callee.type !== 'Identifier' || target.callee.name !== 'expect') return undefined;
  return target.arguments[0];
}

const noWallClockUpperBound = {
  meta: {
    type: 'problem',
    docs: { description: 'Tests do not bound elapsed wall-clock time from above, unless time is the subject' },
    messages: {
      bound: 'An upper bound on elapsed wall-clock time: wait on events, counters or an injected clock, or say on this line or the one above that time is the subject.',
    },
    schema: [],
  },
  create(context) {
    const sourceCode = context.sourceCode;
    const keys = sourceCode.visitorKeys;
    const containsClockReading = (node) => {
      for (const inner of nodesOf(node, keys)) if (isClockReading(inner)) return true;
      return false;
    };
    // Names that hold an elapsed time, anywhere in the file: `const took = performance.now() - t0`,
    // `{ elapsedMs: Date.now() - start }`; and arrays they are collected in: `during.push(ms)`.
    const elapsedNames = new Set(['elapsed', 'elapsedMs']);
    const pushes = [];
    const bounds = [];
    const holdsElapsed = (node) => {
      for (const inner of nodesOf(node, keys)) if (isClockReading(inner) || (inner.type === 'Identifier' && elapsedNames.has(inner.name))) return true;
      return false;
    };
    const name = (target, value) => {
      const named = lastName(target);
      if (named && value && containsClockReading(value)) elapsedNames.add(named);
    };
    return {
      VariableDeclarator: (node) => name(node.id, node.init),
      Property: (node) => name(node.key, node.value),
      PropertyDefinition: (node) => name(node.key, node.value),
      AssignmentExpression: (node) => name(node.left, node.right),
      CallExpression(node) {
        if (lastName(node.callee) === 'push' && node.callee.type === 'MemberExpression') pushes.push(node);
        const bounded = boundedAbove(node);
        if (bounded) bounds.push({ node, bounded });
      },
      'Program:exit'() {
        for (let grew = true; grew; ) {
          grew = false;
          for (const push of pushes) {
            const array = lastName(push.callee.object);
            if (array && !elapsedNames.has(array) && push.arguments.some(holdsElapsed)) {
              elapsedNames.add(array);
              grew = true;
            }
          }
        }
        let lines;
        for (const { node, bounded } of bounds) {
          if (!holdsElapsed(bounded)) continue;
          lines ??= exemptLines(sourceCode);
          if (!exempt(lines, node, 1)) context.report({ node, messageId: 'bound' });
        }
      },
    };
  },
};

const plugin = {
  meta: { name: 'wfs-test-timing' },
  rules: { 'no-fixed-sleep': noFixedSleep, 'no-wall-clock-upper-bound': noWallClockUpperBound },
};

/** Where the rules apply: every test source for sleeps (but the waiting mechanism), test files for bounds. */
const configs = [
  {
    files: ['test/**/*.ts'],
    ignores: ['test/helpers/waitFor.ts'],
    plugins: { wfs: plugin },
    rules: { 'wfs/no-fixed-sleep': 'error' },
  },
  {
    files: ['test/**/*.test.ts'],
    plugins: { wfs: plugin },
    rules: { 'wfs/no-wall-clock-upper-bound': 'error' },
  },
];

module.exports = { plugin, configs };
