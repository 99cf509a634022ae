/**
 * The caches Apollo Server keeps of what clients send, bounded by the memory they
 * really take: parsed documents (`documentStore`) and automatic persisted queries.
 *
 * Apollo Server's defaults bound both at "30 MiB", measured as the JSON text of each
 * entry. For a parsed document that text leaves out what the document keeps alive:
 * graphql-js keeps every token and the whole source string (for error locations), so
 * a valid `{ __typename }` followed by a 900 KB comment counted as about 200 bytes and
 * kept 900 KB. Measured with the server's own limits: 250 such requests, each with
 * another comment, grew the heap by 216 MiB, and the deployed `--max-old-space-size=256`
 * ends the process a little later. Here each document counts what it holds.
 */
import { InMemoryLRUCache } from '@apollo/utils.keyvaluecache';
import type { DocumentNode } from 'graphql';
import { costCacheBytes } from '../admission/cost';

/**
 * The most memory the parsed documents of distinct operations may hold: a router's
 * operations are a few hundred at most; 16 MiB is what the memory account
 * (memory/account.ts) leaves them beside everything clients can fill.
 */
export const DOCUMENT_STORE_BYTES = 16 * 2 ** 20;

/** The most memory the query texts of automatic persisted queries may hold. */
export const PERSISTED_QUERY_BYTES = 8 * 2 ** 20;

/**
 * An upper bound of the heap a parsed document holds, measured with graphql-js 16 on
 * Node 24 (per document, 200 copies each): 190-530 bytes per token (530 for a
 * selection of one repeated field, the densest there is; 190-270 for our shipped
 * operations), plus its source text, kept whole, at up to 2 bytes a character.
 */
const BYTES_PER_TOKEN = 600;
const BYTES_PER_SOURCE_CHARACTER = 2;

/**
 * The heap a parsed document holds, at most (see above): its tokens and its source,
 * and what the cost limit may keep for its operations while it lives (../admission/cost.ts).
 */
export function documentBytes(document: DocumentNode): number {
  return parsedBytes(document) + costCacheBytes(document);
}

function parsedBytes(document: DocumentNode): number {
  const loc = document.loc;
  // Parsed without locations (never by Apollo Server): nothing but the tree, so its JSON is close.
  if (!loc) return 3 * InMemoryLRUCache.sizeCalculation(document);
  let tokens = 0;
  for (let token: typeof loc.startToken | null = loc.startToken; token !== null; token = token.next) tokens += 1;
  return tokens * BYTES_PER_TOKEN + loc.source.body.length * BYTES_PER_SOURCE_CHARACTER;
}

/** Apollo Server's `documentStore`: parsed and validated documents, by query hash, within DOCUMENT_STORE_BYTES. */
export function createDocumentStore(maxBytes = DOCUMENT_STORE_BYTES): InMemoryLRUCache<DocumentNode> {
  return new InMemoryLRUCache<DocumentNode>({ maxSize: maxBytes, sizeCalculation: documentBytes });
}

/** Apollo Server's `persistedQueries.cache`: query texts by hash, within PERSISTED_QUERY_BYTES (2 bytes a character at most). */
export function createPersistedQueryCache(maxBytes = PERSISTED_QUERY_BYTES): InMemoryLRUCache<string> {
  return new InMemoryLRUCache<string>({ maxSize: maxBytes, sizeCalculation: (text) => text.length * BYTES_PER_SOURCE_CHARACTER });
}
