import { DEFAULT_LIMITS, type BoundName, type Limits } from './limits';
import { integer as integerReader, type Reader } from './readers';

/**
 * One setting: how its text is read, its value when unset, and its line in
 * docs/configuration.md's table (`npm run docs:configuration` writes the table from
 * these; test/unit/docs.test.ts fails when the page and the settings differ).
 */
export interface Setting<T> {
  readonly read: Reader<T>;
  /** The value when the variable is unset or blank (null or undefined: none; loadConfig's rules decide what that means). */
  readonly fallback: T;
  /** Only meaningful against a real upstream: set without WFS_AUTH_URL, it stops start-up instead of starting demo mode. */
  readonly upstream: boolean;
  /** What it does, as the table's middle column says it (Markdown). */
  readonly meaning: string;
  /** What applies when it is unset, as the table's last column says it (Markdown). */
  readonly whenUnset: string;
}

/** A whole number from `min` to `max` (NUMERIC_SETTINGS), perhaps setting a bound. */
export interface IntegerSetting extends Setting<number> {
  readonly min: number;
  readonly max: number;
  /** The bound of `Limits` it sets (loadConfig: `limits`), and how many of the bound's unit one of the setting's is (seconds to ms: 1000). */
  readonly bound: { readonly name: BoundName; readonly perUnit: number } | undefined;
}

/** A setting read by `read`, `fallback` when unset. */
export function setting<T>(read: Reader<T>, fallback: T, doc: { meaning: string; whenUnset: string; upstream?: boolean }): Setting<T> {
  return { read, fallback, upstream: doc.upstream ?? false, meaning: doc.meaning, whenUnset: doc.whenUnset };
}

/** An integer setting: `{range}` in `meaning` becomes its range ("1 to 10 000"), so the page states the bounds the code applies. */
export function integer(spec: { min?: number; max: number; fallback: number; meaning: string; bound?: IntegerSetting['bound'] }): IntegerSetting {
  const min = spec.min ?? 1;
  return {
    read: integerReader(min, spec.max),
    fallback: spec.fallback,
    upstream: false,
    meaning: spec.meaning.replace('{range}', `${spaced(min)} to ${spaced(spec.max)}`),
    whenUnset: `\`${spec.fallback}\``,
    min,
    max: spec.max,
    bound: spec.bound,
  };
}

/**
 * The setting of a bound: its default is the bound's (DEFAULT_LIMITS, written there
 * once with its reason), in the setting's unit (`perUnit` of the bound's in one of it).
 */
export function bound<Group extends keyof Limits>(group: Group, field: keyof Limits[Group], spec: { max: number; perUnit?: number; meaning: string }): IntegerSetting {
  const perUnit = spec.perUnit ?? 1;
  const fallback = (DEFAULT_LIMITS[group][field] as number) / perUnit;
  return integer({ max: spec.max, fallback, meaning: spec.meaning, bound: { name: [group, field] as BoundName, perUnit } });
}

/** 10000 as the pages write it: 10 000. */
function spaced(n: number): string {
  return n.toLocaleString('en-US').replace(/,/g, ' ');
}
