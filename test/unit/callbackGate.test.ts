import { ConfigError, loadConfig } from '../../src/config';
import { createCallbackGate } from '../../src/graphql/admission/callbackGate';

const ROUTER = 'http://router.internal:4004';
const extension = (overrides: Record<string, unknown> = {}) => ({ callbackUrl: `${ROUTER}/callback/a`, subscriptionId: 'a', verifier: 'v', heartbeatIntervalMs: 5_000, ...overrides });
const codeOf = (outcome: object) => ('reason' in outcome ? (outcome as { reason: string }).reason : 'admitted');

/**
 * What a callback subscription must meet before anything is sent to the URL it names
 * (graphql/admission/callbackGate.ts), and WFS_SUBSCRIPTION_CALLBACK_ALLOW as read.
 */
describe('callback admission', () => {
  it('refuses every callback while no origin is allowed', () => {
    expect(codeOf(createCallbackGate([], 10).admit(extension(), false))).toBe('callback_disabled');
  });

  it('refuses a malformed extension, with what is wrong, and an origin not allowed (another port is another origin)', () => {
    const gate = createCallbackGate([ROUTER], 10);
    for (const bad of [null, 'x', extension({ callbackUrl: 'not a url' }), extension({ callbackUrl: 'ftp://router.internal/x' }), extension({ callbackUrl: 'http://user:pw@router.internal:4004/c' }), extension({ subscriptionId: '' }), extension({ verifier: 7 }), extension({ heartbeatIntervalMs: -1 }), extension({ heartbeatIntervalMs: 1.5 })]) {
      expect([bad, codeOf(gate.admit(bad, false))]).toEqual([bad, 'callback_extension']);
    }
    const outside = gate.admit(extension({ callbackUrl: 'http://router.internal:4005/callback/a' }), false);
    expect(outside).toMatchObject({ reason: 'callback_origin', origin: 'http://router.internal:4005', errors: [{ extensions: { code: 'BAD_REQUEST' } }] });
  });

  it('bounds the open callbacks of one router, gives a slot back once, and refuses while closing', () => {
    const gate = createCallbackGate([ROUTER, 'https://other.internal'], 2);
    const first = gate.admit(extension(), false);
    const second = gate.admit(extension({ subscriptionId: 'b' }), false);
    expect(codeOf(gate.admit(extension({ subscriptionId: 'c' }), false))).toBe('callback_router');
    // Another router has its own bound.
    expect(codeOf(gate.admit(extension({ callbackUrl: 'https://other.internal/callback/a' }), false))).toBe('admitted');
    if (!('release' in first) || !('release' in second)) throw new Error('admitted expected');
    first.release();
    first.release();
    expect(codeOf(gate.admit(extension({ subscriptionId: 'd' }), false))).toBe('admitted');
    expect(codeOf(gate.admit(extension({ subscriptionId: 'e' }), false))).toBe('callback_router');
    expect(codeOf(gate.admit(extension({ callbackUrl: 'https://other.internal/callback/b' }), true))).toBe('callback_router');
  });

  it('honours a heartbeat of at least 1 s (0: none), and reads the preview protocol snake_case names', () => {
    const gate = createCallbackGate([ROUTER], 10);
    expect(gate.admit(extension({ heartbeatIntervalMs: 10 }), false)).toMatchObject({ callback: { heartbeatMs: 1_000 } });
    expect(gate.admit(extension({ heartbeatIntervalMs: 0 }), false)).toMatchObject({ callback: { heartbeatMs: 0 } });
    expect(gate.admit({ callback_url: `${ROUTER}/callback/s`, subscription_id: 's', verifier: 'v', heartbeat_interval_ms: 2_000 }, false)).toMatchObject({ callback: { id: 's', heartbeatMs: 2_000 } });
  });

  it('reads WFS_SUBSCRIPTION_CALLBACK_ALLOW as origins, and stops start-up on one with a path or another scheme', () => {
    expect(loadConfig({}).subscriptionCallbackAllow).toEqual([]);
    expect(loadConfig({ WFS_SUBSCRIPTION_CALLBACK_ALLOW: 'http://router:4004, https://Router.Example' }).subscriptionCallbackAllow).toEqual(['http://router:4004', 'https://router.example']);
    for (const bad of ['http://router:4004/callback', 'ftp://router', 'router:4004', 'http://router:4004/']) {
      expect(() => loadConfig({ WFS_SUBSCRIPTION_CALLBACK_ALLOW: bad })).toThrow(ConfigError);
    }
  });
});
