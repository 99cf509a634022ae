import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as undici from 'undici';

/**
 * The bundle's undici (scripts/bundle/undici.cjs) is built from undici's internal files
 * and a copy of the `request()` wrapper of its index.js, for a shorter cold start
 * (bench/README.md, "Cold start"). That holds for one undici only: pinned exactly, and
 * checked here against the installed one, so an upgrade that moves a file or changes the
 * wrapper fails this test instead of the build or, silently, the server.
 */
const root = join(__dirname, '..', '..');
const bundled = require(join(root, 'scripts', 'bundle', 'undici.cjs')) as typeof undici;
const bundledSource = readFileSync(join(root, 'scripts', 'bundle', 'undici.cjs'), 'utf8');
const undiciIndex = readFileSync(require.resolve('undici'), 'utf8');

describe("the bundle's undici", () => {
  it('is the version package.json pins exactly', () => {
    const pinned = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies.undici;
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    expect((require('undici/package.json') as { version: string }).version).toBe(pinned);
  });

  it("offers undici's own Agent, Dispatcher, buildConnector, errors and global dispatcher", () => {
    expect(bundled.Agent).toBe(undici.Agent);
    expect(bundled.Dispatcher).toBe(undici.Dispatcher);
    expect(bundled.buildConnector).toBe(undici.buildConnector);
    expect(bundled.errors).toBe(undici.errors);
    expect(bundled.getGlobalDispatcher).toBe(undici.getGlobalDispatcher);
  });

  it("copies the request() wrapper of the installed undici's index.js", () => {
    const wrapper = /^function makeDispatcher \(fn\) \{\n[\s\S]*?\n\}\n/m.exec(undiciIndex)?.[0] ?? '';
    const [, version, sha256] = /Copied from undici (\S+), whose `makeDispatcher` source has sha256 ([0-9a-f]{64})/.exec(bundledSource) ?? [];
    expect(undiciIndex).toContain('module.exports.request = makeDispatcher(api.request)');
    // On a mismatch: compare the wrapper with `request` in undici.cjs, bring the copy in
    // line, then record the new version and hash there.
    expect({ version, sha256 }).toEqual({ version: (require('undici/package.json') as { version: string }).version, sha256: createHash('sha256').update(wrapper).digest('hex') });
  });

  // What each request() hands its dispatcher, or the error it throws: the same for both.
  const cases: Array<[string, unknown, unknown]> = [
    ['a URL string with a query', 'http://upstream.test/api/public/v1/locations/?page_size=2', {}],
    ['a URL object, POST with a body', new URL('http://upstream.test/token'), { method: 'POST', body: 'grant_type=client_credentials', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
    ['a body without a method (PUT)', 'http://upstream.test/x', { body: 'b' }],
    ['opts.path without a slash', 'http://upstream.test/ignored', { path: 'relative?q=1' }],
    ['opts.path with a slash', 'http://upstream.test', { path: '/absolute' }],
    ['options as the URL', { origin: 'http://upstream.test', path: '/from-object' }, undefined],
    ['no URL', undefined, {}],
    ['options that are no object', 'http://upstream.test', 'options'],
    ['a path that is no string', 'http://upstream.test', { path: 5 }],
    ['an agent', 'http://upstream.test', { agent: {} }],
  ];
  it.each(cases)('calls its dispatcher as undici does: %s', async (_name, url, options) => {
    const outcome = async (request: typeof undici.request) => {
      let dispatched: unknown;
      const dispatcher = {
        dispatch(opts: { dispatcher?: unknown }) {
          dispatched = { ...opts, dispatcher: opts.dispatcher === dispatcher ? 'the one given' : opts.dispatcher };
          throw new Error('recorded');
        },
      };
      const withDispatcher = options === undefined ? { ...(url as object), dispatcher } : typeof options === 'object' ? { ...options, dispatcher } : options;
      try {
        await (options === undefined ? request(withDispatcher as never) : request(url as never, withDispatcher as never));
      } catch (error) {
        return { dispatched, error: `${(error as Error).name}: ${(error as Error).message}` };
      }
      return { dispatched };
    };
    const ours = await outcome(bundled.request);
    expect(ours).toEqual(await outcome(undici.request));
    expect(ours.error).toBeDefined();
  });
});
