/**
 * What JSON text becomes once parsed, counted before it is parsed. A body's bytes are
 * not what a replica holds for it: `[{},{},…]` grows about twenty times when
 * `JSON.parse` makes it objects, `"…"` about once. So the bounds on request bodies and
 * on WebSocket messages count, as the bytes arrive, the text's structural units (`{`,
 * `[`, `,` and `:` outside strings, plus one: at least one per value, container and
 * key the parse will make), and charge what the text and its parse may hold together:
 *
 *     held = 2 × bytes + PARSED_UNIT_BYTES × units
 *
 * The text once (it is held until parsed) and its strings once more (a parsed string
 * is never longer than its text), and each unit at the most V8 spends on one: measured
 * on V8 13 (test/unit/jsonSize.test.ts measures it again on the running Node), an empty
 * object costs 32 bytes, an empty array 20, an array nested in arrays 56, a number,
 * `null` or a short string in an array 8 to 13, a key with its value about 34. The
 * bytes of a body are still bounded on their own (Fastify's `bodyLimit`, undici's
 * `maxResponseSize`, ws's `maxPayload` do that much); this adds what parsing makes.
 *
 * Counted on bytes, not characters: `"` and `\` are ASCII, and UTF-8 never uses an ASCII
 * byte inside a multi-byte character, so a chunk boundary anywhere is fine.
 */

/** The most heap one structural unit of JSON text becomes once parsed, in bytes (measured worst: 56, an array in an array). */
export const PARSED_UNIT_BYTES = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;
const COLON = 0x3a;

/** Counts the structural units of JSON text fed to it in chunks (`add`), strings and escapes carried across chunks. */
export class JsonUnits {
  /** Units so far: one for the top-level value, one per `{`, `[`, `,`, `:` outside strings. */
  units = 1;
  private inString = false;
  private escaped = false;

  /** Counts `chunk`'s units; returns how many it added. */
  add(chunk: Uint8Array): number {
    let added = 0;
    let inString = this.inString;
    let escaped = this.escaped;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === BACKSLASH) escaped = true;
        else if (byte === QUOTE) inString = false;
      } else if (byte === QUOTE) inString = true;
      else if (byte === OPEN_BRACE || byte === OPEN_BRACKET || byte === COMMA || byte === COLON) added += 1;
    }
    this.inString = inString;
    this.escaped = escaped;
    this.units += added;
    return added;
  }
}

/** The structural units of a whole text's bytes (one WebSocket message). */
export function jsonUnitsOf(bytes: Uint8Array): number {
  const counter = new JsonUnits();
  counter.add(bytes);
  return counter.units;
}

/** What `bytes` of JSON text with `units` structural units may hold, text and parse together, in bytes. */
export function heldJsonBytes(bytes: number, units: number): number {
  return 2 * bytes + PARSED_UNIT_BYTES * units;
}
