import { JsonUnits, PARSED_UNIT_BYTES, heldJsonBytes, jsonUnitsOf } from '../../src/memory/jsonSize';
import { exposedGc } from '../helpers/gcMetrics';

describe('JSON structural units', () => {
  it('counts one per value, container and key at least, nothing inside strings', () => {
    expect(jsonUnitsOf(Buffer.from('1'))).toBe(1);
    expect(jsonUnitsOf(Buffer.from('[{},{},{}]'))).toBe(7);
    expect(jsonUnitsOf(Buffer.from('{"a":1,"b":[2,3]}'))).toBe(7);
    // Brackets, commas, colons and escaped quotes inside a string are text.
    expect(jsonUnitsOf(Buffer.from('"[{,:}] \\" [,"'))).toBe(1);
    expect(jsonUnitsOf(Buffer.from('["\\\\",1]'))).toBe(3);
  });

  it('counts the same however the text is cut into chunks, escapes and multi-byte characters included', () => {
    const text = Buffer.from(JSON.stringify({ query: '{ a }', variables: { s: 'é"\\,[{', list: [1, { x: 'ü' }, []] } }));
    const whole = jsonUnitsOf(text);
    for (let size = 1; size <= 7; size++) {
      const counter = new JsonUnits();
      for (let at = 0; at < text.length; at += size) counter.add(text.subarray(at, at + size));
      expect(counter.units).toBe(whole);
    }
  });
});

describe('what parsing makes of JSON text', () => {
  const gc = exposedGc();
  /** Heap a parse of `text` holds, on average over `copies` parses kept at once, after full collections. */
  function parsedBytes(text: string, copies = 4): number {
    gc();
    gc();
    const before = process.memoryUsage().heapUsed;
    const kept: unknown[] = [];
    for (let i = 0; i < copies; i++) kept.push(JSON.parse(text));
    gc();
    gc();
    const after = process.memoryUsage().heapUsed;
    expect(kept).toHaveLength(copies);
    return (after - before) / copies;
  }
  const n = 50_000;
  const shapes: Record<string, string> = {
    'empty objects': `[${Array(n).fill('{}').join(',')}]`,
    'empty arrays': `[${Array(n).fill('[]').join(',')}]`,
    'arrays in arrays': `${'['.repeat(2_000)}${']'.repeat(2_000)}`,
    numbers: `[${Array.from({ length: n }, (_, i) => i + 0.5).join(',')}]`,
    'short strings': `[${Array.from({ length: n }, (_, i) => `"${i.toString(36)}"`).join(',')}]`,
    'objects with keys': `[${Array(n).fill('{"a":{},"b":[1.5,"x"]}').join(',')}]`,
    'a long string': JSON.stringify('x'.repeat(300_000)),
    'one object of many keys': `{${Array.from({ length: n }, (_, i) => `"k${i}":1`).join(',')}}`,
  };
  it.each(Object.entries(shapes))('holds no more than heldJsonBytes counts it (text and parse): %s', (_name, text) => {
    const bytes = Buffer.byteLength(text);
    const held = parsedBytes(text) + bytes;
    expect(held).toBeLessThanOrEqual(heldJsonBytes(bytes, jsonUnitsOf(Buffer.from(text))));
    // The unit is what one costs at most: an empty object, the common hostile case, is more than a third of it.
    expect(PARSED_UNIT_BYTES).toBe(64);
  });
});
