import {
  createOperationDescriptor,
  fetchQuery,
  getSelector,
  requestSubscription,
  type Disposable,
  type Environment,
} from 'relay-runtime';
import ShiftChangesSubscription, { type ShiftChangesSubscription$data } from '../../examples/relay/src/__generated__/ShiftChangesSubscription.graphql';
import ShiftListPaginationQuery from '../../examples/relay/src/__generated__/ShiftListPaginationQuery.graphql';
import ShiftListFragment from '../../examples/relay/src/__generated__/ShiftList_query.graphql';
import { shiftChangesUpdater } from '../../examples/relay/src/liveUpdates';
import type { EmulatorShift } from '../../tools/emulator';
import { encodeNodeId } from '../../src/graphql/data/node';
import { waitFor } from './waitFor';

/** Moves a shift's end by half an hour (an UPDATED change). */
export function editShiftEnd(shift: EmulatorShift): string {
  shift.end = shift.end.replace(/T(\d\d):(\d\d)/, (_m, hour: string, minutes: string) => `T${hour}:${minutes === '30' ? '00' : '30'}`);
  return shift.end;
}

/**
 * The rota a Relay app keeps current (examples/relay: `ShiftList`'s connection,
 * `ShiftChangesSubscription` with `shiftChangesUpdater`), run with relay-runtime on
 * `environment` against whatever it points at (the subgraph, or a gateway):
 *
 * 1. the rota query loads the whole list (it must fit one page of 100);
 * 2. `requestSubscription` with the updater keyed by `nodeId`;
 * 3. the upstream updates a shift, adds one, removes it; after each, the store is read:
 *    the record under the shift's `nodeId` holds the new `end`, the connection gains the
 *    added shift's edge, then loses it and the record is gone;
 * 4. no request but the first went through `fetch`: nothing was refetched.
 *
 * `subscription` is called just before subscribing (to note the polls so far); what it
 * returns resolves once the subscription reached the subgraph and its baseline poll is
 * done (changes before it are the baseline, not events).
 */
export async function relayKeepsRotaCurrent(options: {
  environment: Environment;
  shifts: EmulatorShift[];
  fetches: () => number;
  subscription: () => Promise<() => Promise<void>>;
}): Promise<void> {
  const { environment, shifts } = options;
  const variables = { first: 100 };
  const operation = createOperationDescriptor(ShiftListPaginationQuery, variables);
  const retained = environment.retain(operation);
  const received: Array<ShiftChangesSubscription$data['shiftChanges']> = [];
  const errors: Error[] = [];
  let subscription: Disposable | undefined;
  const added: EmulatorShift = { ...shifts[0]!, id: `relay-live-added-${Date.now()}` };
  try {
    await fetchQuery(environment, ShiftListPaginationQuery, variables, { fetchPolicy: 'network-only' }).toPromise();
    const fetchesAfterQuery = options.fetches();
    const source = () => environment.getStore().getSource();
    const rota = () => {
      const root = environment.lookup(operation.fragment).data;
      const selector = getSelector(ShiftListFragment, root as never);
      if (!selector || selector.kind !== 'SingularReaderSelector') throw new Error('no ShiftList_query selector');
      const data = environment.lookup(selector).data as { shifts: { edges: ReadonlyArray<{ node: { nodeId: string } }>; pageInfo: { hasNextPage: boolean } } };
      return { nodeIds: data.shifts.edges.map((edge) => edge.node.nodeId), hasNextPage: data.shifts.pageInfo.hasNextPage };
    };
    const before = rota();
    expect(before).toEqual({ nodeIds: shifts.map((shift) => encodeNodeId('Shift', shift.id)), hasNextPage: false });

    const subscribed = await options.subscription();
    subscription = requestSubscription(environment, {
      subscription: ShiftChangesSubscription,
      variables: {},
      updater: shiftChangesUpdater,
      onNext: (response) => void (response && received.push((response as ShiftChangesSubscription$data).shiftChanges)),
      onError: (error) => void errors.push(error),
    });
    await subscribed();

    // UPDATED: the record under the shift's nodeId changed, the rota is the same list.
    const updated = shifts[1]!;
    const end = editShiftEnd(updated);
    const updatedId = encodeNodeId('Shift', updated.id);
    await waitFor(() => received.length >= 1, 'the UPDATED change');
    expect(received[0]).toMatchObject({ kind: 'UPDATED', nodeId: updatedId, shift: { nodeId: updatedId } });
    expect(source().get(updatedId)).toMatchObject({ __typename: 'Shift', id: updated.id, end });
    expect(rota()).toEqual(before);

    // ADDED: appended to the connection, its record in the store.
    shifts.push(added);
    const addedId = encodeNodeId('Shift', added.id);
    await waitFor(() => received.length >= 2, 'the ADDED change');
    expect(received[1]).toMatchObject({ kind: 'ADDED', nodeId: addedId });
    expect(rota().nodeIds).toEqual([...before.nodeIds, addedId]);
    expect(source().get(addedId)).toMatchObject({ __typename: 'Shift', id: added.id, end: added.end });

    // REMOVED: out of the connection and the store.
    shifts.splice(shifts.indexOf(added), 1);
    await waitFor(() => received.length >= 3, 'the REMOVED change');
    expect(received[2]).toEqual({ kind: 'REMOVED', nodeId: addedId, shift: null });
    expect(rota().nodeIds).toEqual(before.nodeIds);
    expect(source().get(addedId)).toBeNull();

    // The change records did not land on the shifts' records (getDataID keys them apart).
    expect(source().get(updatedId)).not.toHaveProperty('kind');
    expect({ errors, refetches: options.fetches() - fetchesAfterQuery }).toEqual({ errors: [], refetches: 0 });
  } finally {
    subscription?.dispose();
    retained.dispose();
    const index = shifts.indexOf(added);
    if (index !== -1) shifts.splice(index, 1);
  }
}
