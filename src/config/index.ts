/**
 * The configuration: the only reader of `process.env` (but for OpenTelemetry, the
 * compile cache and the heap-limit check: docs/configuration.md, "How settings are
 * read"), read once into a frozen, typed `Config`.
 *
 *   settings.ts         every variable, one entry each (serviceSettings.ts, tuningSettings.ts; spec.ts the entry's shape), and what is read off them
 *   readers.ts          how a variable's text becomes its value, each problem a ConfigError naming it
 *   load.ts             loadConfig: the settings read, and the rules between them
 *   limits.ts           every bound by room, its default and reason written once (DEFAULT_LIMITS), the types read off it
 *   types.ts            Config and its parts; tenantsFile.ts the tenants file; errors.ts ConfigError
 */
export { ConfigError, startupFailureLine } from './errors';
export { loadConfig } from './load';
export {
  DEFAULT_LIMITS,
  withLimits,
  type ConnectionLimits,
  type GateLimits,
  type LimitOverrides,
  type Limits,
  type LiveLimits,
  type PollLimits,
  type QueryLimits,
  type RequestLimits,
  type SocketLimits,
} from './limits';
export { KNOWN_ENV_VARIABLES, NUMERIC_SETTINGS, SETTINGS, UPSTREAM_SETTINGS, settingOfBound, type SettingName } from './settings';
export type { Config, JwtIdentityConfig, TenantCredentials } from './types';
