import { recordWithId } from './fields';
import { defineResource, isMalformed, type ListFilter, type MalformedRecord } from './resource';

export interface LocationRecord {
  readonly id: string;
  readonly name: string;
}

function toLocationRecord(item: unknown): LocationRecord | MalformedRecord {
  const record = recordWithId(item, 'location');
  if (isMalformed(record)) return record;
  const { raw, id } = record;
  if (typeof raw.name !== 'string') return { malformed: true, reason: `location ${id} without a name` };
  return { id, name: raw.name };
}

/**
 * Locations (docs/upstream.md, "List endpoints"). The documentation names no scope for them, so they
 * are never refused for a scope we cannot know (docs/upstream.md, "Scopes per endpoint").
 */
export const locations = defineResource<LocationRecord, ListFilter, 'locations'>({
  name: 'locations',
  typename: 'Location',
  path: '/api/public/v1/locations/',
  scope: null,
  map: toLocationRecord,
});
