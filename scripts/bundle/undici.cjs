'use strict';
// What the bundle gets for `import { … } from 'undici'`: the parts of undici the
// server uses (Agent, buildConnector, request and the Dispatcher they share), taken
// from undici's own files. undici's entry point also builds fetch, WebSocket,
// EventSource, cookies, cache storage and the mocks whenever it is loaded; the server
// calls none of them, and building them was a fifth of a cold start's module loading.
// `build.mjs` refuses to bundle when the server imports anything this file lacks.
// It loads undici's internal files and copies a function of its index.js, so undici is
// pinned to one version in package.json, and test/unit/undiciBundle.test.ts fails when
// the installed undici's files or wrapper no longer match this file.
const Dispatcher = require('undici/lib/dispatcher/dispatcher');
const api = require('undici/lib/api');
const Agent = require('undici/lib/dispatcher/agent');
const buildConnector = require('undici/lib/core/connect');
const errors = require('undici/lib/core/errors');
const util = require('undici/lib/core/util');
const { getGlobalDispatcher } = require('undici/lib/global');

// As undici's index.js does: request(), stream() … as methods of every dispatcher.
Object.assign(Dispatcher.prototype, api);

/**
 * undici's `request(url, options)`, as its index.js builds it (its `makeDispatcher(api.request)`).
 * Copied from undici 8.13.1, whose `makeDispatcher` source has sha256 0ff605fda9307d5105f582f8a119cc914d17855cfb620fe8af8f549cc692e191.
 */
function request(url, opts) {
  if (!url || (typeof url !== 'string' && typeof url !== 'object' && !(url instanceof URL))) throw new errors.InvalidArgumentError('invalid url');
  if (opts != null && typeof opts !== 'object') throw new errors.InvalidArgumentError('invalid opts');
  if (opts && opts.path != null) {
    if (typeof opts.path !== 'string') throw new errors.InvalidArgumentError('invalid opts.path');
    url = new URL(util.parseOrigin(url).origin + (opts.path.startsWith('/') ? opts.path : `/${opts.path}`));
  } else {
    if (!opts) opts = typeof url === 'object' ? url : {};
    url = util.parseURL(url);
  }
  const { agent, dispatcher = getGlobalDispatcher(), ...restOpts } = opts;
  if (agent) throw new errors.InvalidArgumentError('unsupported opts.agent. Did you mean opts.client?');
  return api.request.call(dispatcher, {
    ...restOpts,
    origin: url.origin,
    path: url.search ? `${url.pathname}${url.search}` : url.pathname,
    method: opts.method || (opts.body ? 'PUT' : 'GET'),
  });
}

module.exports = { Agent, Dispatcher, buildConnector, errors, getGlobalDispatcher, request };
