import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { BoundedLabel } from '../../src/observability/boundedLabel';
import { createUpstreamObserver } from '../../src/observability/upstreamObserver';

describe('BoundedLabel', () => {
  it('keeps the first values, reports later ones as other, and a missing one by its placeholder', () => {
    const names = new BoundedLabel(2, /^[_A-Za-z]\w*$/);
    expect(['Rota', 'Picker', 'Rota', 'Third', 'Picker'].map((name) => names.value(name))).toEqual(['Rota', 'Picker', 'Rota', 'other', 'Picker']);
    expect(names.value(undefined, 'anonymous')).toBe('anonymous');
  });

  it('refuses values that do not look like a label value, without using up a slot', () => {
    const origins = new BoundedLabel(1);
    expect(origins.value('https://shard 1.example.com/?q="x"')).toBe('other');
    expect(origins.value('https://shard-1.example.com')).toBe('https://shard-1.example.com');
  });
});

describe('BoundedLabel slots', () => {
  it('gives slots to names that keep arriving: a flood of one-off names takes none', () => {
    const names = new BoundedLabel(3, /^[_A-Za-z]\w*$/, { admitAfter: 3 });
    for (let i = 0; i < 5_000; i += 1) names.value(`Junk${i}`);
    expect(names.size).toBe(0);
    const seen = ['Rota', 'Rota', 'Rota', 'Rota'].map((name) => names.value(name));
    expect(seen).toEqual(['other', 'other', 'Rota', 'Rota']);
  });

  it('hands a slot unused for idleMs to a newer name that keeps arriving', () => {
    let now = 0;
    const names = new BoundedLabel(2, /^[_A-Za-z]\w*$/, { admitAfter: 2, idleMs: 60_000, now: () => now });
    for (const name of ['Early', 'Early', 'Junk', 'Junk']) names.value(name);
    expect(names.size).toBe(2);
    now = 30_000;
    names.value('Early');
    expect([names.value('Real'), names.value('Real')]).toEqual(['other', 'other']);
    // `Junk` has been idle a minute, `Early` not: `Real` takes Junk's slot.
    now = 61_000;
    expect(names.value('Real')).toBe('Real');
    expect([names.value('Early'), names.value('Junk')]).toEqual(['Early', 'other']);
    expect(names.size).toBe(2);
  });
});

describe('shard origin labels', () => {
  it('are one bounded set for the call and the breaker metrics: a 51st origin is other', () => {
    const metrics = createMetrics();
    const observer = createUpstreamObserver(createLogger('silent'), metrics);
    try {
      for (let shard = 0; shard < 50; shard += 1) observer.upstreamAttempt({ tenantId: 't-1', list: 'locations', pageSize: 100, signal: undefined }, { status: 200, durationMs: 1, origin: `https://shard-${shard}.example.com`, outcome: 'ok' });
      expect(observer.originLabel('https://shard-7.example.com')).toBe('https://shard-7.example.com');
      expect(observer.originLabel('https://shard-50.example.com')).toBe('other');
    } finally {
      observer.close();
      metrics.close();
    }
  });
});
