import { createHash } from 'node:crypto';
import type { EmulatorLocation, EmulatorShift } from './types';

// Every generated roster starts on Monday 23 November 2026 (month is 0-based for Date.UTC).
const ROSTER_START = Date.UTC(2026, 10, 23);
const DAY_MS = 86_400_000;

/** A recurring shift at a location: local wall-clock times; `to` before `from` ends the next day. */
export interface ShiftPattern {
  from: string;
  to: string;
  role: string;
  /** Default 'all'. */
  days?: 'all' | 'weekdays' | 'weekends';
}

/** Deterministic hex of `length` characters: stable ids and pseudo-random choices without a seeded RNG. */
export function shortHash(text: string, length: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

function minutesOf(clock: string): number {
  const [hours, minutes] = clock.split(':').map(Number);
  return hours! * 60 + minutes!;
}

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * Local wall-clock time of roster day `day` as ISO 8601 with the zone's offset. The
 * offset is fixed per tenant: the seeded weeks contain no daylight-saving change in
 * any of the zones used (NZ is on +13:00, the UK on +00:00, Austria on +01:00).
 */
export function localIso(day: number, minutes: number, offset: string): string {
  const date = new Date(ROSTER_START + (day + Math.floor(minutes / 1440)) * DAY_MS);
  const within = minutes % 1440;
  return `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}T${pad(Math.floor(within / 60))}:${pad(within % 60)}:00${offset}`;
}

// Minutes of unpaid break, as a typical award would give for the shift length.
function breakMinutes(lengthMinutes: number): number {
  if (lengthMinutes >= 6 * 60) return 30;
  return lengthMinutes >= 4 * 60 ? 15 : 0;
}

/** What buildRoster needs to generate a tenant's shifts. */
export interface RosterInput {
  /** Short tenant tag used in ids: shf_<prefix>_0001, usr_<hash>. */
  prefix: string;
  locations: readonly EmulatorLocation[];
  patterns: (location: EmulatorLocation, index: number) => readonly ShiftPattern[];
  days: number;
  offset: string;
  staffPerLocation: number;
  /** Share of shifts left open (user null), 0..1. */
  openShare: number;
}

/** A few weeks of shifts for every location, sorted by start, with ids in that order. */
export function buildRoster(input: RosterInput): EmulatorShift[] {
  const drafts: Array<{ at: number; shift: EmulatorShift }> = [];
  input.locations.forEach((location, locationIndex) => {
    const staff = Array.from({ length: input.staffPerLocation }, (_, k) => `usr_${shortHash(`${input.prefix}:${location.id}:${k}`, 10)}`);
    const patterns = input.patterns(location, locationIndex);
    for (let day = 0; day < input.days; day += 1) {
      const weekend = day % 7 >= 5; // day 0 is a Monday
      patterns.forEach((pattern, slot) => {
        if ((pattern.days === 'weekdays' && weekend) || (pattern.days === 'weekends' && !weekend)) return;
        const from = minutesOf(pattern.from);
        let to = minutesOf(pattern.to);
        if (to <= from) to += 1440;
        const start = localIso(day, from, input.offset);
        const open = parseInt(shortHash(`${input.prefix}:open:${location.id}:${day}:${slot}`, 4), 16) / 0x10000 < input.openShare;
        drafts.push({
          at: Date.parse(start),
          shift: {
            object: 'shift',
            id: '', // numbered once sorted
            location: location.id,
            start,
            end: localIso(day, to, input.offset),
            user: open ? null : staff[(day * patterns.length + slot) % staff.length]!,
            role: pattern.role,
            break_minutes: breakMinutes(to - from),
          },
        });
      });
    }
  });
  // Array.prototype.sort is stable: equal starts keep location order.
  drafts.sort((a, b) => a.at - b.at);
  return drafts.map(({ shift }, index) => ({ ...shift, id: `shf_${input.prefix}_${String(index + 1).padStart(4, '0')}` }));
}
