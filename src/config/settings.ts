import { SERVICE_SETTINGS } from './serviceSettings';
import type { IntegerSetting } from './spec';
import { TUNING_SETTINGS } from './tuningSettings';

/**
 * Every environment variable loadConfig reads, one entry each (spec.ts says what an
 * entry holds), in the order docs/configuration.md's table lists them. What is read off
 * them: the known names (an unknown `WFS_*` name stops start-up), the numeric settings'
 * defaults and ranges, the settings demo mode refuses, the bounds the settings set
 * (load.ts, `limitsOf`), and the page's table (`npm run docs:configuration`).
 */
export const SETTINGS = { ...SERVICE_SETTINGS, ...TUNING_SETTINGS };

export type SettingName = keyof typeof SETTINGS;

/** Every `WFS_*` variable this subgraph reads. Any other `WFS_*` name in the environment stops start-up, naming the closest of these (a typo such as `WFS_AUTH_ULR` must not silently start demo mode). */
export const KNOWN_ENV_VARIABLES = Object.freeze((Object.keys(SETTINGS) as SettingName[]).filter((name): name is Extract<SettingName, `WFS_${string}`> => name.startsWith('WFS_')));

type IntegerName = { [Name in SettingName]: (typeof SETTINGS)[Name] extends IntegerSetting ? Name : never }[SettingName];

/**
 * The numeric settings: default, smallest and largest value. The modules that take
 * these values as options fall back to the same defaults, and test/unit/docs.test.ts
 * holds the other pages' restatements to them.
 */
export const NUMERIC_SETTINGS = Object.freeze(
  Object.fromEntries(
    Object.entries(SETTINGS).flatMap(([name, spec]) => ('min' in spec ? [[name, Object.freeze({ default: spec.fallback, min: spec.min, max: spec.max })]] : [])),
  ),
) as { readonly [Name in IntegerName]: { readonly default: number; readonly min: number; readonly max: number } };

/** Variables that only make sense against a real upstream: with any of them, a missing WFS_AUTH_URL is a mistake, not demo mode. */
export const UPSTREAM_SETTINGS = Object.freeze((Object.keys(SETTINGS) as SettingName[]).filter((name) => SETTINGS[name].upstream));

/** The setting that sets bound `group.field` of `Limits`, if one does (a message can then name what an operator sets). */
export function settingOfBound(name: string): SettingName | undefined {
  return (Object.keys(SETTINGS) as SettingName[]).find((setting) => {
    const spec = SETTINGS[setting] as { bound?: IntegerSetting['bound'] };
    return spec.bound !== undefined && spec.bound.name.join('.') === name;
  });
}
