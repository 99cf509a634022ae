import { BoundedLabel } from '../../src/observability/boundedLabel';

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
