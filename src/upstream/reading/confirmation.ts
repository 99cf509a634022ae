/**
 * Whether what a company's entity index holds of a list is what the upstream answers
 * now, checked against one walk of the whole list (a live poll's): the rule that lets
 * a polled list's kept pages and records be served past the freshness window while
 * staying within it of the upstream (docs/caching.md, "Watched lists").
 *
 * The upstream's references are opaque (its documentation shows no format), so a page
 * cannot be placed in the list by its reference alone. What can be checked is a chain:
 * the pages of one size that start at the first page (no reference) and follow each
 * other by `next`. If their records, in order, are the walk's records from the first
 * on, in the same versions, and the last page's `hasMore` says what the walk says, then
 * the upstream, asked for those references again, answers those pages, on the one
 * assumption this rests on: the same records in the same order make the same pages
 * (a reference names a place in the list, not a moment). A page off such a chain (read
 * from a cursor an older answer gave, or behind an upstream filter) cannot be checked,
 * and is dropped rather than kept past the window. Every record held must be in the walk
 * in the same version; a scan that ran to the end of the list must hold every record
 * the walk saw. Anything else is a difference: nothing is confirmed (what is held then
 * expires as it would have, within the window).
 *
 * No clock, no index: `confirmInSlices` runs the check, giving the event loop back between
 * slices, and entityIndex.ts applies the verdict.
 */
import type { ListPage } from '../client';
import { isMalformed } from '../resources';

/** One walk of a whole list: its records in list order (the live poll's). */
export interface WalkedList<T extends { id: string }> {
  readonly records: readonly T[];
}

/** A page an index holds, under `key` (the index's own), with its upstream filter ('' for none); its reference and size are the page's. */
export interface HeldPage<T> {
  /** The index's own pages (a scan's) and the pages kept for queries make chains apart, even at one size. */
  readonly kind: 'scanned' | 'kept';
  readonly key: string;
  readonly filter: string;
  readonly page: ListPage<T>;
}

/** What an index holds, as the check needs it. */
export interface HeldList<T extends { id: string }> {
  readonly records: ReadonlyMap<string, T>;
  /** Every page held: the index's own (a scan's, asked at the upstream's page size) and those kept for queries. */
  readonly pages: Iterable<HeldPage<T>>;
  /** The index's scan ran to the end of the list: it answers "no such record" without reading. */
  readonly complete: boolean;
}

/** The verdict: `confirmed`, or not; either way the pages that cannot be checked (`unplaced`, by key), to be dropped. */
export interface Confirmation {
  readonly confirmed: boolean;
  readonly unplaced: readonly string[];
}

/**
 * Comparisons made in one slice of `confirmSteps`: a list of 20 000 records held with
 * two chains of kept pages took 20 to 70 ms to check in one go on a loaded 2-core
 * machine, a stall for every company's queries each poll (as the diff was,
 * live/snapshot.ts); in slices of 2 000 its longest turn was 6 to 9 ms once warm.
 */
export const CONFIRM_SLICE = 2_000;

/**
 * Checks `held` against `walk` (see the top of the file), pausing (yielding) after every
 * `slice` comparisons so the caller can give the event loop back; `same` compares two
 * versions of a record. The caller must not go on once what is held changed meanwhile.
 */
export function* confirmSteps<T extends { id: string }>(walk: WalkedList<T>, held: HeldList<T>, same: (a: T, b: T) => boolean, slice = CONFIRM_SLICE): Generator<void, Confirmation> {
  let work = 0;
  const due = () => ++work % slice === 0;
  const order = new Map<string, number>();
  for (let position = 0; position < walk.records.length; position++) {
    order.set(walk.records[position]!.id, position);
    if (due()) yield;
  }
  for (const [id, record] of held.records) {
    const position = order.get(id);
    if (position === undefined || !same(record, walk.records[position]!)) return { confirmed: false, unplaced: [] };
    if (due()) yield;
  }
  if (held.complete && held.records.size !== order.size) return { confirmed: false, unplaced: [] };
  // Pages grouped into the chains they can sit on: one per kind and page size (filter '').
  const chains = new Map<string, Map<string, HeldPage<T>>>();
  const unplaced: string[] = [];
  for (const one of held.pages) {
    if (one.filter !== '') {
      unplaced.push(one.key);
      continue;
    }
    const group = `${one.kind}\u0000${one.page.pageSize}`;
    let chain = chains.get(group);
    if (!chain) chains.set(group, (chain = new Map()));
    chain.set(one.page.ref ?? '', one);
  }
  for (const chain of chains.values()) {
    const placed = yield* followChain(walk.records, chain, same, due);
    if (placed === undefined) return { confirmed: false, unplaced };
    for (const page of chain.values()) if (!placed.has(page.key)) unplaced.push(page.key);
  }
  return { confirmed: true, unplaced };
}

/**
 * `confirmSteps` run to its verdict, the event loop given back between slices;
 * undefined as soon as `unchanged` says what is held changed meanwhile (what was learnt
 * during the check was not checked, so nothing is confirmed this time).
 */
export async function confirmInSlices<T extends { id: string }>(walk: WalkedList<T>, held: HeldList<T>, same: (a: T, b: T) => boolean, unchanged: () => boolean): Promise<Confirmation | undefined> {
  const steps = confirmSteps(walk, held, same);
  let step = steps.next();
  while (!step.done) {
    await new Promise((resolve) => setImmediate(resolve));
    if (!unchanged()) return undefined;
    step = steps.next();
  }
  return step.value;
}

/**
 * Follows the chain from the first page: the keys of the pages on it, or undefined when
 * one of them differs from the walk (a record elsewhere or in another version, a page
 * that ends where the walk goes on, or goes on where it ends). Yields when `due`.
 */
function* followChain<T extends { id: string }>(records: readonly T[], chain: ReadonlyMap<string, HeldPage<T>>, same: (a: T, b: T) => boolean, due: () => boolean): Generator<void, Set<string> | undefined> {
  const placed = new Set<string>();
  let position = 0;
  let page = chain.get('');
  while (page && !placed.has(page.key)) {
    placed.add(page.key);
    for (const item of page.page.items) {
      const there = records[position];
      if (isMalformed(item) || there === undefined || there.id !== item.id || !same(item, there)) return undefined;
      position += 1;
      if (due()) yield;
    }
    const more = page.page.hasMore && page.page.next !== null;
    if (more !== position < records.length) return undefined;
    if (!more) break;
    page = chain.get(page.page.next!);
  }
  return placed;
}
