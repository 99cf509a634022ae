/**
 * The people subgraph's data: deterministic, derived from ids, so that it answers for
 * any id another subgraph hands it (the emulator's `usr_...` and `loc_...` ids
 * included) and gives the same answer every time.
 */

export interface Person {
  id: string;
  name: string;
  role: string;
  email: string;
}

const firstNames = ['Ada', 'Bram', 'Chloe', 'Dario', 'Elif', 'Femi', 'Greta', 'Hugo', 'Ines', 'Jonas', 'Kaia', 'Luca'];
const lastNames = ['Novak', 'Okafor', 'Petit', 'Quinn', 'Rossi', 'Sato', 'Tamm', 'Ueda', 'Varga', 'Weber', 'Young'];
const roles = ['Shift lead', 'Sales associate', 'Nurse', 'Warehouse operative', 'Cashier', 'Supervisor'];
const shiftNotes = [
  'Hand over the till float to the next shift.',
  'Delivery expected at 10:00; check the pallets.',
  'Cover the breaks at the front desk.',
];

/** Size of the example directory that `Query.people` pages through. */
export const directorySize = 42;

/** FNV-1a, 32 bit: a stable number per id. */
function hashOf(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i += 1) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

function pick<T>(list: readonly T[], n: number): T {
  return list[n % list.length] as T;
}

export function personById(id: string): Person {
  const hash = hashOf(id);
  const first = pick(firstNames, hash);
  const last = pick(lastNames, hash >>> 8);
  return {
    id,
    name: `${first} ${last}`,
    role: pick(roles, hash >>> 16),
    email: `${first}.${last}@example.com`.toLowerCase(),
  };
}

/** The person at a position in the example directory (0-based). */
export function personAt(index: number): Person {
  return personById(`usr_${String(index + 1).padStart(4, '0')}`);
}

export function headcountOf(locationId: string): number {
  return 3 + (hashOf(locationId) % 38);
}

export function managerIdOf(locationId: string): string {
  return `usr_mgr_${(hashOf(locationId) % 1000).toString().padStart(3, '0')}`;
}

/** A hand-over note for two shifts in three; null for the rest. */
export function notesOf(shiftId: string): string | null {
  const hash = hashOf(shiftId);
  return hash % 3 === 0 ? null : pick(shiftNotes, hash >>> 4);
}
