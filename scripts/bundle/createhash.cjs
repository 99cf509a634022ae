'use strict';
// What the bundle gets for `@apollo/utils.createhash` (Apollo Server's query hash):
// node:crypto's createHash, which is what that package returns on Node. It reaches
// node:crypto through `module.require`, which a bundle does not have, and then falls
// back to a pure-JS SHA-256 (sha.js), on every request. Left outside the bundle it is
// not found either: a production install keeps it nested under @apollo/server.
const { createHash } = require('node:crypto');

module.exports = { createHash };
