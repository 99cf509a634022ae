import { ConnectionHandler, type RecordSourceSelectorProxy } from 'relay-runtime';

/** The connection key of `ShiftList`'s `@connection` (ShiftList.tsx). */
export const SHIFT_LIST_CONNECTION = 'ShiftList_shifts';

/**
 * The `updater` of the `shiftChanges` subscription (`ShiftChangesSubscription`), keyed
 * by `nodeId`, the store's data id for every `Node` (environment.ts):
 *
 * - `UPDATED`: nothing to do here; Relay already normalised the payload's shift into
 *   the record `store.get(nodeId)`, which every query and fragment showing it reads.
 * - `ADDED`: the shift's record is in the store (normalised from the payload); it is
 *   appended to the rota's connection once, and only when the connection holds the
 *   whole list (`hasNextPage` false): otherwise the next page brings it in its place.
 * - `REMOVED`: the edge leaves the connection and the record leaves the store.
 */
export function shiftChangesUpdater(store: RecordSourceSelectorProxy): void {
  const change = store.getRootField('shiftChanges');
  if (!change) return;
  const kind = change.getValue('kind');
  const nodeId = change.getValue('nodeId');
  if (typeof nodeId !== 'string') return;
  const connection = ConnectionHandler.getConnection(store.getRoot(), SHIFT_LIST_CONNECTION);
  if (kind === 'REMOVED') {
    if (connection) ConnectionHandler.deleteNode(connection, nodeId);
    store.delete(nodeId);
    return;
  }
  if (kind !== 'ADDED' || !connection) return;
  const shift = store.get(nodeId);
  const edges = connection.getLinkedRecords('edges') ?? [];
  const listed = edges.some((edge) => edge?.getLinkedRecord('node')?.getDataID() === nodeId);
  if (!shift || listed || connection.getLinkedRecord('pageInfo')?.getValue('hasNextPage') !== false) return;
  ConnectionHandler.insertEdgeAfter(connection, ConnectionHandler.createEdge(store, connection, shift, 'ShiftEdge'));
}
