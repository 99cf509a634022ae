import type { EmulatorTenant } from '../../tools/emulator';

/**
 * The tenant with its records renumbered as an upstream that counts each list on its
 * own would: locations `firstLocationId`, +1, ...; shifts `firstShiftId`, +1, ...
 * With both starting at 1, location `1` and shift `1` exist side by side: the case in
 * which a client cache keyed by `id` alone would merge two different records.
 */
export function withNumericIds(tenant: EmulatorTenant, firstLocationId = 1, firstShiftId = 1): EmulatorTenant {
  const locationIds = new Map(tenant.locations.map((location, index) => [location.id, String(firstLocationId + index)]));
  return {
    ...tenant,
    locations: tenant.locations.map((location) => ({ ...location, id: locationIds.get(location.id)! })),
    shifts: tenant.shifts.map((shift, index) => ({
      ...shift,
      id: String(firstShiftId + index),
      location: locationIds.get(shift.location) ?? shift.location,
    })),
  };
}
