import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/*
 * What the replicas keep in Redis or say through it, sealed with AES-256-GCM under a
 * key derived from the fleet's secret (WFS_REDIS_KEY): token records
 * (token/tokenRecord.ts), live-update messages and poll leases
 * (live/redisCoordinator.ts). Whoever can reach Redis without the secret can delete
 * or replay what is there, never write something a replica takes for its own. The
 * name a value is bound to (its key or channel) is the additional authenticated
 * data, so a value moved to another key or channel does not open there.
 *
 *   v1.<base64url(iv[12] | tag[16] | ciphertext)>
 */

const VERSION = 'v1.';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * An AES-256 key for one use of the fleet's secret: HKDF-SHA-256 with `purpose` as
 * its info, so the token records' key and the live messages' key differ and a value
 * sealed for one use never opens as another.
 */
export function sealingKey(secret: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.alloc(0), purpose, 32));
}

/** `text` sealed with `key`, bound to `boundTo` (a Redis key or channel name). */
export function seal(key: Buffer, boundTo: string, text: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(boundTo, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return VERSION + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url');
}

/** The length of `seal`'s output for a text of `textBytes` UTF-8 bytes. */
export function sealedLength(textBytes: number): number {
  return VERSION.length + Math.ceil(((IV_BYTES + TAG_BYTES + textBytes) * 4) / 3);
}

/**
 * What a value from Redis opened to: its text, or why it is refused. `unsealed`: not
 * in the sealed form at all (plain JSON, garbage); `forged`: in the form, but it does
 * not authenticate (another key, another name, tampered with).
 */
export type Opened = { readonly text: string } | { readonly refused: 'unsealed' | 'forged' };

export function unseal(key: Buffer, boundTo: string, value: string): Opened {
  if (!value.startsWith(VERSION)) return { refused: 'unsealed' };
  const body = value.slice(VERSION.length);
  if (!/^[A-Za-z0-9_-]*$/.test(body)) return { refused: 'unsealed' };
  const bytes = Buffer.from(body, 'base64url');
  if (bytes.length <= IV_BYTES + TAG_BYTES) return { refused: 'unsealed' };
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(boundTo, 'utf8'));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return { text: Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8') };
  } catch {
    return { refused: 'forged' };
  }
}
