import { isInterfaceType, isObjectType, type GraphQLResolveInfo } from 'graphql';
import type { GraphQLContext } from './context';
import { badUserInput } from '../errors';

/**
 * Relay's global object identification (docs/frontend.md, "Global object identification (`Node`)": `interface Node { nodeId: ID! }`
 * and `Query.node(nodeId: ID!)`, Hive Gateway's names).
 *
 * Why a second id beside `id`: `id` is the upstream's id and the federation key, and
 * upstreams number each list on its own (location `17`, shift `17`), while Relay's
 * store keys every record by its id field alone, across types. A `nodeId` is the
 * base64url (no padding) of `Typename:id`, the shape Hive Gateway and graphql-relay
 * use, so it is unique across types whatever the upstream ids look like.
 *
 * Why no tenant in it: the request's identity already names the company, and `node`
 * looks the id up through that company's per-request loaders only. A node id taken
 * from another company finds nothing there (or that company's own record, never the
 * other's), and the lookup costs what an entity reference costs: one DataLoader load.
 */

/** The per-request lookup of one type by upstream id (the entity DataLoader). */
export interface NodeLoader {
  load(id: string): Promise<{ readonly id: string } | null>;
}

/** A decoded node id. */
export interface NodeReference {
  readonly typename: string;
  readonly id: string;
}

/** Longer ids are refused before decoding; ours are far shorter. */
export const MAX_NODE_ID_LENGTH = 1024;

const TYPENAME = /^[_A-Za-z][_0-9A-Za-z]*$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export function encodeNodeId(typename: string, id: string): string {
  return Buffer.from(`${typename}:${id}`, 'utf8').toString('base64url');
}

/**
 * `BAD_USER_INPUT` when `nodeId` is not the canonical encoding of `Typename:id`. Only
 * the canonical form is accepted (re-encoding must give the same string), so one
 * object has exactly one node id and a client cannot make aliases of it.
 */
export function decodeNodeId(nodeId: string): NodeReference {
  const invalid = () => badUserInput('"nodeId" is not a node id from this API');
  if (nodeId.length === 0 || nodeId.length > MAX_NODE_ID_LENGTH || !BASE64URL.test(nodeId)) throw invalid();
  const text = Buffer.from(nodeId, 'base64url').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 1 || colon === text.length - 1) throw invalid();
  const typename = text.slice(0, colon);
  const id = text.slice(colon + 1);
  if (!TYPENAME.test(typename) || encodeNodeId(typename, id) !== nodeId) throw invalid();
  return { typename, id };
}

/**
 * The object `nodeId` names, tagged with its `__typename` for the `Node` interface,
 * or `null` when `loaderFor` serves no such type or the tenant has no such record.
 */
export async function resolveNode<T extends { readonly id: string }>(
  nodeId: string,
  loaderFor: (typename: string) => NodeLoader | undefined,
): Promise<(T & { readonly __typename: string }) | null> {
  const { typename, id } = decodeNodeId(nodeId);
  const loader = loaderFor(typename);
  if (!loader) return null;
  const record = await loader.load(id);
  // A copy: the loader's record is shared with the rest of the request.
  return record ? ({ ...(record as T), __typename: typename } as T & { readonly __typename: string }) : null;
}

/**
 * `Query.node`: any type of the schema that implements `Node` and is served by a
 * resource, looked up through the request's own tenant loaders (the same batched
 * lookup an entity reference uses), so a node id never reaches another tenant.
 */
export const nodeResolvers = {
  Query: {
    node: async (_parent: unknown, { nodeId }: { nodeId: string }, context: GraphQLContext, info: GraphQLResolveInfo) => {
      const nodeInterface = info.schema.getType('Node');
      // Decoded before the tenant is worked out: a malformed id costs nothing.
      decodeNodeId(nodeId);
      const tenant = await context.tenant();
      return resolveNode(nodeId, (typename) => {
        const type = info.schema.getType(typename);
        const isNode = isInterfaceType(nodeInterface) && isObjectType(type) && info.schema.isSubType(nodeInterface, type);
        return isNode ? tenant.loader(typename) : undefined;
      });
    },
  },
};

/** The `nodeId` field resolver of one type. */
export function nodeIdOf(typename: string): (record: { readonly id: string }) => string {
  return (record) => encodeNodeId(typename, record.id);
}
