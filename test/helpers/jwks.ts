import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';

export interface SignOptions {
  issuer?: string;
  audience?: string;
  /** jose time span, e.g. '5m'; a negative one ('-1m') gives an expired token. */
  expiresIn?: string;
}

export interface TestIdentityProvider {
  /** The JWKS endpoint, for WFS_JWKS_URL: http://127.0.0.1:PORT/.well-known/jwks.json */
  readonly jwksUrl: string;
  readonly issuer: string;
  readonly audience: string;
  /** The environment that puts our subgraph in verified-identity mode against this provider. */
  readonly env: { WFS_JWKS_URL: string; WFS_JWT_ISSUER: string; WFS_JWT_AUDIENCE: string };
  /** How many times the JWKS endpoint was fetched. */
  readonly jwksRequests: number;
  /** A token signed with the published key (issuer and audience as configured unless overridden). */
  sign(claims: Record<string, unknown>, options?: SignOptions): Promise<string>;
  /** A forgery: the right kid, issuer and audience, signed with a key the JWKS does not publish. */
  signWithUnpublishedKey(claims: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

/**
 * A real identity provider's key endpoint on loopback: an ES256 key pair from jose,
 * the public half served as a JWKS over HTTP, the private half signing test tokens.
 */
export async function startTestIdentityProvider(
  options: { issuer?: string; audience?: string } = {},
): Promise<TestIdentityProvider> {
  const issuer = options.issuer ?? 'https://idp.example.com';
  const audience = options.audience ?? 'wfs-subgraph';
  const kid = 'test-key-1';
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const unpublished = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  let jwksRequests = 0;
  const server = createServer((_req, res) => {
    jwksRequests += 1;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
  const build = (claims: Record<string, unknown>, signOptions: SignOptions) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid })
      .setIssuer(signOptions.issuer ?? issuer)
      .setAudience(signOptions.audience ?? audience)
      .setIssuedAt()
      .setExpirationTime(signOptions.expiresIn ?? '5m');
  let closed: Promise<void> | undefined;
  return {
    jwksUrl,
    issuer,
    audience,
    env: { WFS_JWKS_URL: jwksUrl, WFS_JWT_ISSUER: issuer, WFS_JWT_AUDIENCE: audience },
    get jwksRequests() {
      return jwksRequests;
    },
    sign: (claims, signOptions = {}) => build(claims, signOptions).sign(privateKey),
    signWithUnpublishedKey: (claims) => build(claims, {}).sign(unpublished.privateKey),
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      return closed;
    },
  };
}
