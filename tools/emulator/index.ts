// The upstream emulator: a real HTTP implementation of docs/upstream.md, used by demo
// mode (`npm start` without WFS_AUTH_URL), the integration tests and the benchmarks,
// and alone through `npm run emulator` (main.ts).
//
//   emulator.ts  start/stop, the servers and the control surface (faults, moves, revocation)
//   auth.ts      the OAuth 2.0 client-credentials token endpoint
//   tokens.ts    HS256 JWT issue and verification, expiry, revocation
//   shard.ts     the list endpoints of one shard; paging.ts their cursors and envelopes
//   seed.ts      demo companies and makeTenant(); schedule.ts their rosters
//   churn.ts     the demo's live edits to a company's shifts
export { startShiftChurn, type ShiftChurn } from './churn';
export { startEmulator } from './emulator';
export { demoTenants, generatedTenants, makeTenant } from './seed';
export type {
  Emulator,
  EmulatorCounters,
  EmulatorLocation,
  EmulatorOptions,
  EmulatorRecord,
  EmulatorShift,
  EmulatorTenant,
  EnvelopeRewriter,
  FaultSpec,
  ListCounts,
  PageReferenceFormat,
} from './types';
