import { Suspense, useMemo } from 'react';
import { graphql, RelayEnvironmentProvider, useLazyLoadQuery } from 'react-relay';
import type { AppQuery as AppQueryType } from './__generated__/AppQuery.graphql';
import { createTenantEnvironment } from './environment';
import { LocationList } from './LocationList';
import { ShiftList } from './ShiftList';

export const AppQuery = graphql`
  query AppQuery {
    ...LocationList_query
    ...ShiftList_query @arguments(first: 50)
  }
`;

function Rota() {
  const query = useLazyLoadQuery<AppQueryType>(AppQuery, {});
  return (
    <main>
      <LocationList query={query} />
      <ShiftList query={query} />
    </main>
  );
}

/** A new environment, and a remount (the `key`), whenever the company changes. */
export function App(props: { url: string; tenantId: string }) {
  const environment = useMemo(
    () => createTenantEnvironment({ url: props.url, headers: { 'x-tenant-id': props.tenantId } }),
    [props.url, props.tenantId],
  );
  return (
    <RelayEnvironmentProvider key={props.tenantId} environment={environment}>
      <Suspense fallback={<p>Loading…</p>}>
        <Rota />
      </Suspense>
    </RelayEnvironmentProvider>
  );
}
