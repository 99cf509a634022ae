/**
 * The per-request entity DataLoaders: one per resource and request, created on first
 * use. A batch of ids is one lookup of the request's TenantReader (the tenant's grant
 * checked, then its entity index, which reads only as many list pages as the missing
 * ids need).
 */
import DataLoader from 'dataloader';
import type { AnyResource, Resource, ResourceSet, UpstreamRecord } from '../../upstream/resources';
import type { TenantReader } from '../../upstream/reading/tenantReader';

export interface EntityLoadersOptions {
  readonly resources: ResourceSet;
  /** The request's reads of its tenant. */
  readonly reader: TenantReader;
}

/** The loader of a resource (by resource, list name or GraphQL type name), for one request. */
export type EntityLoaders = <R extends UpstreamRecord>(resource: Resource<R> | string) => DataLoader<string, R | null>;

/** The request's loaders, and how to forget them and what they cached once its response is out. */
export interface RequestLoaders {
  readonly loader: EntityLoaders;
  release(): void;
}

export function createEntityLoaders({ resources, reader }: EntityLoadersOptions): RequestLoaders {
  const resourceOf = (resource: AnyResource | string): AnyResource => {
    const found = typeof resource === 'string' ? (resources.named(resource) ?? resources.typed(resource)) : resource;
    if (!found) throw new Error(`no resource "${String(resource)}" is registered`);
    return found;
  };

  const loaders = new Map<string, DataLoader<string, unknown>>();
  const loaderOf = <R extends UpstreamRecord>(resource: Resource<R>): DataLoader<string, R | null> => {
    let loader = loaders.get(resource.name);
    if (!loader) {
      loader = new DataLoader<string, R | null>(
        async (ids) => {
          try {
            return await reader.lookup(resource, ids);
          } catch (error) {
            return ids.map(() => error as Error);
          }
        },
        { maxBatchSize: 1000 },
      );
      loaders.set(resource.name, loader);
    }
    return loader as DataLoader<string, R | null>;
  };

  return {
    loader: <R extends UpstreamRecord>(resource: Resource<R> | string) => loaderOf(resourceOf(resource)) as DataLoader<string, R | null>,
    release() {
      for (const loader of loaders.values()) loader.clearAll();
      loaders.clear();
    },
  };
}
