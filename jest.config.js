/**
 * jose 6 and cockatiel 4 ship as ESM only. Rather than running jest in its
 * experimental ESM mode, ts-jest transforms their .js files to CommonJS (allowJs), so
 * every module, ours and theirs, loads through one CommonJS module system.
 * @type {import('jest').Config}
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.[tj]s$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.test.json' }],
  },
  transformIgnorePatterns: ['/node_modules/(?!(jose|cockatiel)/)'],
  setupFilesAfterEnv: ['<rootDir>/test/helpers/failOnConsole.ts'],
  testTimeout: 30000,
};
