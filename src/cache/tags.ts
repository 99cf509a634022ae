/**
 * The tags a gateway's response cache files our answers under (Apollo Router's
 * `apolloCacheTags` and `apolloEntityCacheTags`, docs/caching.md), and the ones the
 * invalidation sender names when a poll sees a change: one per company and list, one
 * per record. A tag names the company without its id in clear: an HMAC of the tenant
 * id under a key derived from the cursor secret, which every replica of a fleet shares
 * (WFS_CURSOR_SECRET), so all of them tag alike; truncated to 64 bits, plenty to keep
 * companies apart in one gateway's cache.
 */
import { createHmac } from 'node:crypto';

export class CacheTags {
  private readonly key: Buffer;
  /** Per tenant id, its tag: one HMAC per company, not one per answer. Bounded by the companies served (the tenants file, or the verified identities, which the token cache bounds too). */
  private readonly companies = new Map<string, string>();

  constructor(cursorSecret: Buffer) {
    this.key = createHmac('sha256', cursorSecret).update('wfs-subgraph cache tags v1').digest();
  }

  /** The company's tag: `wfs-` and 16 hex digits. */
  company(tenantId: string): string {
    let tag = this.companies.get(tenantId);
    if (tag === undefined) {
      tag = `wfs-${createHmac('sha256', this.key).update(tenantId).digest('hex').slice(0, 16)}`;
      if (this.companies.size >= MAX_COMPANIES_REMEMBERED) this.companies.clear();
      this.companies.set(tenantId, tag);
    }
    return tag;
  }

  /** Everything of one company's list: root fields that read it, and its entities. */
  list(tenantId: string, list: string): string {
    return `${this.company(tenantId)}:${list}`;
  }

  /** One record of one company's list. */
  record(tenantId: string, list: string, id: string): string {
    return `${this.list(tenantId, list)}:${id}`;
  }
}

/** Company tags remembered before the memo starts over (a few hundred KB at most). */
const MAX_COMPANIES_REMEMBERED = 10_000;
