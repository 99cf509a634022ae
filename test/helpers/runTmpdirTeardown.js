/** jest.config.js, `globalTeardown`: removes the run's temporary folder (runTmpdir.js). */
module.exports = require('./runTmpdir').teardown;
