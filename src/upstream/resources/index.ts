import { locations } from './location';
import type { AnyResource } from './resource';
import { shifts } from './shift';

/**
 * The registry: every upstream list the product serves. The client's path and scope
 * check, the per-request loaders and connections, the generic resolvers, the metrics'
 * list labels and the emulator's endpoints are built from it; what it cannot generate
 * (schema types, relation resolvers, seed data) is listed in docs/adding-a-resource.md, "Adding a resource".
 */
export const RESOURCES = [locations, shifts] as const;

/** The name of a list the product serves. */
export type ListName = (typeof RESOURCES)[number]['name'];

/** A set of resources (the registry's) by name, by GraphQL type name and by path; two resources may share none of them. */
export class ResourceSet {
  private readonly byName = new Map<string, AnyResource>();
  private readonly byTypename = new Map<string, AnyResource>();
  private readonly byPath = new Map<string, AnyResource>();

  constructor(resources: Iterable<AnyResource>) {
    for (const resource of resources) {
      if (this.byName.has(resource.name)) throw new Error(`two resources are named "${resource.name}"`);
      if (this.byTypename.has(resource.typename)) throw new Error(`two resources map to the GraphQL type "${resource.typename}"`);
      this.byName.set(resource.name, resource);
      if (this.byPath.has(resource.path)) throw new Error(`two resources are served at "${resource.path}"`);
      this.byTypename.set(resource.typename, resource);
      this.byPath.set(resource.path, resource);
    }
  }

  all(): AnyResource[] {
    return [...this.byName.values()];
  }

  named(name: string): AnyResource | undefined {
    return this.byName.get(name);
  }

  typed(typename: string): AnyResource | undefined {
    return this.byTypename.get(typename);
  }

  /** The resource whose list is served at `path`. */
  atPath(path: string): AnyResource | undefined {
    return this.byPath.get(path);
  }
}

export { locations, type LocationRecord } from './location';
export { shifts, type ShiftFilter, type ShiftRecord } from './shift';
export * from './resource';
export { instantOf, isRfc3339DateTime, MAX_DATE_TIME_LENGTH, memoisedDateTimes, normalizeDateTime, optionalString, recordWithId, referenceId } from './fields';
