import { dropLargestUntilWithin } from '../../src/http/unreadAnswers';

describe('dropLargestUntilWithin', () => {
  const run = (held: Record<string, number>, bound: number) => {
    const dropped: string[] = [];
    const total = Object.values(held).reduce((sum, bytes) => sum + bytes, 0);
    dropLargestUntilWithin(Object.keys(held), total, bound, (name) => held[name]!, (name) => dropped.push(name));
    return dropped;
  };

  it('drops nothing while the holders fit the bound', () => {
    expect(run({ a: 3, b: 4 }, 7)).toEqual([]);
  });

  it('drops the holders with the most unread first, only until the rest fit', () => {
    expect(run({ a: 1, b: 5, c: 3, d: 2 }, 6)).toEqual(['b']);
    expect(run({ a: 1, b: 5, c: 3, d: 2 }, 2)).toEqual(['b', 'c', 'd']);
  });

  it('keeps a holder with nothing unread, whatever the total', () => {
    expect(run({ a: 0, b: 9 }, 0)).toEqual(['b']);
  });
});
