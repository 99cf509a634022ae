import type { FaultContext } from './foreignUpstream';

/**
 * Upstream calls held open by a foreign upstream's `fault` hook until a test releases
 * them: the tool of the coalescing and shared-request suites, which need calls in
 * flight for as long as they choose. `holding` off lets calls through at once.
 */
export class HeldCalls {
  /** The calls held now, per upstream tenant name. */
  readonly held = new Map<string, FaultContext[]>();
  holding = true;

  /** The `fault` hook for tenant `name`: holds its calls while `holding`. */
  hold(name: string): (ctx: FaultContext) => boolean {
    return (ctx) => {
      if (!this.holding) return false;
      this.held.set(name, [...(this.held.get(name) ?? []), ctx]);
      return true;
    };
  }

  /** Answers every call held for `name` with its page. */
  release(name: string): void {
    for (const ctx of this.held.get(name) ?? []) {
      ctx.res.writeHead(200, { 'content-type': 'application/json' });
      ctx.res.end(JSON.stringify(ctx.envelope()));
    }
    this.held.set(name, []);
  }

  /** How many calls are held for `name`. */
  count(name: string): number {
    return this.held.get(name)?.length ?? 0;
  }
}
