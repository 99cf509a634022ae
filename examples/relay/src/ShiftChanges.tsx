import { useMemo } from 'react';
import { graphql, useSubscription } from 'react-relay';
import type { GraphQLSubscriptionConfig } from 'relay-runtime';
import type { ShiftChangesSubscription } from './__generated__/ShiftChangesSubscription.graphql';
import { shiftChangesUpdater } from './liveUpdates';

/**
 * The rota's live changes (docs/live.md). The shift comes with the fields `ShiftCard`
 * reads, so an `UPDATED` shift is normalised into the store under its `nodeId` and
 * every card showing it re-renders, with no refetch; `shiftChangesUpdater` adds an
 * `ADDED` shift to the rota's connection and takes a `REMOVED` one out.
 */
export const ShiftChangesSubscriptionNode = graphql`
  subscription ShiftChangesSubscription {
    shiftChanges {
      kind
      nodeId
      shift {
        nodeId
        ...ShiftCard_shift
      }
    }
  }
`;

/**
 * Keeps the rota of `ShiftList` current while mounted (the environment needs a `live`
 * client). `onError` hears a refusal, after which the subscription has ended: a `next`
 * with errors (`FORBIDDEN` without the scope, ...) or the socket closed (`4403`: the
 * identity was refused; create the graphql-ws client with a `shouldRetry` that does not
 * retry it, docs/frontend.md "Live updates"). Show it: the rota is no longer live.
 */
export function useShiftChanges(onError: (error: Error) => void) {
  const config = useMemo<GraphQLSubscriptionConfig<ShiftChangesSubscription>>(
    () => ({ subscription: ShiftChangesSubscriptionNode, variables: {}, updater: shiftChangesUpdater, onError }),
    [onError],
  );
  useSubscription(config);
}
