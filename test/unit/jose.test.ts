import { decodeJwt, SignJWT } from 'jose';

describe('jose under jest', () => {
  it('signs and decodes a token', async () => {
    const token = await new SignJWT({ tenant_id: 't1' })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode('0123456789abcdef0123456789abcdef'));
    expect(decodeJwt(token).tenant_id).toBe('t1');
  });
});
