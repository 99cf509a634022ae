'use strict';
// What the bundle gets for `fast-json-stringify`, which graphql-jit loads when its module
// loads but calls only for a query compiled with `customJSONSerializer` (a serializer
// per query, from a JSON schema, through ajv). The server never asks for one
// (src/graphql/server/execution.ts: answers are written by Apollo's `stringifyResult`),
// so the bundle leaves out that package and ajv, which a start would otherwise read and run.
module.exports = function fastJsonStringify() {
  throw new Error('fast-json-stringify is not in the server bundle: compile queries without customJSONSerializer (scripts/bundle/fastJsonStringify.cjs)');
};
