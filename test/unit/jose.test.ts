import { decodeJwt, SignJWT } from 'jose';
import { TENANT_ID } from '../helpers/fixtures';

describe('jose under jest', () => {
  it('signs and decodes a token', async () => {
    const token = await new SignJWT({ tenant_id: TENANT_ID })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode('0123456789abcdef0123456789abcdef'));
    expect(decodeJwt(token).tenant_id).toBe(TENANT_ID);
  });
});
