import { MemoryBudget } from '../../src/memory/budget';
import { EntityIndexes } from '../../src/upstream/reading/entityIndexes';

/**
 * The replica's memory budget (src/memory/budget.ts): one account every holder is
 * charged to, and the entity indexes as the one reclaimer that lets go when a charge
 * takes it past its limit. No clock, no waiting.
 */

const records = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => ({ id: `${prefix}${i}` }));

describe('the memory budget', () => {
  it('counts what every holder charges and releases, and asks the reclaimer only past its limit, naming who charged', () => {
    const budget = new MemoryBudget(100);
    const asked: unknown[] = [];
    budget.reclaimWith({ reclaim: (claimant) => void asked.push(claimant) });
    const snapshot = {};
    budget.charge(60);
    budget.charge(40, snapshot);
    expect(budget.held).toBe(100);
    expect(budget.over).toBe(false);
    expect(asked).toEqual([]);
    budget.charge(1, snapshot);
    expect(budget.over).toBe(true);
    expect(asked).toEqual([snapshot]);
    budget.release(21);
    budget.charge(-20); // a negative charge gives back, as the first wiring did
    expect(budget.held).toBe(60);
    expect(asked).toHaveLength(1);
  });

  it("has the indexes let go of the least recently used companies when a holder outside them (a snapshot, an answer) takes it past its limit", () => {
    const budget = new MemoryBudget(300);
    const indexes = new EntityIndexes({ budget, sweepEveryMs: 0 });
    indexes.for('A', 'locations').prime(records('a', 100));
    indexes.for('B', 'locations').prime(records('b', 100));
    indexes.for('A', 'shifts'); // A used again: B is now the least recent
    expect(budget.held).toBe(200);
    budget.charge(150);
    expect(budget.held).toBe(250);
    expect(indexes.for('B', 'locations').peek('b0')).toBeUndefined();
    expect(indexes.for('A', 'locations').peek('a0')).toEqual({ id: 'a0' });
    // Past it by more than any one company holds: every index goes, the outside charge stays.
    budget.charge(300);
    expect(budget.held).toBe(450);
    expect(indexes.for('A', 'locations').peek('a0')).toBeUndefined();
    budget.release(450);
    expect(budget.held).toBe(0);
    indexes.close();
  });
});
