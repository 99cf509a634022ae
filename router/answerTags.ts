/**
 * Which cache tags each of Hive's response-cache answers carried (docs/caching.md, "Hive
 * Gateway's response cache"), so an invalidation drops only the answers that read the
 * list it names: one company editing its shifts empties that company's answers that read
 * its shifts, not every company's.
 *
 * Our subgraph tags every answer a gateway may keep (src/graphql/server/cachePolicy.ts):
 * `extensions.apolloCacheTags` on root fields, `extensions.apolloEntityCacheTags` per
 * `_entities` item. A client request may make several subgraph fetches; the tags of all of
 * them are the answer's. They are heard per request (its GraphQL context, the object the
 * response cache's key builder and the subgraph executions share) and handed to
 * router/responseStore.ts by the answer's id when the response cache stores it.
 *
 * The answer's id is built here too (`key`), the response cache's own recipe (a SHA-256 of
 * the document, the operation name, the variables and the session), so the tags can be
 * filed under it.
 */
import { createHash } from 'node:crypto';
import type { GatewayPlugin } from '@graphql-hive/gateway';

/** How long tags heard for an answer wait for it to be stored: past the gateway's longest subgraph timeout. */
const HEARD_FOR_MS = 60_000;
/** Answers whose tags are held at most while they wait (past it the oldest go; an answer stored after that counts as untagged, which every invalidation drops). */
const MAX_WAITING = 10_000;

/** JSON with object keys in order, so `{a, b}` and `{b, a}` are one key. */
function stable(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined);
  return `{${entries
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, item]) => `${JSON.stringify(name)}:${stable(item)}`)
    .join(',')}}`;
}

/** The tags in one subgraph result's extensions (both of Apollo's names), strings only. */
export function tagsIn(extensions: unknown): string[] {
  if (typeof extensions !== 'object' || extensions === null) return [];
  const { apolloCacheTags, apolloEntityCacheTags } = extensions as { apolloCacheTags?: unknown; apolloEntityCacheTags?: unknown };
  const lists = [apolloCacheTags, ...(Array.isArray(apolloEntityCacheTags) ? apolloEntityCacheTags : [])];
  return lists.flatMap((list) => (Array.isArray(list) ? list.filter((tag): tag is string => typeof tag === 'string') : []));
}

export interface KeyParameters {
  documentString: string;
  variableValues?: unknown;
  operationName?: string | null | undefined;
  sessionId?: string | null | undefined;
  context?: unknown;
}

export class AnswerTags {
  /** Per request (its GraphQL context), the id of its answer. */
  private readonly ids = new WeakMap<object, string>();
  /** Per answer id, the tags heard for it, oldest first. */
  private readonly waiting = new Map<string, { tags: Set<string>; at: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The response cache's `buildResponseCacheKey`: the answer's id, remembered for the request. */
  readonly key = (params: KeyParameters): string => {
    const id = createHash('sha256')
      .update([params.documentString, params.operationName ?? '', stable(params.variableValues ?? {}), params.sessionId ?? ''].join('|'))
      .digest('hex');
    if (typeof params.context === 'object' && params.context !== null) this.ids.set(params.context, id);
    return id;
  };

  /** Tags a subgraph answered for the request of `context`. */
  heard(context: object | undefined, tags: readonly string[]): void {
    const id = context && this.ids.get(context);
    if (id === undefined || tags.length === 0) return;
    const now = this.now();
    const entry = this.waiting.get(id) ?? { tags: new Set<string>(), at: now };
    for (const tag of tags) entry.tags.add(tag);
    entry.at = now;
    // Newest last, so the sweep below stops at the first one young enough.
    this.waiting.delete(id);
    this.waiting.set(id, entry);
    for (const [old, { at }] of this.waiting) {
      if (this.waiting.size <= MAX_WAITING && now - at < HEARD_FOR_MS) break;
      this.waiting.delete(old);
    }
  }

  /**
   * The tags heard for the answer `id`, or undefined if none were. Kept until they age out
   * rather than taken: two identical requests at once store the same answer twice, and
   * the second must carry the first's tags too.
   */
  readonly tagsOf = (id: string): readonly string[] | undefined => {
    const entry = this.waiting.get(id);
    return entry && [...entry.tags];
  };
}

/** Hears the tags of every subgraph answer (tags from other subgraphs, which send none, are simply none). */
export function useAnswerTags(answers: AnswerTags): GatewayPlugin {
  return {
    onSubgraphExecute({ executionRequest }) {
      const context = executionRequest.context as object | undefined;
      if (!context) return;
      return ({ result }) => {
        if (Symbol.asyncIterator in result) return;
        answers.heard(context, tagsIn(result.extensions));
      };
    },
  };
}
