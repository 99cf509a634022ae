/**
 * The per-request entity DataLoaders: one per resource and request, created on first
 * use. A batch of ids is checked against the tenant's grant, then looked up in the
 * tenant's entity index, which reads (through the request's page cache) only as many
 * list pages as the missing ids need.
 */
import DataLoader from 'dataloader';
import type { AnyResource, Resource, ResourceSet, UpstreamRecord } from '../../upstream/resources';
import type { EntityIndex } from '../../upstream/reading/entityIndex';
import type { RequestPages } from '../../upstream/reading/pageCache';

export interface EntityLoadersOptions {
  readonly resources: ResourceSet;
  readonly pages: RequestPages;
  /** The tenant's entity index of a list, for this request. */
  readonly indexOf: <R extends UpstreamRecord>(resource: Resource<R, any>) => EntityIndex<R>;
  /** Resolves once the tenant may read the resource (undefined: already known). */
  readonly authorize: (resource: AnyResource) => Promise<void> | undefined;
}

/** The loader of a resource (by resource, list name or GraphQL type name), for one request. */
export type EntityLoaders = <R extends UpstreamRecord>(resource: Resource<R, any> | string) => DataLoader<string, R | null>;

/** The request's loaders, and how to forget them and what they cached once its response is out. */
export interface RequestLoaders {
  readonly loader: EntityLoaders;
  release(): void;
}

export function createEntityLoaders({ resources, pages, indexOf, authorize }: EntityLoadersOptions): RequestLoaders {
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
            await authorize(resource);
            return await indexOf(resource).lookup(ids, (ref, pageSize) => pages.read(resource, ref, pageSize, undefined, true));
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
    loader: <R extends UpstreamRecord>(resource: Resource<R, any> | string) => loaderOf(resourceOf(resource)) as DataLoader<string, R | null>,
    release() {
      for (const loader of loaders.values()) loader.clearAll();
      loaders.clear();
    },
  };
}
