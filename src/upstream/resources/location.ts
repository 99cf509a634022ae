import { asObject, idOf } from './fields';
import { defineResource, type MalformedRecord } from './resource';

export interface LocationRecord {
  readonly id: string;
  readonly name: string;
}

function toLocationRecord(item: unknown): LocationRecord | MalformedRecord {
  const raw = asObject(item);
  if (!raw) return { malformed: true, reason: 'location item is not an object' };
  if (raw.object !== undefined && raw.object !== 'location') {
    return { malformed: true, reason: `expected object "location", got ${JSON.stringify(raw.object)}` };
  }
  const id = idOf(raw.id);
  if (!id) return { malformed: true, reason: 'location without an id' };
  if (typeof raw.name !== 'string') return { malformed: true, reason: `location ${id} without a name` };
  return { id, name: raw.name };
}

/**
 * Locations (upstream-api.md 4.2). The documentation names no scope for them, so they
 * are never refused for a scope we cannot know (CONTRACT.md section 4).
 */
export const locations = defineResource<LocationRecord>({
  name: 'locations',
  typename: 'Location',
  path: '/api/public/v1/locations/',
  scope: null,
  map: toLocationRecord,
});
